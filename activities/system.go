// Package activities holds every side effect a workflow needs, as methods on
// small structs that carry their dependencies. Workflows reference these
// methods; the worker registers them.
package activities

import (
	"context"
	"time"

	"go.temporal.io/sdk/activity"

	"conduit/internal/store"
)

// System holds the platform's own housekeeping activities.
type System struct {
	Store *store.Store
}

// RecordPing writes the wiring probe's row, keyed by the calling workflow's
// id so retries are harmless, and returns when it was first recorded.
func (s *System) RecordPing(ctx context.Context, message string) (time.Time, error) {
	return s.Store.RecordPing(ctx, activity.GetInfo(ctx).WorkflowExecution.ID, message)
}
