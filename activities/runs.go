package activities

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"time"

	"conduit/internal/money"
	"conduit/internal/store"
)

// Runs writes the run history projection.
type Runs struct {
	Store *store.Store
}

// Finish records the run's result and settles its credit in one
// transaction: a successful run is charged res.Cost from its hold, any
// other status releases the hold. Retries are harmless.
func (r *Runs) Finish(ctx context.Context, res store.RunResult) error {
	return r.Store.FinishRun(ctx, res)
}

// FailInput ends a run whose result could not be recorded.
type FailInput struct {
	RunID      string
	Error      string
	FinishedAt time.Time
}

// Fail is the compensating end of a run whose result cannot be stored: the
// run becomes an error carrying only the reason, and its hold is released.
func (r *Runs) Fail(ctx context.Context, in FailInput) error {
	return r.Store.FinishRun(ctx, store.RunResult{
		RunID: in.RunID, Status: "error", Outputs: map[string]string{}, Nodes: []byte("[]"),
		Error: strings.ToValidUTF8(strings.ReplaceAll(in.Error, "\x00", ""), "?"), FinishedAt: in.FinishedAt,
	})
}

// OpenRunInput admits one run: the row and its credit hold.
type OpenRunInput struct {
	Run store.NewRun
}

// OpenedRun is the admission's outcome. Refusals are values, not errors,
// so they end the workflow at once instead of being retried.
type OpenedRun struct {
	RunID      string
	Version    int
	Status     string
	StartedAt  time.Time
	WorkflowID string
	// Existing: the Idempotency-Key names a run admitted before (possibly
	// by another workflow execution); that run is the answer.
	Existing bool
	// Conflict: the key came first with a different request.
	Conflict bool
	// Insufficient: the balance cannot cover the hold; Balance is it.
	Insufficient bool
	Balance      money.Micros
	// Expired: too late to admit (store.NewRun.AdmitBy); nothing written.
	Expired bool
	// Recorded is what an Existing run recorded, once it has finished.
	Recorded *RecordedRun
}

// RecordedRun is what a finished run recorded.
type RecordedRun struct {
	Outputs          map[string]string
	Nodes            json.RawMessage
	PromptTokens     int
	CompletionTokens int
	Cost             money.Micros
	Error            string
}

// Open writes the run and holds its credit (store.StartRun). It is the
// workflow's first step and is safe to repeat.
func (r *Runs) Open(ctx context.Context, in OpenRunInput) (OpenedRun, error) {
	run, existing, err := r.Store.StartRun(ctx, in.Run)
	switch {
	case errors.Is(err, store.ErrInsufficientCredit):
		bal, berr := r.Store.Balance(ctx, in.Run.AccountID)
		if berr != nil {
			return OpenedRun{}, berr
		}
		return OpenedRun{Insufficient: true, Balance: bal}, nil
	case errors.Is(err, store.ErrRequestMismatch):
		return OpenedRun{RunID: run.RunID, Conflict: true}, nil
	case errors.Is(err, store.ErrAdmissionExpired):
		return OpenedRun{Expired: true}, nil
	case err != nil:
		return OpenedRun{}, err
	}
	out := OpenedRun{RunID: run.RunID, Version: run.Version, Status: run.Status, StartedAt: run.StartedAt,
		WorkflowID: run.WorkflowID, Existing: existing}
	if existing && run.Status != "running" {
		out.Recorded = &RecordedRun{Outputs: run.Outputs, Nodes: run.Nodes, PromptTokens: run.PromptTokens,
			CompletionTokens: run.CompletionTokens, Cost: run.Cost, Error: run.Error}
	}
	return out, nil
}
