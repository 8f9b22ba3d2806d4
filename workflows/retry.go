package workflows

import (
	"time"

	"go.temporal.io/sdk/temporal"
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
