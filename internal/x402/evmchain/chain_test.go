package evmchain

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"math/big"
	"strings"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/crypto"

	"conduit/internal/money"
	"conduit/internal/x402"
)

// A payment signed the way the official client signs it settles on the
// chain; the same authorization again, or one the payer cannot cover,
// reverts with the token's reason.
func TestTransferWithAuthorizationOnTheLocalChain(t *testing.T) {
	ctx := context.Background()
	facKey, _ := crypto.GenerateKey()
	chain, err := New(84532, facKey)
	if err != nil {
		t.Fatal(err)
	}
	defer chain.Close()
	payerKey, _ := crypto.GenerateKey()
	payer := crypto.PubkeyToAddress(payerKey.PublicKey)
	payTo := common.HexToAddress("0x209693Bc6afc0C5328bA36FaF03C514EF312287C")
	if _, err := chain.Mint(ctx, payer, big.NewInt(7_000_000)); err != nil {
		t.Fatal(err)
	}

	req := x402.Challenge(x402.ResourceInfo{URL: "u"}, 5*money.USD, []x402.Offer{{
		Network: "eip155:84532", Asset: chain.Token.Hex(), PayTo: payTo.Hex(), Extra: map[string]any{"name": "USDC", "version": "2"},
	}}, "").Accepts[0]
	var nonce [32]byte
	_, _ = rand.Read(nonce[:])
	p, err := x402.SignEVM(req, hexutil.Encode(crypto.FromECDSA(payerKey)), nonce, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	ep, from, err := x402.VerifyEVM(p, req, time.Now())
	if err != nil || from != payer {
		t.Fatalf("verify: %v", err)
	}
	settle := func() (common.Hash, error) {
		a := ep.Authorization
		va, _ := new(big.Int).SetString(a.ValidAfter, 10)
		vb, _ := new(big.Int).SetString(a.ValidBefore, 10)
		sig, _ := hexutil.Decode(ep.Signature)
		return chain.TransferWithAuthorization(ctx, from, common.HexToAddress(a.To), big.NewInt(5_000_000), va, vb, nonce, sig)
	}
	tx, err := settle()
	if err != nil || tx == (common.Hash{}) {
		t.Fatalf("settle: %v", err)
	}
	if b, _ := chain.BalanceOf(ctx, payTo); b.Int64() != 5_000_000 {
		t.Fatalf("payee balance %s", b)
	}
	if b, _ := chain.BalanceOf(ctx, payer); b.Int64() != 2_000_000 {
		t.Fatalf("payer balance %s", b)
	}
	if used, _ := chain.AuthorizationUsed(ctx, payer, nonce); !used {
		t.Fatal("nonce not marked used")
	}
	if _, err := settle(); err == nil || !strings.Contains(err.Error(), "authorization nonce already submitted") {
		t.Fatalf("replay: %v", err)
	}

	// 2.00 left cannot cover another 5.00.
	_, _ = rand.Read(nonce[:])
	p, _ = x402.SignEVM(req, hexutil.Encode(crypto.FromECDSA(payerKey)), nonce, time.Now())
	_ = json.Unmarshal(p.Payload, &ep)
	if _, err := settle(); err == nil || !strings.Contains(err.Error(), "execution reverted") || !strings.Contains(err.Error(), "transfer amount exceeds balance") {
		t.Fatalf("underfunded: %v", err)
	}
}
