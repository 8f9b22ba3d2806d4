package store_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"

	"conduit/internal/money"
	"conduit/internal/store"
	"conduit/internal/telemetry"
)

func newAccount(t *testing.T, free money.Micros) string {
	t.Helper()
	id := store.NewID("acct")
	if _, err := st.EnsureHumanAccount(context.Background(), id, t.Name(), free); err != nil {
		t.Fatal(err)
	}
	return id
}

func balance(t *testing.T, id string) money.Micros {
	t.Helper()
	b, err := st.Balance(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	sum, err := st.LedgerSum(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	if sum != b {
		t.Fatalf("balance %s differs from the sum of entries %s", b, sum)
	}
	return b
}

func TestFreeCreditIsGrantedOnce(t *testing.T) {
	ctx := context.Background()
	id := newAccount(t, 5*money.USD)
	if _, err := st.EnsureHumanAccount(ctx, id, "again", 5*money.USD); err != nil {
		t.Fatal(err)
	}
	if b := balance(t, id); b != 5*money.USD {
		t.Fatalf("balance %s, want 5", b)
	}
}

func TestGrantIsIdempotentPerKey(t *testing.T) {
	ctx := context.Background()
	id := newAccount(t, 0)
	r1, err := st.Grant(ctx, id, store.EntryTopUp, 5*money.USD, "tx-1", "")
	if err != nil || r1.Duplicate || r1.Balance != 5*money.USD {
		t.Fatalf("%+v %v", r1, err)
	}
	r2, err := st.Grant(ctx, id, store.EntryTopUp, 5*money.USD, "tx-1", "")
	if err != nil || !r2.Duplicate || r2.EntryID != r1.EntryID || r2.Balance != 5*money.USD {
		t.Fatalf("replay: %+v %v", r2, err)
	}
	if _, err := st.Grant(ctx, id, store.EntryTopUp, 7*money.USD, "tx-1", ""); !errors.Is(err, store.ErrIdempotencyConflict) {
		t.Fatalf("same key, other amount: %v", err)
	}
	if _, err := st.Grant(ctx, "acct_missing", store.EntryTopUp, money.USD, "tx-2", ""); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("unknown account: %v", err)
	}
	if b := balance(t, id); b != 5*money.USD {
		t.Fatalf("balance %s", b)
	}
}

func TestHoldCaptureRelease(t *testing.T) {
	ctx := context.Background()
	id := newAccount(t, 5*money.USD)

	h, err := st.Hold(ctx, id, 2*money.USD, "run-1")
	if err != nil {
		t.Fatal(err)
	}
	if again, err := st.Hold(ctx, id, 2*money.USD, "run-1"); err != nil || again != h {
		t.Fatalf("hold replay: %s %v", again, err)
	}
	if b := balance(t, id); b != 3*money.USD {
		t.Fatalf("held balance %s", b)
	}
	// Capture charges the actual cost; the rest comes back. The callback
	// commits with the charge.
	called := false
	if err := st.Capture(ctx, h, 500_000, func(pgx.Tx) error { called = true; return nil }); err != nil || !called {
		t.Fatalf("capture: %v called=%v", err, called)
	}
	if err := st.Capture(ctx, h, 500_000, nil); err != nil {
		t.Fatalf("capture replay must be a no-op: %v", err)
	}
	if err := st.Release(ctx, h, nil); !errors.Is(err, store.ErrHoldSettled) {
		t.Fatalf("release after capture: %v", err)
	}
	if b := balance(t, id); b != 4_500_000 {
		t.Fatalf("after capture %s", b)
	}

	h2, err := st.Hold(ctx, id, money.USD, "run-2")
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Capture(ctx, h2, 2*money.USD, nil); !errors.Is(err, store.ErrChargeExceedsHold) {
		t.Fatalf("over-capture: %v", err)
	}
	if err := st.Release(ctx, h2, nil); err != nil {
		t.Fatal(err)
	}
	if err := st.Release(ctx, h2, nil); err != nil {
		t.Fatalf("release replay: %v", err)
	}
	if b := balance(t, id); b != 4_500_000 {
		t.Fatalf("after release %s", b)
	}
	if _, err := st.Hold(ctx, id, 10*money.USD, "run-3"); !errors.Is(err, store.ErrInsufficientCredit) {
		t.Fatalf("hold beyond balance: %v", err)
	}
	if _, err := st.Hold(ctx, "acct_missing", money.USD, "run-4"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("hold on unknown account: %v", err)
	}
}

// A failing callback rolls the whole settlement back: no charge without
// the record it pays for.
func TestCaptureRollsBackWithItsRecord(t *testing.T) {
	ctx := context.Background()
	id := newAccount(t, 5*money.USD)
	h, err := st.Hold(ctx, id, money.USD, "run-rb")
	if err != nil {
		t.Fatal(err)
	}
	before := counted(t, captured)
	boom := errors.New("projection write failed")
	if err := st.Capture(ctx, h, money.USD, func(pgx.Tx) error { return boom }); !errors.Is(err, boom) {
		t.Fatalf("%v", err)
	}
	if status, _, _ := st.HoldStatus(ctx, h); status != "held" {
		t.Fatalf("hold %s after a failed capture", status)
	}
	if b := balance(t, id); b != 4*money.USD {
		t.Fatalf("balance %s", b)
	}
	// The metrics count credit a transaction moved once it has committed:
	// the rolled-back capture counted nothing, the one that commits does.
	if got := counted(t, captured); got != before {
		t.Fatalf("a rolled-back capture was counted: %v → %v", before, got)
	}
	if err := st.Capture(ctx, h, money.USD, nil); err != nil {
		t.Fatal(err)
	}
	if got := counted(t, captured); got != before+float64(money.USD) {
		t.Fatalf("captured counter %v → %v, want +%d", before, got, money.USD)
	}
}

const captured = "conduit_credit_captured_microusd_total"

// counted reads a counter of the process's metrics registry.
func counted(t *testing.T, name string) float64 {
	t.Helper()
	families, err := telemetry.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() == name {
			return f.GetMetric()[0].GetCounter().GetValue()
		}
	}
	t.Fatalf("no metric %s", name)
	return 0
}

