// Package checkout sells credit packs (spec §8) for card payments through
// a payment provider: Stripe Checkout Sessions, or the embedded local
// checkout that plays Stripe's flow in TEST MODE. Both send the same
// signed webhook (Stripe's checkout.session.completed, signed with
// Stripe's scheme), which this package verifies; a verified, paid,
// consistent event starts the PackPurchase workflow pack/<session id>,
// whose id-reuse policy makes a replayed webhook start nothing. The
// account and price come from our own record of the session, never from
// the webhook alone.
package checkout

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/stripe/stripe-go/v85"
	"github.com/stripe/stripe-go/v85/webhook"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"conduit/internal/accounts"
	"conduit/internal/errs"
	"conduit/internal/money"
	"conduit/internal/store"
	"conduit/workflows"
)

// Pack is a credit pack on sale: its id is its price in whole USD.
type Pack struct {
	ID     string
	Price  money.Micros
	Credit money.Micros
}

// Packs lists the packs, cheapest first (accounts.Packs).
func Packs() []Pack {
	paid := make([]money.Micros, 0, len(accounts.Packs))
	for p := range accounts.Packs {
		paid = append(paid, p)
	}
	slices.Sort(paid)
	out := make([]Pack, 0, len(paid))
	for _, p := range paid {
		out = append(out, Pack{ID: p.String(), Price: p, Credit: accounts.Packs[p]})
	}
	return out
}

// PackByID finds a pack by its id ("10", "25", "50").
func PackByID(id string) (Pack, bool) {
	for _, p := range Packs() {
		if p.ID == id {
			return p, true
		}
	}
	return Pack{}, false
}

// Cents is a pack price in the provider's minor unit.
func Cents(m money.Micros) int64 { return int64(m / money.Cents(1)) }

// Request is a checkout to open: the buyer's account, the pack, and where
// the provider sends the buyer back (absolute URLs; {CHECKOUT_SESSION_ID}
// in SuccessURL is replaced by the session's id, as Stripe does).
type Request struct {
	AccountID  string
	Pack       Pack
	SuccessURL string
	CancelURL  string
	ExpiresAt  time.Time
}

// Opened is a session the provider opened: where the buyer pays.
type Opened struct {
	ID        string
	URL       string
	ExpiresAt time.Time
}

// Provider opens checkout sessions at a payment provider.
type Provider interface {
	// Name is "local" or "stripe".
	Name() string
	// Livemode says whether payments are real: the webhook's livemode must
	// agree.
	Livemode() bool
	Open(ctx context.Context, r Request) (Opened, error)
}

// Service opens checkouts and turns verified webhooks into pack grants.
type Service struct {
	Store    *store.Store
	Temporal client.Client
	// Provider is nil when card payments are off.
	Provider      Provider
	WebhookSecret string
	Tolerance     time.Duration
	SessionTTL    time.Duration
	Log           *slog.Logger
	// Now is the clock (time.Now when nil).
	Now func() time.Time
}

func (s *Service) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}

// ErrOff answers the checkout routes when card payments are off.
var ErrOff = &errs.Error{Kind: errs.Unavailable, Msg: "card payments are not configured on this deployment (checkout.provider); an operator can record a pack with `conduit account pack`"}

// Enabled reports whether card payments are on.
func (s *Service) Enabled() bool { return s != nil && s.Provider != nil }

// Open opens a checkout of pack for account and records it. successURL
// and cancelURL are absolute.
func (s *Service) Open(ctx context.Context, account, packID, successURL, cancelURL string) (store.CheckoutSession, error) {
	if !s.Enabled() {
		return store.CheckoutSession{}, ErrOff
	}
	pack, ok := PackByID(packID)
	if !ok {
		ids := make([]string, 0, 3)
		for _, p := range Packs() {
			ids = append(ids, p.ID)
		}
		return store.CheckoutSession{}, errs.Invalidf("pack %q is not on sale (packs: %s)", packID, strings.Join(ids, ", "))
	}
	ttl := s.SessionTTL
	if ttl <= 0 {
		ttl = 24 * time.Hour
	}
	opened, err := s.Provider.Open(ctx, Request{AccountID: account, Pack: pack, SuccessURL: successURL, CancelURL: cancelURL, ExpiresAt: s.now().Add(ttl)})
	if err != nil {
		return store.CheckoutSession{}, err
	}
	return s.Store.CreateCheckoutSession(ctx, store.CheckoutSession{
		ID: opened.ID, Provider: s.Provider.Name(), AccountID: account, Pack: pack.ID, Price: pack.Price, Credit: pack.Credit,
		Currency: "usd", URL: opened.URL, SuccessURL: successURL, CancelURL: cancelURL, ExpiresAt: opened.ExpiresAt,
	})
}

// Outcome says what a verified webhook did.
type Outcome struct {
	// Started: the pack's workflow was started. Duplicate: it had been
	// started before (a replayed or repeated event); nothing new happens.
	Started, Duplicate bool
	// Ignored says why an event needs nothing (another type, unpaid, a
	// session this service did not open).
	Ignored   string
	SessionID string
}

// SignatureHeader is the header Stripe (and the local checkout) sign
// webhooks in.
const SignatureHeader = "Stripe-Signature"

