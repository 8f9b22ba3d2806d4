package evmchain

import (
	"context"
	"crypto/ecdsa"
	"crypto/rand"
	"math/big"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/crypto"

	"conduit/internal/money"
	"conduit/internal/x402"
)

// fixture is a fresh chain, a payer holding tokens, and the requirements of
// a 5.00 USD payment to payTo.
type fixture struct {
	chain    *Chain
	payerKey *ecdsa.PrivateKey
	payer    common.Address
	payTo    common.Address
	req      x402.PaymentRequirements
}

func newFixture(t *testing.T, tokens int64) fixture {
	t.Helper()
	facKey, _ := crypto.GenerateKey()
	chain, err := New(84532, facKey)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { chain.Close() })
	payerKey, _ := crypto.GenerateKey()
	f := fixture{chain: chain, payerKey: payerKey, payer: crypto.PubkeyToAddress(payerKey.PublicKey), payTo: common.HexToAddress("0x209693Bc6afc0C5328bA36FaF03C514EF312287C")}
	if _, err := chain.Mint(context.Background(), f.payer, big.NewInt(tokens)); err != nil {
		t.Fatal(err)
	}
	f.req = x402.Challenge(x402.ResourceInfo{URL: "u"}, 5*money.USD, []x402.Offer{{
		Network: "eip155:84532", Asset: chain.Token.Hex(), PayTo: f.payTo.Hex(), Extra: map[string]any{"name": "USDC", "version": "2"},
	}}, "").Accepts[0]
	return f
}

// pay signs a fresh authorization for f.req and returns it with its nonce.
func (f fixture) pay(t *testing.T) (x402.PaymentPayload, [32]byte) {
	t.Helper()
	var nonce [32]byte
	_, _ = rand.Read(nonce[:])
	p, err := x402.SignEVM(f.req, hexutil.Encode(crypto.FromECDSA(f.payerKey)), nonce, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	return p, nonce
}
