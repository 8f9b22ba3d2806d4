package evmchain

import (
	"context"
	"strings"
	"testing"

	"conduit/internal/x402"
)

func TestLocalFacilitatorOnTheLocalChain(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, 6_000_000)
	fac := &x402.LocalFacilitator{EVMNetwork: "eip155:84532", EVM: f.chain}

	p, _ := f.pay(t)
	if v, err := fac.Verify(ctx, p, f.req); err != nil || !v.IsValid || v.Payer != f.payer.Hex() {
		t.Fatalf("verify: %+v %v", v, err)
	}
	s, err := fac.Settle(ctx, p, f.req)
	if err != nil || !s.Success || !strings.HasPrefix(s.Transaction, "0x") || len(s.Transaction) != 66 || s.Payer != f.payer.Hex() {
		t.Fatalf("settle: %+v %v", s, err)
	}
	if b, _ := f.chain.BalanceOf(ctx, f.payTo); b.Int64() != 5_000_000 {
		t.Fatalf("payee %s", b)
	}
	// The same payment again: spent.
	s, err = fac.Settle(ctx, p, f.req)
	if err != nil || s.Success || s.ErrorReason != x402.ReasonNonceUsed || s.ErrorMessage != "invalid_payload: authorization nonce already submitted" {
		t.Fatalf("replay: %+v %v", s, err)
	}
	// 1.00 left cannot cover 5.00.
	p, _ = f.pay(t)
	v, err := fac.Verify(ctx, p, f.req)
	if err != nil || v.IsValid || v.InvalidReason != x402.ReasonInsufficientFunds || !strings.HasPrefix(v.InvalidMessage, "invalid_payload: execution reverted") {
		t.Fatalf("underfunded: %+v %v", v, err)
	}
	// A network it does not settle.
	other := f.req
	other.Network = "eip155:1"
	p, _ = f.pay(t)
	if v, _ := fac.Verify(ctx, p, other); v.IsValid || v.InvalidReason != "unsupported_network" {
		t.Fatalf("%+v", v)
	}
}
