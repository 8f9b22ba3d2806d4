package workflows

import (
	"context"
	"testing"

	"github.com/stretchr/testify/mock"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"conduit/activities"
	"conduit/internal/money"
	"conduit/internal/x402"
)

// topUpEnv registers the top-up's activities under their names and
// counts the settlements and grants the workflow asks for.
type topUpEnv struct {
	*testsuite.TestWorkflowEnvironment
	claims, settles, grants int
	settleErr               error
	answers                 []TopUpResult
	errs                    []error
}

func newTopUpEnv(claim activities.SettleOutcome, settle activities.SettleOutcome) *topUpEnv {
	var s testsuite.WorkflowTestSuite
	e := &topUpEnv{TestWorkflowEnvironment: s.NewTestWorkflowEnvironment()}
	p := &activities.Payments{}
	e.RegisterActivityWithOptions(p.Claim, activity.RegisterOptions{Name: ActClaimPayment})
	e.RegisterActivityWithOptions(p.Settle, activity.RegisterOptions{Name: ActSettle})
	e.RegisterActivityWithOptions(p.Grant, activity.RegisterOptions{Name: ActGrant})
	e.OnActivity(ActClaimPayment, mock.Anything, mock.Anything).Return(func(_ context.Context, in activities.SettleInput) (activities.SettleOutcome, error) {
		e.claims++
		return claim, nil
	})
	e.OnActivity(ActSettle, mock.Anything, mock.Anything).Return(func(_ context.Context, in activities.SettleInput) (activities.SettleOutcome, error) {
		e.settles++
		return settle, e.settleErr
	})
	e.OnActivity(ActGrant, mock.Anything, mock.Anything).Return(func(_ context.Context, in activities.GrantInput) (activities.GrantOutcome, error) {
		e.grants++
		return activities.GrantOutcome{AccountID: "acct_1", Balance: 10 * money.USD, Duplicate: e.grants > 1}, nil
	})
	return e
}

// beforeLocalSettle makes the workflow take the path of the executions
// started before ChangeTopUpLocalSettle: a claim step, then the settlement
// as an activity of its own.
func (e *topUpEnv) beforeLocalSettle() *topUpEnv {
	e.OnGetVersion(ChangeTopUpLocalSettle, workflow.DefaultVersion, 1).Return(workflow.DefaultVersion)
	return e
}

// ask sends n admission updates, as n callers presenting the payment.
func (e *topUpEnv) ask(n int) {
	e.RegisterDelayedCallback(func() {
		for range n {
			e.UpdateWorkflow(AdmissionUpdate, "", &testsuite.TestUpdateCallback{
				OnAccept: func() {}, OnReject: func(err error) { e.errs = append(e.errs, err) },
				OnComplete: func(v any, err error) {
					if err != nil {
						e.errs = append(e.errs, err)
						return
					}
					e.answers = append(e.answers, v.(TopUpResult))
				},
			})
		}
	}, 0)
}

var topUpIn = TopUpInput{Requirements: x402.PaymentRequirements{Network: "eip155:8453"}, Amount: 5 * money.USD, Resource: "/api/billing/credits/x402", AccountID: "acct_1"}

// A new payment is claimed, settled and granted once; of two callers
// only the first is told of the grant, the other is a replay.
func TestTopUpSettlesAndGrantsOnce(t *testing.T) {
	e := newTopUpEnv(activities.SettleOutcome{Claimed: true, Payer: "0xAA"}, activities.SettleOutcome{Success: true, Transaction: "0xtx", Payer: "0xAA"}).beforeLocalSettle()
	e.ask(2)
	e.ExecuteWorkflow(TopUp, topUpIn)
	var res TopUpResult
	if e.GetWorkflowError() != nil || e.GetWorkflowResult(&res) != nil {
		t.Fatalf("workflow: %v", e.GetWorkflowError())
	}
	if e.settles != 1 || e.grants != 1 || res.Granted != 5*money.USD || res.Duplicate || res.Transaction != "0xtx" || res.Balance != 10*money.USD {
		t.Fatalf("settles %d grants %d result %+v", e.settles, e.grants, res)
	}
	if len(e.errs) != 0 || len(e.answers) != 2 || e.answers[0].Replay || !e.answers[1].Replay || e.answers[1].Transaction != "0xtx" {
		t.Fatalf("answers %+v errors %v", e.answers, e.errs)
	}
}

// A payment its record already settles for this top-up (presented again
// after its workflow ended) is not settled again: the grant answers it.
func TestTopUpOfASettledPaymentSkipsTheFacilitator(t *testing.T) {
	e := newTopUpEnv(activities.SettleOutcome{Success: true, Transaction: "0xtx", Payer: "0xAA"}, activities.SettleOutcome{}).beforeLocalSettle()
	e.ask(1)
	e.ExecuteWorkflow(TopUp, topUpIn)
	if e.GetWorkflowError() != nil || e.settles != 0 || e.grants != 1 || len(e.answers) != 1 || e.answers[0].Transaction != "0xtx" {
		t.Fatalf("workflow %v settles %d grants %d answers %+v", e.GetWorkflowError(), e.settles, e.grants, e.answers)
	}
}

