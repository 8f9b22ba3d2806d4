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
	if err := st.SVMTransfer(ctx, "sig1"+mint, mint, "alice", "bob", 5); err != nil {
		t.Fatal(err)
	}
	if err := st.SVMTransfer(ctx, "sig1"+mint, mint, "alice", "bob", 1); !errors.Is(err, store.ErrSVMDuplicate) {
		t.Fatalf("duplicate: %v", err)
	}
	if err := st.SVMTransfer(ctx, "sig2"+mint, mint, "alice", "bob", 3); !errors.Is(err, store.ErrSVMInsufficientFunds) {
		t.Fatalf("overdraw: %v", err)
	}
	a, _ := st.SVMBalance(ctx, mint, "alice")
	b, _ := st.SVMBalance(ctx, mint, "bob")
	if a != 2 || b != 5 {
		t.Fatalf("alice %d bob %d", a, b)
	}
	// The refused overdraw left no transfer behind: its signature is free.
	if err := st.SVMTransfer(ctx, "sig2"+mint, mint, "alice", "bob", 2); err != nil {
		t.Fatal(err)
	}
}
