package activities

import (
	"context"
	"strings"
	"time"

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
