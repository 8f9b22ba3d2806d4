package store_test

import (
	"context"
	"errors"
	"testing"

	"conduit/internal/store"
)

func TestSVMLedger(t *testing.T) {
	ctx := context.Background()
	mint := store.NewID("mint")
	if err := st.SVMMint(ctx, mint, "alice", 7); err != nil {
		t.Fatal(err)
	}
	if err := st.SVMTransfer(ctx, "sig1"+mint, mint, "alice", "bob", 5, []byte("tx1")); err != nil {
		t.Fatal(err)
	}
	if err := st.SVMTransfer(ctx, "sig1"+mint, mint, "alice", "bob", 1, nil); !errors.Is(err, store.ErrSVMDuplicate) {
		t.Fatalf("duplicate: %v", err)
	}
	if err := st.SVMTransfer(ctx, "sig2"+mint, mint, "alice", "bob", 3, nil); !errors.Is(err, store.ErrSVMInsufficientFunds) {
		t.Fatalf("overdraw: %v", err)
	}
	a, _ := st.SVMBalance(ctx, mint, "alice")
	b, _ := st.SVMBalance(ctx, mint, "bob")
	if a != 2 || b != 5 {
		t.Fatalf("alice %d bob %d", a, b)
	}
	// The refused overdraw left no transfer behind: its signature is free.
	if err := st.SVMTransfer(ctx, "sig2"+mint, mint, "alice", "bob", 2, nil); err != nil {
		t.Fatal(err)
	}
	// The RPC's reads: accounts, holders, supply, the kept transaction.
	if _, ok, _ := st.SVMAccount(ctx, mint, "carol"); ok {
		t.Fatal("carol has no token account")
	}
	if amt, ok, err := st.SVMAccount(ctx, mint, "bob"); err != nil || !ok || amt != 7 {
		t.Fatalf("bob's account %d %v %v", amt, ok, err)
	}
	if h, err := st.SVMHolders(ctx, mint); err != nil || len(h) != 2 || h[0] != "alice" || h[1] != "bob" {
		t.Fatalf("holders %v %v", h, err)
	}
	if s, err := st.SVMSupply(ctx, mint); err != nil || s != 7 {
		t.Fatalf("supply %d %v", s, err)
	}
	if tx, at, ok, err := st.SVMTransaction(ctx, "sig1"+mint); err != nil || !ok || string(tx) != "tx1" || at.IsZero() {
		t.Fatalf("transaction %q %v %v %v", tx, at, ok, err)
	}
	if _, _, ok, _ := st.SVMTransaction(ctx, "sig2"+mint); ok {
		t.Fatal("a transfer without its transaction is found")
	}
}
