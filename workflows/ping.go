package workflows

import (
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"
)

// PingWorkflowID is the workflow id of a wiring probe.
func PingWorkflowID(key string) string { return "ping/" + key }

// PingResult is what Ping returns.
type PingResult struct {
	Message    string
	RecordedAt time.Time
}

// Ping is the smallest workflow that crosses every boundary: it runs one
// activity on the worker that writes to Postgres. The health of the whole
// wiring (frontend → Temporal → worker → database) is proved by running it.
func Ping(ctx workflow.Context, message string) (PingResult, error) {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: 10 * time.Second,
		RetryPolicy:         &temporal.RetryPolicy{MaximumAttempts: 5},
	})
	var at time.Time
	if err := workflow.ExecuteActivity(ctx, ActRecordPing, message).Get(ctx, &at); err != nil {
		return PingResult{}, err
	}
	return PingResult{Message: message, RecordedAt: at}, nil
}

// Nop returns at once: the bare Temporal round trip (start, one workflow
// task, result) that benchmarks compare runs against.
func Nop(ctx workflow.Context) error { return nil }
