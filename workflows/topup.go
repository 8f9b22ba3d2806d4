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
	// Replay (admission answers only): another caller's update came first,
	// so this one reports the grant as a duplicate, and Balance is the
	// balance then, not now.
	Replay bool `json:",omitempty"`
}

// TopUp settles the payment, then grants the credit: each step idempotent
// on its own (the payment by its recorded claim, the grant by the settled
// transaction), so retries, restarts and re-runs for the same payment
// settle once and grant once. A re-run after a refusal settles afresh:
// refusals such as an unfunded wallet are not final.
//
// Callers start it with its admission update (Update-with-Start) and read
// the answer from it; the first update is the caller the grant is
// reported to, every later one (a retry while it runs) a duplicate. Since
// ChangeTopUpAdmission the short database steps — recording the payment's
// intent first, granting last — are local activities, the facilitator's
// settlement an activity of its own; since ChangeTopUpLocalSettle the
// settlement is a local activity too, which records the intent itself.
func TopUp(ctx workflow.Context, in TopUpInput) (TopUpResult, error) {
	var answer *TopUpResult
	var failed error
	callers := 0
	if err := workflow.SetUpdateHandler(ctx, AdmissionUpdate, func(ctx workflow.Context) (TopUpResult, error) {
		callers++
		replay := callers > 1
		if err := workflow.Await(ctx, func() bool { return answer != nil || failed != nil }); err != nil {
			return TopUpResult{}, err
		}
		if failed != nil {
			return TopUpResult{}, failed
		}
		res := *answer
		res.Replay = replay && !res.Refused
		return res, nil
	}); err != nil {
		return TopUpResult{}, err
	}
	// Let every admission update read its answer before the workflow ends.
	defer func() { _ = workflow.Await(ctx, func() bool { return workflow.AllHandlersFinished(ctx) }) }()
	local := workflow.GetVersion(ctx, ChangeTopUpAdmission, workflow.DefaultVersion, 1) >= 1
	inline := local && workflow.GetVersion(ctx, ChangeTopUpLocalSettle, workflow.DefaultVersion, 1) >= 1
	res, err := topUp(ctx, in, local, inline)
	if err != nil {
		failed = err // the waiting updates fail too, so the workflow can end
		return TopUpResult{}, err
	}
	answer = &res
	return res, nil
}

func topUp(ctx workflow.Context, in TopUpInput, local, inline bool) (TopUpResult, error) {
	settle := activities.SettleInput{
		Payment: in.Payment, Requirements: in.Requirements, Amount: in.Amount, Resource: in.Resource,
		Purpose: "topup/" + TopUpTarget(in.AccountID),
	}
	var settled activities.SettleOutcome
	switch {
	case inline:
		// Settle is crash-safe on its own: it records the intent, marks
		// it submitted before asking the facilitator, and a re-execution
		// (a retry, or the whole workflow task again after its worker
		// died) reconciles with the chain before settling again. So it
		// may run in the workflow task, with the settlement's retries.
		lctx := workflow.WithLocalActivityOptions(ctx, workflow.LocalActivityOptions{StartToCloseTimeout: time.Minute, RetryPolicy: SettleRetry})
		if err := workflow.ExecuteLocalActivity(lctx, ActSettle, settle).Get(ctx, &settled); err != nil {
			return TopUpResult{}, err
		}
	case local:
		// The first step writes the payment's row; a payment the record
		// already answers (settled for this top-up, or another purchase's)
		// needs no settlement.
		if err := workflow.ExecuteLocalActivity(shortLocal(ctx), ActClaimPayment, settle).Get(ctx, &settled); err != nil {
			return TopUpResult{}, err
		}
	}
	if !inline && (!local || settled.Claimed) {
		sctx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: time.Minute, RetryPolicy: SettleRetry})
		if err := workflow.ExecuteActivity(sctx, ActSettle, settle).Get(ctx, &settled); err != nil {
			return TopUpResult{}, err
		}
	}
	res := TopUpResult{Network: in.Requirements.Network, Payer: settled.Payer}
	if !settled.Success {
		res.Refused, res.Reason, res.Message = true, settled.Reason, settled.Message
		_ = workflow.UpsertTypedSearchAttributes(ctx, AttrRunStatus.ValueSet(StatusRefused))
		return res, nil
	}
	grant := activities.GrantInput{
		AccountID: in.AccountID, Network: in.Requirements.Network, Payer: settled.Payer, Transaction: settled.Transaction, Amount: in.Amount,
	}
	var granted activities.GrantOutcome
	var fut workflow.Future
	if local {
		fut = workflow.ExecuteLocalActivity(shortLocal(ctx), ActGrant, grant)
	} else {
		fut = workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: time.Minute, RetryPolicy: ShortRetry}), ActGrant, grant)
	}
	if err := fut.Get(ctx, &granted); err != nil {
		return TopUpResult{}, err
	}
	res.Granted, res.Duplicate, res.Balance, res.AccountID, res.Transaction = in.Amount, granted.Duplicate, granted.Balance, granted.AccountID, settled.Transaction
	_ = workflow.UpsertTypedSearchAttributes(ctx, AttrRunStatus.ValueSet(StatusSuccess))
	return res, nil
}
