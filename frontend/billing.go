package frontend

import (
	"conduit/internal/errs"
	"errors"
	"net/http"
	"strings"

	"github.com/gin-gonic/gin"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"conduit/internal/accounts"
	"conduit/internal/payments"
	"conduit/internal/x402"
	"conduit/workflows"
)

const notConfigured = "x402 payments are not configured on this deployment"

// topUp: POST /api/billing/credits/x402 (spec §4.5). The bearer, when
// sent, is checked before anything is settled; the settlement and the
// grant run as the workflow topup/<network>/<payer>/<nonce>/<account>,
// keyed only once the payment's signature verified.
func (s *Server) topUp(c *gin.Context) {
	pay := s.deps.Payments
	if !pay.Enabled() {
		fail(c, errorf(http.StatusServiceUnavailable, notConfigured))
		return
	}
	ctx := c.Request.Context()
	accountID := ""
	if h := c.GetHeader("Authorization"); h != "" {
		p, err := s.deps.Accounts.Authenticate(ctx, h)
		if err != nil && !errors.Is(err, accounts.ErrUnauthenticated) && !errors.Is(err, accounts.ErrNoCredentials) {
			fail(c, err)
			return
		}
		if err != nil || !hasPipelinesScope(p) {
			fail(c, errorf(http.StatusUnauthorized, "Invalid or expired credentials"))
			return
		}
		accountID = p.AccountID
	}
	challenge := x402.Challenge(x402.ResourceInfo{
		URL: s.url(payments.TopUpPath), Description: "Add " + pay.TopUp.String() + " USD of prepaid credit", MimeType: "application/json",
	}, pay.TopUp, pay.Offers(), "")

	target := workflows.TopUpTarget(accountID)
	pp, err := pay.Take(ctx, c.GetHeader(x402.HeaderPaymentSignature), challenge,
		payments.Purchase{Amount: pay.TopUp, Resource: payments.TopUpPath, Purpose: "topup/" + target})
	var refused *payments.Refused
	var redeemed *payments.Redeemed
	switch {
	case errors.As(err, &refused):
		s.paymentRequired(c, challenge, refused.Msg)
		return
	case errors.As(err, &redeemed):
		s.paymentRequired(c, challenge, payments.MessageAlreadyUsed)
		return
	case err != nil:
		fail(c, err)
		return
	}
	// One workflow per payment and credited account. Presented again while
	// it runs, the caller waits for it; after it ended, a new run answers
	// from the payment's record (or settles afresh after a refusal).
	id := workflows.TopUpWorkflowID(pp.Network, pp.Payer, pp.ID, target)
	run, err := s.deps.Temporal.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID: id, TaskQueue: workflows.PaymentsQueue,
		WorkflowIDReusePolicy:                    enumspb.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE,
		WorkflowExecutionErrorWhenAlreadyStarted: true,
		TypedSearchAttributes: temporal.NewSearchAttributes(
			workflows.AttrKind.ValueSet("topup"), workflows.AttrNetwork.ValueSet(pp.Network),
			workflows.AttrPayer.ValueSet(x402.DisplayAddress(pp.Network, pp.Payer)), workflows.AttrRunStatus.ValueSet(workflows.StatusRunning),
		),
	}, workflows.WfTopUp, workflows.TopUpInput{Payment: pp.Payload, Requirements: pp.Requirements, Amount: pay.TopUp, Resource: payments.TopUpPath, AccountID: accountID})
	replay := false
	var started *serviceerror.WorkflowExecutionAlreadyStarted
	if errors.As(err, &started) {
		replay, run, err = true, s.deps.Temporal.GetWorkflow(ctx, id, ""), nil
	}
	if err != nil {
		fail(c, errorf(http.StatusServiceUnavailable, "the payment could not be processed now; nothing was settled, try again"))
		return
	}
	var res workflows.TopUpResult
	if err := run.Get(ctx, &res); err != nil {
		fail(c, err)
		return
	}
	if res.Refused {
		s.paymentRequired(c, challenge, res.Message)
		return
	}
	bal := res.Balance
	if replay {
		if bal, err = s.deps.Store.Balance(ctx, res.AccountID); err != nil {
			fail(c, err)
			return
		}
	}
	// Only the call whose workflow made the grant reports it.
	duplicate := res.Duplicate || replay
	granted := res.Granted
	if duplicate {
		granted = 0
	}
	payer := x402.DisplayAddress(res.Network, res.Payer)
	if h, err := x402.EncodeHeader(x402.SettleResponse{Success: true, Transaction: res.Transaction, Network: res.Network, Payer: payer}); err == nil {
		c.Header(x402.HeaderPaymentResponse, h)
	}
	c.JSON(http.StatusOK, gin.H{
		"grantedUsd": granted, "duplicate": duplicate, "balanceUsd": bal,
		"network": res.Network, "transaction": res.Transaction, "payer": payer,
	})
}

// paymentRequired answers 402 with the challenge in PAYMENT-REQUIRED (and
// in the body, for v1-style readers); reason says why.
func (s *Server) paymentRequired(c *gin.Context, challenge x402.PaymentRequired, reason string) {
	fail(c, &errs.Error{Kind: errs.PaymentRequired, Msg: reason, Challenge: challenge})
}

func hasPipelinesScope(p accounts.Principal) bool {
	for _, sc := range p.Scopes {
		if strings.HasPrefix(sc, "pipelines:") {
			return true
		}
	}
	return false
}
