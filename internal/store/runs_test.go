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
