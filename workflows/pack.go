package workflows

import (
	"time"

	"go.temporal.io/sdk/workflow"

	"conduit/activities"
	"conduit/internal/money"
)

// PackWorkflowID derives from the checkout session, so a payment's pack is
// one workflow however often its webhook arrives: the frontend starts it
// with the id-reuse policy that rejects duplicates, and a replayed webhook
// starts nothing.
func PackWorkflowID(sessionID string) string { return "pack/" + sessionID }

// PackInput is a paid checkout from our own record of it (account and
// price are ours, never the webhook's word alone).
type PackInput struct {
	SessionID string
	AccountID string
	Paid      money.Micros
}

// PackResult is what the grant did.
type PackResult struct {
	Credit    money.Micros
	Balance   money.Micros
	Duplicate bool
}

// PackPurchase grants a credit pack bought by card: one activity,
// idempotent by the checkout's ledger key, retried within ShortRetry.
func PackPurchase(ctx workflow.Context, in PackInput) (PackResult, error) {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: time.Minute, RetryPolicy: ShortRetry})
	var out activities.PackOutcome
	if err := workflow.ExecuteActivity(ctx, ActRecordPack, activities.PackInput{SessionID: in.SessionID, AccountID: in.AccountID, Paid: in.Paid}).Get(ctx, &out); err != nil {
		_ = workflow.UpsertTypedSearchAttributes(ctx, AttrRunStatus.ValueSet(StatusError))
		return PackResult{}, err
	}
	_ = workflow.UpsertTypedSearchAttributes(ctx, AttrRunStatus.ValueSet(StatusSuccess))
	return PackResult{Credit: out.Credit, Balance: out.Balance, Duplicate: out.Duplicate}, nil
}
