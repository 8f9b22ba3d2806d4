package evmchain

import (
	"context"
	"crypto/rand"
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

func TestLocalFacilitatorOnTheLocalChain(t *testing.T) {
	ctx := context.Background()
	facKey, _ := crypto.GenerateKey()
	chain, err := New(84532, facKey)
	if err != nil {
		t.Fatal(err)
	}
	defer chain.Close()
	f := &x402.LocalFacilitator{EVMNetwork: "eip155:84532", EVM: chain}
	payerKey, _ := crypto.GenerateKey()
	payer := crypto.PubkeyToAddress(payerKey.PublicKey)
	payTo := common.HexToAddress("0x00000000000000000000000000000000000000aa")
	if _, err := chain.Mint(ctx, payer, big.NewInt(6_000_000)); err != nil {
		t.Fatal(err)
	}
	req := x402.Challenge(x402.ResourceInfo{URL: "u"}, 5*money.USD, []x402.Offer{{
		Network: "eip155:84532", Asset: chain.Token.Hex(), PayTo: payTo.Hex(), Extra: map[string]any{"name": "USDC", "version": "2"},
	}}, "").Accepts[0]
	pay := func() x402.PaymentPayload {
		var nonce [32]byte
		_, _ = rand.Read(nonce[:])
		p, err := x402.SignEVM(req, hexutil.Encode(crypto.FromECDSA(payerKey)), nonce, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		return p
	}

	p := pay()
	if v, err := f.Verify(ctx, p, req); err != nil || !v.IsValid || v.Payer != payer.Hex() {
		t.Fatalf("verify: %+v %v", v, err)
	}
	s, err := f.Settle(ctx, p, req)
	if err != nil || !s.Success || !strings.HasPrefix(s.Transaction, "0x") || len(s.Transaction) != 66 || s.Payer != payer.Hex() {
		t.Fatalf("settle: %+v %v", s, err)
	}
	if b, _ := chain.BalanceOf(ctx, payTo); b.Int64() != 5_000_000 {
		t.Fatalf("payee %s", b)
	}
	// The same payment again: spent.
	s, err = f.Settle(ctx, p, req)
	if err != nil || s.Success || s.ErrorReason != x402.ReasonNonceUsed || s.ErrorMessage != "invalid_payload: authorization nonce already submitted" {
		t.Fatalf("replay: %+v %v", s, err)
	}
	// 1.00 left cannot cover 5.00.
	v, err := f.Verify(ctx, pay(), req)
	if err != nil || v.IsValid || v.InvalidReason != x402.ReasonInsufficientFunds || !strings.HasPrefix(v.InvalidMessage, "invalid_payload: execution reverted") {
		t.Fatalf("underfunded: %+v %v", v, err)
	}
	// A network it does not settle.
	other := req
	other.Network = "eip155:1"
	if v, _ := f.Verify(ctx, pay(), other); v.IsValid || v.InvalidReason != "unsupported_network" {
		t.Fatalf("%+v", v)
	}
}
