// Package topup holds the rules of the agent credit top-up (spec §4.5):
// who is credited (the bearer's account, checked before anything is
// settled, or the paying wallet's), which payment is taken, and the
// workflow that settles and grants it — started with its admission update
// (Update-with-Start), so the caller's answer is the workflow's and a
// payment presented again reaches the same workflow or its record.
//
// Like internal/runs it uses workflows/ only for names and inputs;
// nothing under workflows/ or activities/ imports it.
package topup

import (
	"context"
	"errors"
	"strings"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"conduit/internal/accounts"
	"conduit/internal/errs"
	"conduit/internal/logging"
	"conduit/internal/money"
	"conduit/internal/payments"
	"conduit/internal/store"
	"conduit/internal/temporalx"
	"conduit/internal/x402"
	"conduit/workflows"
)

// NotConfigured is the 503 of a deployment without x402 payments, in the
// spec's words.
const NotConfigured = "x402 payments are not configured on this deployment"

// Service sells credit for x402 payments.
type Service struct {
	Payments *payments.Service
	Accounts *accounts.Service
	Store    *store.Store
	Temporal client.Client
	// BaseURL is the API's public address (the challenge's resource).
	BaseURL string
}

// Request is one top-up call: its Authorization header (optional: picks
// the credited account) and its PAYMENT-SIGNATURE header.
type Request struct {
	Authorization string
	Payment       string
}

// Receipt is a top-up's answer. Only the call whose workflow made the
// grant reports it (Granted); every other one is a Duplicate.
type Receipt struct {
	Granted     money.Micros
	Duplicate   bool
	Balance     money.Micros
	Network     string
	Transaction string
	// Payer is the paying wallet as shown (checksummed on EVM).
	Payer string
}

// Buy takes the payment and credits it, once however often it is
// presented. Its refusals are *errs.Error: Unavailable (off), Unauthorized
// (a bearer that is wrong or lacks a pipelines: scope — checked before
// anything settles), PaymentRequired with the challenge (no, bad, spent
// or refused payment).
func (s *Service) Buy(ctx context.Context, r Request) (Receipt, error) {
	pay := s.Payments
	if !pay.Enabled() {
		return Receipt{}, errs.Unavailablef(NotConfigured)
	}
	accountID := ""
	if r.Authorization != "" {
		p, err := s.Accounts.Authenticate(ctx, r.Authorization)
		if err != nil && !errors.Is(err, accounts.ErrUnauthenticated) && !errors.Is(err, accounts.ErrNoCredentials) {
			return Receipt{}, err
		}
		if err != nil || !pipelinesScope(p) {
			return Receipt{}, errs.Unauthorizedf("Invalid or expired credentials")
		}
		accountID = p.AccountID
	}
	challenge := x402.Challenge(x402.ResourceInfo{
		URL: s.BaseURL + payments.TopUpPath, Description: "Add " + pay.TopUp.String() + " USD of prepaid credit", MimeType: "application/json",
	}, pay.TopUp, pay.Offers(), "")
	refuse := func(reason string) error {
		return &errs.Error{Kind: errs.PaymentRequired, Msg: reason, Challenge: challenge}
	}

	target := workflows.TopUpTarget(accountID)
	pp, err := pay.Take(ctx, r.Payment, challenge, payments.Purchase{Amount: pay.TopUp, Resource: payments.TopUpPath, Purpose: "topup/" + target})
	var refused *payments.Refused
	var redeemed *payments.Redeemed
	switch {
	case errors.As(err, &refused):
		return Receipt{}, refuse(refused.Msg)
	case errors.As(err, &redeemed):
		return Receipt{}, refuse(payments.MessageAlreadyUsed)
	case err != nil:
		return Receipt{}, err
	}
	res, err := s.run(ctx, pp, accountID, target)
	if err != nil {
		return Receipt{}, err
	}
	if res.Refused {
		return Receipt{}, refuse(res.Message)
	}
	// A caller that reached the workflow after another reports a duplicate
	// with the balance as it is now.
	rec := Receipt{Granted: res.Granted, Duplicate: res.Duplicate || res.Replay, Balance: res.Balance,
		Network: res.Network, Transaction: res.Transaction, Payer: x402.DisplayAddress(res.Network, res.Payer)}
	if res.Replay {
		if rec.Balance, err = s.Store.Balance(ctx, res.AccountID); err != nil {
			return Receipt{}, err
		}
	}
	if rec.Duplicate {
		rec.Granted = 0
	}
	return rec, nil
}

// run starts the payment's workflow — one per payment and credited account
// — with its admission update and waits for the answer. Presented again
// while it runs, the payment reaches the same workflow; after it ended, a
// new execution answers from the payment's record (or settles afresh after
// a refusal).
func (s *Service) run(ctx context.Context, pp payments.Presented, accountID, target string) (workflows.TopUpResult, error) {
	id := workflows.TopUpWorkflowID(pp.Network, pp.Payer, pp.ID, target)
	in := workflows.TopUpInput{Payment: pp.Payload, Requirements: pp.Requirements, Amount: s.Payments.TopUp, Resource: payments.TopUpPath, AccountID: accountID}
	log := logging.From(ctx).With("workflow_id", id)
	var res workflows.TopUpResult
	var err error
	// A workflow that closes just as a retry arrives refuses its update;
	// the next attempt starts a new execution, which finds the record.
	for attempt := 0; attempt < 3; attempt++ {
		start := s.Temporal.NewWithStartWorkflowOperation(client.StartWorkflowOptions{
			ID: id, TaskQueue: workflows.PaymentsQueue,
			WorkflowIDReusePolicy:    enumspb.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE,
			WorkflowIDConflictPolicy: enumspb.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING,
			TypedSearchAttributes: temporal.NewSearchAttributes(
				workflows.AttrKind.ValueSet("topup"), workflows.AttrNetwork.ValueSet(pp.Network),
				workflows.AttrPayer.ValueSet(x402.DisplayAddress(pp.Network, pp.Payer)), workflows.AttrRunStatus.ValueSet(workflows.StatusRunning),
			),
		}, workflows.WfTopUp, in)
		res, err = temporalx.Admit[workflows.TopUpResult](ctx, s.Temporal, start, client.UpdateWorkflowOptions{UpdateName: workflows.AdmissionUpdate})
		if err == nil || failedInWorkflow(err) || ctx.Err() != nil {
			break
		}
	}
	switch {
	case err == nil:
		return res, nil
	case failedInWorkflow(err):
		// The settlement or the grant gave up (its retries ended): the
		// payment's record says what an operator reconciles.
		log.Error("a top-up failed", "err", err)
		return res, err
	}
	// The same payment can be presented again safely: it is settled at
	// most once.
	log.Error("a top-up could not be started", "err", err)
	return res, errs.Unavailablef("the payment could not be processed now; nothing was settled, try again")
}

// failedInWorkflow says the workflow answered the update with its own
// failure (a step that gave up), not that it could not be reached.
func failedInWorkflow(err error) bool {
	var act *temporal.ActivityError
	var app *temporal.ApplicationError
	return errors.As(err, &act) || errors.As(err, &app)
}

// pipelinesScope: a top-up bearer must hold a pipelines: scope.
func pipelinesScope(p accounts.Principal) bool {
	for _, sc := range p.Scopes {
		if strings.HasPrefix(sc, "pipelines:") {
			return true
		}
	}
	return false
}
