package x402

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/gagliardetto/solana-go"
)

// memLedger is an in-memory SVMLedger.
type memLedger struct {
	bal     map[string]uint64
	settled map[string][]byte
}

func (l *memLedger) Balance(_ context.Context, _, owner string) (uint64, error) {
	return l.bal[owner], nil
}

func (l *memLedger) Transfer(_ context.Context, sig, _, from, to string, amount uint64, tx []byte) error {
	if _, ok := l.settled[sig]; ok {
		return ErrSVMDuplicate
	}
	if l.bal[from] < amount {
		return ErrSVMInsufficientFunds
	}
	l.bal[from] -= amount
	l.bal[to] += amount
	l.settled[sig] = tx
	return nil
}

func (l *memLedger) Settled(_ context.Context, sig string) (bool, error) {
	_, ok := l.settled[sig]
	return ok, nil
}

func TestSVMClockWindow(t *testing.T) {
	now := time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC)
	c := &SVMClock{Seed: []byte("s"), Now: func() time.Time { return now }}
	slot, hash, last := c.Latest()
	if last != slot+SVMBlockhashWindow || hash != c.Blockhash(slot) || c.Blockhash(slot+1) == hash {
		t.Fatalf("latest %d %s %d", slot, hash, last)
	}
	now = now.Add(SVMBlockhashWindow * SVMSlotDuration)
	if s, ok := c.Valid(hash); !ok || s != slot {
		t.Fatalf("a blockhash %d slots old must still be valid", SVMBlockhashWindow)
	}
	now = now.Add(SVMSlotDuration)
	if _, ok := c.Valid(hash); ok {
		t.Fatal("an expired blockhash is valid")
	}
	// A hash from the future (computable from the seed) is not yet issued.
	if _, ok := c.Valid(c.Blockhash(c.Slot() + 1)); ok {
		t.Fatal("a future blockhash is valid")
	}
}

func TestLocalFacilitatorRefusesStaleBlockhashes(t *testing.T) {
	ctx := context.Background()
	f := newSVMFixture(t)
	now := time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC)
	clock := &SVMClock{Seed: []byte("s"), Now: func() time.Time { return now }}
	amount, _ := strconv.ParseUint(f.req.Amount, 10, 64)
	ledger := &memLedger{bal: map[string]uint64{f.payer.PublicKey().String(): 3 * amount}, settled: map[string][]byte{}}
	lf := &LocalFacilitator{SVMNetwork: f.req.Network, SVM: ledger, SVMFeePayer: f.feePayer, SVMClock: clock}

	_, fresh, _ := clock.Latest()
	for name, hash := range map[string]solana.Hash{"unknown": {9}, "expired": clock.Blockhash(clock.Slot() - SVMBlockhashWindow - 1)} {
		p, err := SignSVM(f.req, f.payer, hash)
		if err != nil {
			t.Fatal(err)
		}
		res, err := lf.Settle(ctx, p, f.req)
		if err != nil || res.Success || res.ErrorReason != ReasonSVMSimulation || res.ErrorMessage != "invalid_payload: Transaction simulation failed: Blockhash not found" {
			t.Fatalf("%s blockhash: %+v %v", name, res, err)
		}
	}
	if len(ledger.settled) != 0 || ledger.bal[f.payer.PublicKey().String()] != 3*amount {
		t.Fatal("a refused payment moved funds")
	}
	p, _ := SignSVM(f.req, f.payer, fresh)
	res, err := lf.Settle(ctx, p, f.req)
	if err != nil || !res.Success {
		t.Fatalf("fresh blockhash: %+v %v", res, err)
	}
	tx, err := solana.TransactionFromBytes(ledger.settled[res.Transaction])
	if err != nil || tx.Signatures[0].String() != res.Transaction {
		t.Fatalf("the kept transaction is not the settled one: %v", err)
	}
}
