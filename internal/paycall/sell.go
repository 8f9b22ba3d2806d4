package paycall

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"strings"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"conduit/internal/errs"
	"conduit/internal/logging"
	"conduit/internal/mediakind"
	"conduit/internal/money"
	"conduit/internal/payments"
	"conduit/internal/runs"
	"conduit/internal/store"
	"conduit/internal/temporalx"
	"conduit/internal/x402"
	"conduit/workflows"
)

// Purchase is a paid POST on a kind's endpoint.
type Purchase struct {
	Kind string
	// Decode reads the request body into its kind's request.
	Decode func(any) error
	// Payment is the payment-signature header ("" without one).
	Payment string
	// Limit counts the call against the paying wallet's rate limit once
	// its payment verified (forged headers cannot spend another wallet's
	// budget); a refusal stops the sale.
	Limit func(network, payer string) error
	// UnpaidFetch (may be nil) spends one image fetch from the caller's
	// budget of fetches for requests without a payment; a refusal stops
	// the request before anything is fetched.
	UnpaidFetch func() error
}

// Sold is a sale or retry accepted, or the already-paid answer.
type Sold struct {
	Answer
	// Settlement is the PAYMENT-RESPONSE of a settled payment.
	Settlement *x402.SettleResponse
	// Wait is the kind's default wait for this request; Async says the
	// buyer asked not to wait.
	Wait  time.Duration
	Async bool
}

// Sell validates and prices a request, takes its payment and starts its
// run as the workflow render/<runId>. Refusals: 503 while pay-per-call is
// off, the order's 4xx, 402 with the challenge without a (good) payment,
// 409 PAYMENT_ALREADY_REDEEMED for a payment already redeemed. The same
// request from the same wallet whose earlier file never reached it is
// answered with that file (alreadyPaid) and the payment is not taken.
func (s *Service) Sell(ctx context.Context, p Purchase) (Sold, error) {
	if err := s.selling(); err != nil {
		return Sold{}, err
	}
	k := s.kind(p.Kind)
	o, err := k.order(s, ctx, p)
	if err != nil {
		return Sold{}, err
	}
	pay := s.Payments
	challenge := x402.Challenge(x402.ResourceInfo{URL: s.BaseURL + k.Path, Description: o.description, MimeType: "application/json"}, o.price, pay.Offers(), "")
	runID := runs.NewRunID(time.Now())
	pp, err := pay.Take(ctx, p.Payment, challenge,
		payments.Purchase{Amount: o.price, Resource: k.Path, Purpose: workflows.RenderWorkflowID(runID)})
	var refused *payments.Refused
	var redeemed *payments.Redeemed
	switch {
	case errors.As(err, &refused):
		return Sold{}, paymentRequired(challenge, refused.Msg)
	case errors.As(err, &redeemed):
		return Sold{}, alreadyRedeemed(redeemed.Transaction)
	case err != nil:
		return Sold{}, err
	}
	if err := p.Limit(pp.Network, pp.Payer); err != nil {
		return Sold{}, err
	}
	hash := requestHash(k.Name, o.request)
	if a, ok, err := s.alreadyPaid(ctx, k, pp, hash); ok || err != nil {
		return Sold{Answer: a}, err
	}
	if o.image != nil {
		key := "images/" + sha256Hex(o.image.Bytes) + "." + o.image.Ext
		if _, err := s.Media.Blob.Put(ctx, key, o.image.ContentType, strings.NewReader(string(o.image.Bytes))); err != nil {
			logging.From(ctx).Error("storing the first frame failed", "err", err)
			return Sold{}, &errs.Error{Kind: errs.Unavailable, Code: "IMAGE_STORE_FAILED", Msg: "the image could not be stored; nothing was charged, try again"}
		}
		o.request.ImageKey = key
	}
	adm, err := s.start(ctx, k, workflows.RenderInput{
		Run: workflows.RenderRun{
			RunID: runID, Kind: k.Name, Request: o.request, RequestHash: hash, Network: pp.Network,
			Payer: pp.Payer, Price: o.price, StartedAt: time.Now().UTC(),
		},
		Payment: &pp.Payload, Requirements: pp.Requirements, Resource: k.Path,
	})
	switch {
	case err != nil:
		return Sold{}, err
	case adm.AlreadyRedeemed:
		return Sold{}, alreadyRedeemed(adm.Transaction) // a concurrent call claimed it first
	case adm.Failed != "":
		return Sold{}, errs.Unavailablef("%s", adm.Failed)
	case !adm.Accepted:
		return Sold{}, paymentRequired(challenge, adm.PaymentMessage)
	}
	return Sold{
		Answer:     s.pending(k, runID),
		Settlement: &x402.SettleResponse{Success: true, Transaction: adm.Run.Transaction, Network: pp.Network, Payer: x402.DisplayAddress(pp.Network, pp.Payer)},
		Wait:       s.wait(k, adm.Run.Request), Async: o.async,
	}, nil
}