// Webhook verifies a webhook (Stripe's signature scheme, within the
// tolerance), keeps the event, and for a paid checkout.session.completed
// (or async_payment_succeeded) of a session we opened, whose amount,
// currency, account and mode agree with our record, starts the pack's
// workflow. A bad signature or an inconsistent event is an Invalid error
// and changes nothing.
func (s *Service) Webhook(ctx context.Context, payload []byte, signature string) (Outcome, error) {
	if !s.Enabled() {
		return Outcome{}, ErrOff
	}
	ev, err := webhook.ConstructEventWithOptions(payload, signature, s.WebhookSecret, webhook.ConstructEventOptions{Tolerance: s.Tolerance})
	if err != nil {
		return Outcome{}, errs.Invalidf("webhook refused: %s", signatureProblem(err))
	}
	if ev.Type != stripe.EventTypeCheckoutSessionCompleted && ev.Type != stripe.EventTypeCheckoutSessionAsyncPaymentSucceeded {
		return Outcome{Ignored: "event type " + string(ev.Type) + " needs nothing"}, nil
	}
	var cs stripe.CheckoutSession
	if ev.Data == nil || json.Unmarshal(ev.Data.Raw, &cs) != nil || cs.ID == "" {
		return Outcome{}, errs.Invalidf("webhook refused: the event carries no checkout session")
	}
	out := Outcome{SessionID: cs.ID}
	if _, err := s.Store.RecordCheckoutEvent(ctx, store.CheckoutEvent{ID: ev.ID, SessionID: cs.ID, Type: string(ev.Type), Payload: payload, Signature: signature}); err != nil {
		return out, err
	}
	if cs.PaymentStatus != stripe.CheckoutSessionPaymentStatusPaid {
		out.Ignored = "the session is not paid yet (payment_status " + string(cs.PaymentStatus) + ")"
		return out, nil
	}
	ours, err := s.Store.CheckoutSessionByID(ctx, cs.ID)
	if errors.Is(err, store.ErrNotFound) {
		s.log().Warn("webhook for a checkout session this service did not open", "session", cs.ID)
		out.Ignored = "no checkout session " + cs.ID + " was opened here"
		return out, nil
	}
	if err != nil {
		return out, err
	}
	if problem := mismatch(ours, cs, ev.Livemode, s.Provider); problem != "" {
		s.log().Error("webhook disagrees with the checkout we opened; nothing granted", "session", cs.ID, "problem", problem)
		return out, errs.Invalidf("webhook refused: %s", problem)
	}
	_, err = s.Temporal.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID: workflows.PackWorkflowID(ours.ID), TaskQueue: workflows.PaymentsQueue,
		WorkflowIDReusePolicy:                    enumspb.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE_FAILED_ONLY,
		WorkflowExecutionErrorWhenAlreadyStarted: true,
		TypedSearchAttributes: temporal.NewSearchAttributes(
			workflows.AttrKind.ValueSet("pack"), workflows.AttrRunStatus.ValueSet(workflows.StatusRunning),
		),
	}, workflows.WfPackPurchase, workflows.PackInput{SessionID: ours.ID, AccountID: ours.AccountID, Paid: ours.Price})
	var started *serviceerror.WorkflowExecutionAlreadyStarted
	switch {
	case errors.As(err, &started):
		out.Duplicate = true
	case err != nil:
		return out, &errs.Error{Kind: errs.Unavailable, Msg: "the payment could not be processed now; the provider will deliver the webhook again", RetryAfter: 5 * time.Second}
	default:
		out.Started = true
		s.log().Info("pack purchase started", "session", ours.ID, "account_id", ours.AccountID, "pack", ours.Pack)
	}
	return out, nil
}

// mismatch compares a paid session's event with our record of it.
func mismatch(ours store.CheckoutSession, cs stripe.CheckoutSession, livemode bool, p Provider) string {
	switch {
	case ours.Provider != p.Name():
		return fmt.Sprintf("session %s was opened with the %s provider, not %s", ours.ID, ours.Provider, p.Name())
	case livemode != p.Livemode() || cs.Livemode != p.Livemode():
		return fmt.Sprintf("livemode %t does not match this deployment's provider (%t)", livemode, p.Livemode())
	case cs.AmountTotal != Cents(ours.Price):
		return fmt.Sprintf("amount_total %d does not match the pack's price %d cents", cs.AmountTotal, Cents(ours.Price))
	case !strings.EqualFold(string(cs.Currency), ours.Currency):
		return fmt.Sprintf("currency %q does not match %q", cs.Currency, ours.Currency)
	case cs.ClientReferenceID != "" && cs.ClientReferenceID != ours.AccountID:
		return "client_reference_id does not match the session's account"
	case cs.Mode != "" && cs.Mode != stripe.CheckoutSessionModePayment:
		return fmt.Sprintf("mode %q is not payment", cs.Mode)
	}
	return ""
}

// signatureProblem says what was wrong with a signature without echoing
// anything the sender controls.
func signatureProblem(err error) string {
	switch {
	case errors.Is(err, webhook.ErrNotSigned):
		return "no " + SignatureHeader + " header"
	case errors.Is(err, webhook.ErrInvalidHeader):
		return "malformed " + SignatureHeader + " header"
	case errors.Is(err, webhook.ErrTooOld):
		return "signature timestamp outside the tolerance"
	case errors.Is(err, webhook.ErrNoValidSignature):
		return "no valid signature"
	}
	return "the body is not a webhook event this service understands"
}

func (s *Service) log() *slog.Logger {
	if s.Log != nil {
		return s.Log
	}
	return slog.Default()
}