// A payment another purchase claimed, or the facilitator refused, grants
// nothing and says why.
func TestTopUpRefusals(t *testing.T) {
	e := newTopUpEnv(activities.SettleOutcome{AlreadyRedeemed: true, Message: "invalid_payload: authorization nonce already submitted"}, activities.SettleOutcome{}).beforeLocalSettle()
	e.ask(1)
	e.ExecuteWorkflow(TopUp, topUpIn)
	if e.settles != 0 || e.grants != 0 || len(e.answers) != 1 || !e.answers[0].Refused || e.answers[0].Message != "invalid_payload: authorization nonce already submitted" {
		t.Fatalf("settles %d grants %d answers %+v", e.settles, e.grants, e.answers)
	}

	e = newTopUpEnv(activities.SettleOutcome{Claimed: true}, activities.SettleOutcome{Reason: "insufficient_funds", Message: "invalid_payload: execution reverted"}).beforeLocalSettle()
	e.ask(2)
	e.ExecuteWorkflow(TopUp, topUpIn)
	if e.settles != 1 || e.grants != 0 || len(e.answers) != 2 || !e.answers[1].Refused || e.answers[1].Replay {
		t.Fatalf("settles %d grants %d answers %+v", e.settles, e.grants, e.answers)
	}
}

// A settlement that gives up fails the workflow and every waiting caller.
func TestTopUpSettlementFailureReachesTheCaller(t *testing.T) {
	e := newTopUpEnv(activities.SettleOutcome{Claimed: true}, activities.SettleOutcome{}).beforeLocalSettle()
	e.settleErr = temporal.NewNonRetryableApplicationError("database gone", activities.ErrPermanent, nil)
	e.ask(1)
	e.ExecuteWorkflow(TopUp, topUpIn)
	if e.GetWorkflowError() == nil || len(e.errs) != 1 || e.grants != 0 {
		t.Fatalf("workflow %v errors %v grants %d", e.GetWorkflowError(), e.errs, e.grants)
	}
}

// Since ChangeTopUpLocalSettle the settlement is the first step (it
// records the intent itself): no claim step; settled and granted once,
// the second caller a replay.
func TestTopUpSettlesLocallyAndGrantsOnce(t *testing.T) {
	e := newTopUpEnv(activities.SettleOutcome{}, activities.SettleOutcome{Success: true, Transaction: "0xtx", Payer: "0xAA"})
	e.ask(2)
	e.ExecuteWorkflow(TopUp, topUpIn)
	var res TopUpResult
	if e.GetWorkflowError() != nil || e.GetWorkflowResult(&res) != nil {
		t.Fatalf("workflow: %v", e.GetWorkflowError())
	}
	if e.claims != 0 || e.settles != 1 || e.grants != 1 || res.Granted != 5*money.USD || res.Duplicate || res.Transaction != "0xtx" {
		t.Fatalf("claims %d settles %d grants %d result %+v", e.claims, e.settles, e.grants, res)
	}
	if len(e.errs) != 0 || len(e.answers) != 2 || e.answers[0].Replay || !e.answers[1].Replay {
		t.Fatalf("answers %+v errors %v", e.answers, e.errs)
	}
}

// A local settlement's refusal (spent elsewhere, or refused by the
// facilitator) grants nothing and says why; its failure fails every
// waiting caller.
func TestTopUpLocalSettlementRefusalsAndFailure(t *testing.T) {
	for _, out := range []activities.SettleOutcome{
		{AlreadyRedeemed: true, Reason: x402.ReasonNonceUsed, Message: "invalid_payload: authorization nonce already submitted"},
		{Reason: "insufficient_funds", Message: "invalid_payload: execution reverted"},
	} {
		e := newTopUpEnv(activities.SettleOutcome{}, out)
		e.ask(1)
		e.ExecuteWorkflow(TopUp, topUpIn)
		if e.claims != 0 || e.settles != 1 || e.grants != 0 || len(e.answers) != 1 || !e.answers[0].Refused || e.answers[0].Message != out.Message {
			t.Fatalf("claims %d settles %d grants %d answers %+v", e.claims, e.settles, e.grants, e.answers)
		}
	}
	e := newTopUpEnv(activities.SettleOutcome{}, activities.SettleOutcome{})
	e.settleErr = temporal.NewNonRetryableApplicationError("database gone", activities.ErrPermanent, nil)
	e.ask(1)
	e.ExecuteWorkflow(TopUp, topUpIn)
	if e.GetWorkflowError() == nil || len(e.errs) != 1 || e.grants != 0 || e.settles != 1 {
		t.Fatalf("workflow %v errors %v settles %d grants %d", e.GetWorkflowError(), e.errs, e.settles, e.grants)
	}
}