// requestHash identifies "the same request" for alreadyPaid: every field
// the buyer chose, nothing derived.
func requestHash(kind string, r mediakind.Request) string {
	r.ImageKey, r.Characters = "", 0
	b, _ := json.Marshal(struct {
		Kind string            `json:"kind"`
		Req  mediakind.Request `json:"req"`
	}{kind, r})
	return sha256Hex(b)
}

func sha256Hex(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// paymentRequired is a 402 with the x402 challenge; reason says why.
func paymentRequired(challenge x402.PaymentRequired, reason string) error {
	return &errs.Error{Kind: errs.PaymentRequired, Msg: reason, Challenge: challenge}
}

// alreadyRedeemed is 409 PAYMENT_ALREADY_REDEEMED: the payment was claimed
// by another purchase (transaction is its settlement, once there is one).
func alreadyRedeemed(transaction string) error {
	extra := map[string]any{}
	if transaction != "" {
		extra["transaction"] = transaction
	}
	return &errs.Error{Kind: errs.Conflict, Code: "PAYMENT_ALREADY_REDEEMED",
		Msg: "this payment was already redeemed; sign a new payment for a new request", Extra: extra}
}

// alreadyPaid answers with the wallet's earlier run of the same request
// when its finished file never reached the caller (no complete answer
// carrying the file URL was written and the file was never downloaded).
// The payment must verify — it proves the caller holds the wallet — but
// it is not settled.
func (s *Service) alreadyPaid(ctx context.Context, k Kind, pp payments.Presented, hash string) (Answer, bool, error) {
	prev, err := s.Store.UndeliveredPurchase(ctx, pp.Network, pp.Payer, k.Name, hash)
	if errors.Is(err, store.ErrNotFound) {
		return Answer{}, false, nil
	}
	if err != nil {
		return Answer{}, false, err
	}
	v, err := s.Payments.Facilitator.Verify(ctx, pp.Payload, pp.Requirements)
	if err != nil || !v.IsValid {
		return Answer{}, false, nil // settlement will refuse it with the facilitator's words
	}
	a := s.answer(ctx, k, prev)
	a.Record["paidUsd"] = money.Micros(0)
	a.Record["alreadyPaid"] = map[string]any{"runId": prev.RunID, "boughtAt": prev.StartedAt.UTC().Format(time.RFC3339Nano)}
	return a, true, nil
}

// wait is the kind's default wait for a request.
func (s *Service) wait(k Kind, r mediakind.Request) time.Duration {
	return s.Media.Generation().Wait(k.Name, r.Model, r.Seconds)
}

// start starts the run's workflow with its admission update and waits
// for the answer (the payment settled or refused, the retry accepted or
// refused). A failure to learn it is a 503 naming the statusUrl: if a
// payment was taken, the run finishes on its own there.
func (s *Service) start(ctx context.Context, k Kind, in workflows.RenderInput) (workflows.Admission, error) {
	r := in.Run.Request
	in.Deadline = s.Media.Generation().Deadline(k.Name, r.Model, r.Seconds)
	in.Collect = 2 * in.Deadline
	in.HeartbeatTimeout = s.Media.HeartbeatTimeout
	attrs := []temporal.SearchAttributeUpdate{
		workflows.AttrKind.ValueSet(k.Name), workflows.AttrModel.ValueSet(r.Model), workflows.AttrRunStatus.ValueSet(workflows.StatusRunning),
	}
	if in.Run.Network != "" { // a paid run; a retry learns its wallet on admission
		attrs = append(attrs, workflows.AttrNetwork.ValueSet(in.Run.Network), workflows.AttrPayer.ValueSet(x402.DisplayAddress(in.Run.Network, in.Run.Payer)))
	}
	start := s.Temporal.NewWithStartWorkflowOperation(client.StartWorkflowOptions{
		ID: workflows.RenderWorkflowID(in.Run.RunID), TaskQueue: workflows.RenderQueue,
		WorkflowIDReusePolicy:    enumspb.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE,
		WorkflowIDConflictPolicy: enumspb.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING,
		TypedSearchAttributes:    temporal.NewSearchAttributes(attrs...),
	}, workflows.WfRender, in)
	waitCtx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	adm, err := temporalx.Admit[workflows.Admission](waitCtx, s.Temporal, start, client.UpdateWorkflowOptions{UpdateName: workflows.AdmissionUpdate})
	if err != nil {
		logging.From(ctx).Error("starting a render failed", "run", in.Run.RunID, "err", err)
		return adm, &errs.Error{Kind: errs.Unavailable, Msg: "the request could not be processed now; if a payment was taken the run finishes on its own at statusUrl",
			Extra: map[string]any{"statusUrl": s.statusURL(k, in.Run.RunID)}}
	}
	return adm, nil
}
