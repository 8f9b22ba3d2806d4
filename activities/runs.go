package activities

import (
	"context"

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
