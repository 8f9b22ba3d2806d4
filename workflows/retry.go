package workflows

import (
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"
)

// Every activity retries within a bound: errors Classify calls permanent
// are not retried at all, transient ones for a few minutes; after that the
// workflow takes its compensating step (release, uncharge, credit back)
// instead of waiting forever with money held.
var (
	// ShortRetry bounds the database steps (record, finish, grant).
	ShortRetry = &temporal.RetryPolicy{InitialInterval: time.Second, MaximumInterval: 30 * time.Second, MaximumAttempts: 20}
	// SettleRetry bounds the settlement activity: transient failures (the
	// facilitator or the database unreachable, an outcome not yet
	// confirmed) are retried for a few minutes, then the workflow fails;
	// the payment's record says what an operator reconciles.
	SettleRetry = &temporal.RetryPolicy{InitialInterval: time.Second, MaximumInterval: 30 * time.Second, MaximumAttempts: 12}
)

// shortLocal runs a short database step as a local activity: in the
// workflow task, with no round trip through the server, on the caller's
// wait path.
func shortLocal(ctx workflow.Context) workflow.Context {
	return workflow.WithLocalActivityOptions(ctx, workflow.LocalActivityOptions{StartToCloseTimeout: 30 * time.Second, RetryPolicy: ShortRetry})
}
