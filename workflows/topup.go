package workflows

import (
	"time"

	"go.temporal.io/sdk/workflow"

	"conduit/activities"
	"conduit/internal/money"
	"conduit/internal/x402"
)

// PaymentsQueue carries payment workflows.
const PaymentsQueue = "payments"

// TopUpWorkflowID derives from a verified payment (network, payer, and
// the authorization nonce or payer signature; see x402.VerifySignature)
// and the account it credits, so the same payment for the same account is
// one top-up however often it is presented. Another account's request for
// it is another workflow, which the payment's record refuses.
func TopUpWorkflowID(network, payer, id, target string) string {
	return "topup/" + network + "/" + payer + "/" + id + "/" + target
}

// TopUpTarget names what a top-up credits: the bearer's account, or the
// paying wallet's.
func TopUpTarget(accountID string) string {
	if accountID == "" {
		return "wallet"
	}
	return accountID
}

// TopUpInput is a matched payment and whom to credit.
type TopUpInput struct {
	Payment      x402.PaymentPayload
	Requirements x402.PaymentRequirements
	Amount       money.Micros
	Resource     string
	// AccountID is the bearer's account, or empty for the payer's wallet
	// account.
	AccountID string
}

// TopUpResult is what the top-up endpoint answers.
type TopUpResult struct {
	Refused     bool
	Reason      string
	Message     string
	Granted     money.Micros
	Duplicate   bool
	Balance     money.Micros
	AccountID   string
	Network     string
	Transaction string
	Payer       string
}

// TopUp settles the payment, then grants the credit: each step an
// activity that is idempotent on its own (the payment by its recorded
// claim, the grant by the settled transaction), so retries, restarts and
// re-runs for the same payment settle once and grant once. A re-run after
// a refusal settles afresh: refusals such as an unfunded wallet are not
// final.
func TopUp(ctx workflow.Context, in TopUpInput) (TopUpResult, error) {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: time.Minute, RetryPolicy: SettleRetry})
	var settled activities.SettleOutcome
	if err := workflow.ExecuteActivity(ctx, ActSettle, activities.SettleInput{
		Payment: in.Payment, Requirements: in.Requirements, Amount: in.Amount, Resource: in.Resource,
		Purpose: "topup/" + TopUpTarget(in.AccountID),
	}).Get(ctx, &settled); err != nil {
		return TopUpResult{}, err
	}
	res := TopUpResult{Network: in.Requirements.Network, Payer: settled.Payer}
	if !settled.Success {
		res.Refused, res.Reason, res.Message = true, settled.Reason, settled.Message
		_ = workflow.UpsertTypedSearchAttributes(ctx, AttrRunStatus.ValueSet(StatusRefused))
		return res, nil
	}
	var granted activities.GrantOutcome
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: time.Minute, RetryPolicy: ShortRetry})
	if err := workflow.ExecuteActivity(ctx, ActGrant, activities.GrantInput{
		AccountID: in.AccountID, Network: in.Requirements.Network, Payer: settled.Payer, Transaction: settled.Transaction, Amount: in.Amount,
	}).Get(ctx, &granted); err != nil {
		return TopUpResult{}, err
	}
	res.Granted, res.Duplicate, res.Balance, res.AccountID, res.Transaction = in.Amount, granted.Duplicate, granted.Balance, granted.AccountID, settled.Transaction
	_ = workflow.UpsertTypedSearchAttributes(ctx, AttrRunStatus.ValueSet(StatusSuccess))
	return res, nil
}
