package checkout

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/stripe/stripe-go/v85"
	"github.com/stripe/stripe-go/v85/webhook"

	"conduit/internal/errs"
	"conduit/internal/store"
)

// LocalPagePath is where the local checkout's pages live
// (LocalPagePath + <session id>).
const LocalPagePath = "/dashboard/checkout/"

// Local is the embedded checkout: TEST MODE, no card is charged, and a
// paid session buys real credit on this deployment. It plays Stripe's
// flow: sessions cs_test_…, a hosted page (LocalPagePath) where the buyer
// "pays" with a fake card, and then a checkout.session.completed event
// signed exactly as Stripe signs (Stripe-Signature: t=…,v1=HMAC-SHA256
// of "t.payload" with the webhook secret) delivered to the webhook route.
type Local struct {
	// BaseURL is this deployment's public address.
	BaseURL string
	// Secret signs the events (checkout.webhook_secret).
	Secret string
}

// Name is "local".
func (l *Local) Name() string { return "local" }

// Livemode is false: nothing is charged.
func (l *Local) Livemode() bool { return false }

// Open makes a session id and the page to pay it on.
func (l *Local) Open(_ context.Context, r Request) (Opened, error) {
	id := "cs_test_" + randomToken(24)
	return Opened{ID: id, URL: strings.TrimRight(l.BaseURL, "/") + LocalPagePath + id, ExpiresAt: r.ExpiresAt.Truncate(time.Second)}, nil
}