// Property: many concurrent holds, captures, releases and grants on one
// account never drive it below zero, and the balance always equals the sum
// of its entries.
func TestConcurrentLedgerKeepsInvariants(t *testing.T) {
	ctx := context.Background()
	id := newAccount(t, 5*money.USD)
	const workers, ops = 16, 40
	var wg sync.WaitGroup
	var mu sync.Mutex
	var granted, charged money.Micros
	insufficient := 0
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(w), 7))
			for i := range ops {
				key := fmt.Sprintf("w%d-op%d", w, i)
				switch r.IntN(3) {
				case 0:
					amt := money.Micros(r.IntN(300_000) + 1)
					res, err := st.Grant(ctx, id, store.EntryGrant, amt, key, "")
					if err != nil {
						t.Error(err)
						return
					}
					if !res.Duplicate {
						mu.Lock()
						granted += amt
						mu.Unlock()
					}
				default:
					amt := money.Micros(r.IntN(900_000) + 1)
					h, err := st.Hold(ctx, id, amt, key)
					if errors.Is(err, store.ErrInsufficientCredit) {
						mu.Lock()
						insufficient++
						mu.Unlock()
						continue
					}
					if err != nil {
						t.Error(err)
						return
					}
					if r.IntN(2) == 0 {
						c := money.Micros(r.Int64N(int64(amt) + 1))
						if err := st.Capture(ctx, h, c, nil); err != nil {
							t.Error(err)
							return
						}
						mu.Lock()
						charged += c
						mu.Unlock()
					} else if err := st.Release(ctx, h, nil); err != nil {
						t.Error(err)
						return
					}
				}
				// Replaying the same grant key is harmless.
				if i%10 == 0 {
					_, _ = st.Grant(ctx, id, store.EntryGrant, 1, fmt.Sprintf("w%d-replay", w), "")
				}
			}
		}()
	}
	wg.Wait()
	replays := money.Micros(workers) // one 1-micro grant per worker, once
	want := 5*money.USD + granted + replays - charged
	if b := balance(t, id); b != want || b < 0 {
		t.Fatalf("balance %s, want %s (granted %s, charged %s, %d refused)", b, want, granted, charged, insufficient)
	}
	if insufficient == 0 {
		t.Log("no hold was refused; the run did not exercise the floor")
	}
}

// A wallet account is keyed by network + address: the same wallet on the
// same network is one account; on the other network it is another. Wallet
// accounts start empty: free credit is for human accounts.
func TestWalletAccountsPerNetwork(t *testing.T) {
	ctx := context.Background()
	addr := "0x" + strings.Repeat("ab", 20)
	a1, err := st.WalletAccount(ctx, "eip155:8453", addr)
	if err != nil {
		t.Fatal(err)
	}
	a2, err := st.WalletAccount(ctx, "eip155:8453", addr)
	if err != nil || a2.ID != a1.ID || a2.Kind != "wallet" || a2.Balance != 0 {
		t.Fatalf("%+v %v", a2, err)
	}
	other, err := st.WalletAccount(ctx, "solana:EtWTRABZaYq6iMfeYKouRu166VU2xqa1", addr)
	if err != nil || other.ID == a1.ID {
		t.Fatalf("networks share an account: %+v %v", other, err)
	}
}

// What a transaction's steps leave for after the commit (the credit
// metrics) runs only once it has committed: never for one that rolls back,
// never before the commit.
func TestAfterCommitRunsOnlyAfterCommit(t *testing.T) {
	ctx := context.Background()
	ran := false
	boom := errors.New("a later step failed")
	err := st.InTx(ctx, func(ctx context.Context, tx pgx.Tx) error {
		store.AfterCommit(ctx, func() { ran = true })
		return boom
	})
	if !errors.Is(err, boom) || ran {
		t.Fatalf("rolled back: err %v, ran %v", err, ran)
	}
	err = st.InTx(ctx, func(ctx context.Context, tx pgx.Tx) error {
		store.AfterCommit(ctx, func() { ran = true })
		if ran {
			t.Error("ran before the commit")
		}
		_, err := tx.Exec(ctx, `SELECT 1`)
		return err
	})
	if err != nil || !ran {
		t.Fatalf("committed: err %v, ran %v", err, ran)
	}
}
