package store_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"conduit/internal/money"
	"conduit/internal/store"
)

// A run's admission is judged in its own step: past NewRun.AdmitBy a new
// run is not written (nothing held), but a run an earlier attempt of the
// same step wrote is still answered, so a step that ran again after its
// worker died never leaves that run behind running with its credit held.
func TestStartRunAdmitBy(t *testing.T) {
	ctx := context.Background()
	acct := newAccount(t, 5*money.USD)
	p, err := st.CreatePipeline(ctx, acct, "admit-by", json.RawMessage(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	newRun := func(id string, admitBy time.Time) store.NewRun {
		return store.NewRun{RunID: id, PipelineID: p.ID, Version: 1, AccountID: acct, Kind: "invoke", WorkflowID: "pipeline-run/" + id,
			Inputs: map[string]string{}, StartedAt: time.Now(), Hold: money.USD, AdmitBy: admitBy}
	}
	// Too late: nothing written, nothing held.
	if _, _, err := st.StartRun(ctx, newRun("late", time.Now().Add(-time.Second))); !errors.Is(err, store.ErrAdmissionExpired) {
		t.Fatalf("late admission: %v", err)
	}
	if _, err := st.Run(ctx, "late"); !errors.Is(err, store.ErrNotFound) || balance(t, acct) != 5*money.USD {
		t.Fatalf("a late admission wrote something: %v, balance %s", err, balance(t, acct))
	}
	// In time, then the same step again past the deadline: the run it
	// wrote, held once.
	first, existing, err := st.StartRun(ctx, newRun("on-time", time.Now().Add(time.Minute)))
	if err != nil || existing || first.Status != "running" {
		t.Fatalf("%+v %v %v", first, existing, err)
	}
	again, existing, err := st.StartRun(ctx, newRun("on-time", time.Now().Add(-time.Minute)))
	if err != nil || existing || again.RunID != first.RunID || again.HoldID != first.HoldID || balance(t, acct) != 4*money.USD {
		t.Fatalf("the step again: %+v %v %v, balance %s", again, existing, err, balance(t, acct))
	}
}

// The admission is one statement (issue #26): the run, the debit, the
// hold and its entry are written together or not at all, and FinishRun
// settles the hold and records the result in one transaction.
func TestStartRunHoldsAndFinishSettles(t *testing.T) {
	ctx := context.Background()
	acct := newAccount(t, 5*money.USD)
	p, err := st.CreatePipeline(ctx, acct, "one-statement", json.RawMessage(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	newRun := func(id, account string, hold money.Micros) store.NewRun {
		return store.NewRun{RunID: id, PipelineID: p.ID, Version: 1, AccountID: account, Kind: "invoke", WorkflowID: "pipeline-run/" + id,
			Inputs: map[string]string{}, StartedAt: time.Now(), Hold: hold, AdmitBy: time.Now().Add(time.Minute)}
	}
	if _, _, err := st.StartRun(ctx, newRun("too-dear", acct, 6*money.USD)); !errors.Is(err, store.ErrInsufficientCredit) {
		t.Fatalf("a hold above the balance: %v", err)
	}
	if _, err := st.Run(ctx, "too-dear"); !errors.Is(err, store.ErrNotFound) || balance(t, acct) != 5*money.USD {
		t.Fatalf("a refused admission wrote something: %v, balance %s", err, balance(t, acct))
	}
	if _, _, err := st.StartRun(ctx, newRun("nobody", "acct_missing", money.USD)); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("an unknown account: %v", err)
	}
	free, _, err := st.StartRun(ctx, newRun("free", acct, 0))
	if err != nil || free.HoldID != "" || balance(t, acct) != 5*money.USD {
		t.Fatalf("a run without a hold: %+v %v, balance %s", free, err, balance(t, acct))
	}
	run, _, err := st.StartRun(ctx, newRun("held", acct, 2*money.USD))
	if err != nil || run.HoldID == "" || run.Status != "running" || balance(t, acct) != 3*money.USD {
		t.Fatalf("a held run: %+v %v, balance %s", run, err, balance(t, acct))
	}
	if status, _, err := st.HoldStatus(ctx, run.HoldID); err != nil || status != "held" {
		t.Fatalf("its hold: %s %v", status, err)
	}
	res := store.RunResult{RunID: "held", Status: "success", Outputs: map[string]string{"a": "b"}, Nodes: json.RawMessage(`[]`), Cost: money.USD / 2, FinishedAt: time.Now()}
	for range 2 { // the second is a retried activity: no change
		if err := st.FinishRun(ctx, res); err != nil {
			t.Fatal(err)
		}
	}
	n, charged, err := st.ChargesForHold(ctx, run.HoldID)
	if err != nil || n != 1 || charged != money.USD/2 || balance(t, acct) != 5*money.USD-money.USD/2 {
		t.Fatalf("settled: %d charges of %s (%v), balance %s", n, charged, err, balance(t, acct))
	}
	if r, err := st.Run(ctx, "held"); err != nil || r.Status != "success" || r.Cost != money.USD/2 {
		t.Fatalf("the run after finishing: %+v %v", r, err)
	}
	if err := st.FinishRun(ctx, store.RunResult{RunID: "free", Status: "error", Outputs: map[string]string{}, Nodes: json.RawMessage(`[]`), FinishedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
}

// The admission and the finish each take one round trip in the usual case
// and fall back to a transaction otherwise; attempts of one step racing
// each other (a worker presumed dead, a retried activity) still write one
// run, hold once and settle once, and the ledger always adds up to the
// balance (balance checks it).
func TestRunStepsRacingWriteOnce(t *testing.T) {
	ctx := context.Background()
	acct := newAccount(t, 10*money.USD)
	p, err := st.CreatePipeline(ctx, acct, "races", json.RawMessage(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	newRun := func(id string) store.NewRun {
		return store.NewRun{RunID: id, PipelineID: p.ID, Version: 1, AccountID: acct, Kind: "invoke", WorkflowID: "pipeline-run/" + id,
			Inputs: map[string]string{}, StartedAt: time.Now(), Hold: 2 * money.USD, AdmitBy: time.Now().Add(time.Minute)}
	}
	race := func(n int, f func() error) {
		t.Helper()
		errs := make(chan error, n)
		for range n {
			go func() { errs <- f() }()
		}
		for range n {
			if err := <-errs; err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, id := range []string{"ok", "failed", "dear"} {
		holds := make(chan string, 4)
		race(4, func() error {
			r, _, err := st.StartRun(ctx, newRun(id))
			holds <- r.HoldID
			return err
		})
		first := <-holds
		for range 3 {
			if h := <-holds; h != first || h == "" {
				t.Fatalf("run %s: attempts answered holds %q and %q", id, first, h)
			}
		}
	}
	if b := balance(t, acct); b != 4*money.USD {
		t.Fatalf("three runs holding 2 USD each left %s of 10 USD", b)
	}

	ok, _ := st.Run(ctx, "ok")
	race(4, func() error {
		return st.FinishRun(ctx, store.RunResult{RunID: "ok", Status: "success", Outputs: map[string]string{}, Nodes: json.RawMessage(`[]`), Cost: money.USD / 4, FinishedAt: time.Now()})
	})
	if n, charged, err := st.ChargesForHold(ctx, ok.HoldID); err != nil || n != 1 || charged != money.USD/4 {
		t.Fatalf("a run finished by four racing attempts: %d charges of %s (%v)", n, charged, err)
	}

	// A failed run is charged nothing: its hold is released whole.
	failed, _ := st.Run(ctx, "failed")
	if err := st.FinishRun(ctx, store.RunResult{RunID: "failed", Status: "error", Outputs: map[string]string{}, Nodes: json.RawMessage(`[]`), Error: "x", FinishedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	if status, charged, err := st.HoldStatus(ctx, failed.HoldID); err != nil || status != "released" || charged != 0 {
		t.Fatalf("a failed run's hold: %s, charged %s (%v)", status, charged, err)
	}

	// More than was held: refused, and nothing changes.
	dear, _ := st.Run(ctx, "dear")
	if err := st.FinishRun(ctx, store.RunResult{RunID: "dear", Status: "success", Outputs: map[string]string{}, Nodes: json.RawMessage(`[]`), Cost: 3 * money.USD, FinishedAt: time.Now()}); !errors.Is(err, store.ErrChargeExceedsHold) {
		t.Fatalf("a charge above the hold: %v", err)
	}
	if r, _ := st.Run(ctx, "dear"); r.Status != "running" {
		t.Fatalf("a refused finish changed the run to %s", r.Status)
	}
	if status, _, _ := st.HoldStatus(ctx, dear.HoldID); status != "held" {
		t.Fatalf("a refused finish left the hold %s", status)
	}
	if b := balance(t, acct); b != 10*money.USD-money.USD/4-2*money.USD {
		t.Fatalf("balance %s after charging 0.25 and holding 2 of 10 USD", b)
	}
}

// A step that runs again with values the database refuses (a NUL in
// text, which jsonb cannot hold) is answered from the run it wrote
// before, as the transaction always did: the one-statement path must not
// turn that into an error.
func TestRunStepsAgainWithUnstorableValues(t *testing.T) {
	ctx := context.Background()
	acct := newAccount(t, 5*money.USD)
	p, err := st.CreatePipeline(ctx, acct, "unstorable", json.RawMessage(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	n := store.NewRun{RunID: "nul", PipelineID: p.ID, Version: 1, AccountID: acct, Kind: "invoke", WorkflowID: "pipeline-run/nul",
		Inputs: map[string]string{"q": "clean"}, StartedAt: time.Now(), Hold: money.USD, AdmitBy: time.Now().Add(time.Minute)}
	first, _, err := st.StartRun(ctx, n)
	if err != nil {
		t.Fatal(err)
	}
	n.Inputs = map[string]string{"q": "un\u0000storable"}
	again, existing, err := st.StartRun(ctx, n)
	if err != nil || existing || again.HoldID != first.HoldID {
		t.Fatalf("the step again: %+v %v %v", again, existing, err)
	}
	bad := store.RunResult{RunID: "nul", Status: "success", Outputs: map[string]string{"a": "un\u0000storable"}, Nodes: json.RawMessage(`[]`), FinishedAt: time.Now()}
	if err := st.FinishRun(ctx, bad); err == nil {
		t.Fatal("a result jsonb cannot hold was recorded")
	}
	if err := st.FinishRun(ctx, store.RunResult{RunID: "nul", Status: "error", Outputs: map[string]string{}, Nodes: json.RawMessage(`[]`), Error: "x", FinishedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	if err := st.FinishRun(ctx, bad); err != nil {
		t.Fatalf("the finish again, on a finished run: %v", err)
	}
	if b := balance(t, acct); b != 5*money.USD {
		t.Fatalf("a failed run left the balance at %s", b)
	}
}