func randomToken(n int) string {
	b := make([]byte, n/2)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// Session is a checkout as it is recorded.
type Session = store.CheckoutSession

// Local is the local provider when card payments use it, else nil.
func (s *Service) Local() *Local {
	if !s.Enabled() {
		return nil
	}
	l, _ := s.Provider.(*Local)
	return l
}

// LocalSession is account's open checkout id of the local provider, for
// its TEST MODE page. Refusals: NotFound when account has no such local
// checkout, Conflict once it is paid, Gone once it expired or closed.
func (s *Service) LocalSession(ctx context.Context, account, id string) (Session, error) {
	local := s.Local()
	if local == nil {
		return Session{}, errs.NotFoundf("This deployment does not use the local test checkout.")
	}
	cs, err := s.Store.CheckoutSessionByID(ctx, id)
	if errors.Is(err, store.ErrNotFound) || (err == nil && (cs.AccountID != account || cs.Provider != local.Name())) {
		return Session{}, errs.NotFoundf("There is no such checkout for your account.")
	}
	if err != nil {
		return Session{}, err
	}
	switch {
	case cs.Status == "complete":
		return cs, errs.Conflictf("This checkout is paid; its pack is on your balance.")
	case cs.Status != "open" || s.now().After(cs.ExpiresAt):
		return cs, errs.New(errs.Gone, "This checkout has expired; start a new one from the credits page.")
	}
	return cs, nil
}

// SuccessURL is where the buyer goes after paying: the session's success
// URL with {CHECKOUT_SESSION_ID} replaced, as Stripe does.
func SuccessURL(cs store.CheckoutSession) string {
	return strings.ReplaceAll(cs.SuccessURL, "{CHECKOUT_SESSION_ID}", cs.ID)
}

// event is a Stripe event as its webhook carries it.
type event struct {
	ID              string          `json:"id"`
	Object          string          `json:"object"`
	APIVersion      string          `json:"api_version"`
	Created         int64           `json:"created"`
	Data            eventData       `json:"data"`
	Livemode        bool            `json:"livemode"`
	PendingWebhooks int             `json:"pending_webhooks"`
	Request         json.RawMessage `json:"request"`
	Type            string          `json:"type"`
}

type eventData struct {
	Object sessionObject `json:"object"`
}

// sessionObject is the Checkout Session object's fields this service and
// Stripe's own clients read.
type sessionObject struct {
	ID                string            `json:"id"`
	Object            string            `json:"object"`
	AmountSubtotal    int64             `json:"amount_subtotal"`
	AmountTotal       int64             `json:"amount_total"`
	CancelURL         string            `json:"cancel_url"`
	ClientReferenceID string            `json:"client_reference_id"`
	Created           int64             `json:"created"`
	Currency          string            `json:"currency"`
	ExpiresAt         int64             `json:"expires_at"`
	Livemode          bool              `json:"livemode"`
	Metadata          map[string]string `json:"metadata"`
	Mode              string            `json:"mode"`
	PaymentIntent     *string           `json:"payment_intent"`
	PaymentStatus     string            `json:"payment_status"`
	Status            string            `json:"status"`
	SuccessURL        string            `json:"success_url"`
	URL               *string           `json:"url"`
}

// Completed is the checkout.session.completed event of a paid session,
// and the Stripe-Signature header signing it at now.
func (l *Local) Completed(cs store.CheckoutSession, now time.Time) (payload []byte, signature string, err error) {
	pi := "pi_test_" + randomToken(24)
	ev := event{
		ID: "evt_test_" + randomToken(24), Object: "event", APIVersion: stripe.APIVersion, Created: now.Unix(), Livemode: false,
		PendingWebhooks: 1, Request: json.RawMessage(`{"id":null,"idempotency_key":null}`), Type: string(stripe.EventTypeCheckoutSessionCompleted),
		Data: eventData{Object: sessionObject{
			ID: cs.ID, Object: "checkout.session", AmountSubtotal: Cents(cs.Price), AmountTotal: Cents(cs.Price),
			CancelURL: cs.CancelURL, ClientReferenceID: cs.AccountID, Created: cs.CreatedAt.Unix(), Currency: cs.Currency,
			ExpiresAt: cs.ExpiresAt.Unix(), Livemode: false, Metadata: map[string]string{"account_id": cs.AccountID, "pack": cs.Pack},
			Mode: string(stripe.CheckoutSessionModePayment), PaymentIntent: &pi, PaymentStatus: string(stripe.CheckoutSessionPaymentStatusPaid),
			Status: string(stripe.CheckoutSessionStatusComplete), SuccessURL: cs.SuccessURL,
		}},
	}
	if payload, err = json.MarshalIndent(ev, "", "  "); err != nil {
		return nil, "", err
	}
	return payload, Sign(payload, l.Secret, now), nil
}

// Sign is the Stripe-Signature header of payload at t: t=<unix>,v1=<hex
// HMAC-SHA256(secret, "<unix>.<payload>")>, Stripe's scheme.
func Sign(payload []byte, secret string, t time.Time) string {
	return fmt.Sprintf("t=%s,v1=%s", strconv.FormatInt(t.Unix(), 10), hex.EncodeToString(webhook.ComputeSignature(t, payload, secret)))
}

// DeclinedCard is the test card the local checkout declines (Stripe's
// generic-decline test number).
const DeclinedCard = "4000000000000002"

// CheckTestCard checks the local checkout's card form and says what is
// wrong, or "": a name, a card number that passes the Luhn check (12 to 19
// digits, spaces allowed; DeclinedCard is declined), an expiry MM/YY not
// in the past, a CVC of 3 or 4 digits. Nothing is charged either way.
func CheckTestCard(name, number, expiry, cvc string, now time.Time) string {
	digits := strings.NewReplacer(" ", "", "-", "").Replace(number)
	switch {
	case strings.TrimSpace(name) == "":
		return "Enter the name on the card."
	case len(digits) < 12 || len(digits) > 19 || strings.Trim(digits, "0123456789") != "" || !luhn(digits):
		return "The card number is not valid (try the test card 4242 4242 4242 4242)."
	case digits == DeclinedCard:
		return "Your card was declined (test card " + DeclinedCard + ")."
	}
	mm, yy, ok := strings.Cut(strings.TrimSpace(expiry), "/")
	m, err1 := strconv.Atoi(strings.TrimSpace(mm))
	y, err2 := strconv.Atoi(strings.TrimSpace(yy))
	if !ok || err1 != nil || err2 != nil || m < 1 || m > 12 || y < 0 || y > 99 {
		return "Enter the expiry as MM/YY."
	}
	if end := time.Date(2000+y, time.Month(m)+1, 1, 0, 0, 0, 0, time.UTC); !now.Before(end) {
		return "The card has expired."
	}
	if c := strings.TrimSpace(cvc); len(c) < 3 || len(c) > 4 || strings.Trim(c, "0123456789") != "" {
		return "Enter the 3 or 4 digit CVC."
	}
	return ""
}

func luhn(digits string) bool {
	sum := 0
	for i := range len(digits) {
		d := int(digits[len(digits)-1-i] - '0')
		if i%2 == 1 {
			d *= 2
			if d > 9 {
				d -= 9
			}
		}
		sum += d
	}
	return sum%10 == 0
}
