package registry_test

import (
	"context"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/crypto"

	"conduit/internal/x402/evmchain"
	"conduit/internal/zkverify/registry"
)

// A record is a real transaction in a real block, read back from the
// contract; recording the same id again answers the first transaction.
func TestRecordIncludeReadBack(t *testing.T) {
	ctx := context.Background()
	key, _ := crypto.GenerateKey()
	chain, err := evmchain.New(31337, key)
	if err != nil {
		t.Fatal(err)
	}
	defer chain.Close()
	reg, err := registry.Deploy(ctx, chain)
	if err != nil {
		t.Fatal(err)
	}
	digest := crypto.Keccak256Hash([]byte("statement"))
	tx, err := reg.Record(ctx, "job-1", digest)
	if err != nil {
		t.Fatal(err)
	}
	rc, err := reg.Inclusion(ctx, "job-1", tx)
	if err != nil {
		t.Fatal(err)
	}
	if rc.TxHash != tx || rc.BlockHash == (common.Hash{}) {
		t.Fatalf("receipt %+v", rc)
	}
	if ok, err := reg.Canonical(ctx, rc.BlockNumber.Uint64(), rc.BlockHash); err != nil || !ok {
		t.Fatalf("canonical: %v %v", ok, err)
	}
	e, err := reg.RecordOf(ctx, "job-1")
	if err != nil || e.Digest != digest || e.BlockNumber != rc.BlockNumber.Uint64() {
		t.Fatalf("read back %+v %v", e, err)
	}
	if ok, _ := reg.IsRecorded(ctx, "job-1", digest); !ok {
		t.Fatal("isRecorded false for the recorded digest")
	}
	if ok, _ := reg.IsRecorded(ctx, "job-1", crypto.Keccak256Hash([]byte("other"))); ok {
		t.Fatal("isRecorded true for another digest")
	}
	if e, _ := reg.RecordOf(ctx, "job-2"); e.Digest != (common.Hash{}) {
		t.Fatal("an unrecorded id has a record")
	}
	again, err := reg.Record(ctx, "job-1", digest)
	if err != nil || again != tx {
		t.Fatalf("a second record answered %s, %v; want %s", again, err, tx)
	}
}
