package checkout

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/stripe/stripe-go/v85"

	"conduit/internal/errs"
)

// Stripe opens Stripe Checkout Sessions with the official library.
type Stripe struct {
	client *stripe.Client
	live   bool
}

// StripeOptions configure the Stripe provider.
type StripeOptions struct {
	// SecretKey is the API key (sk_test_… or sk_live_…; rk_… restricted).
	SecretKey string
	// APIURL, when set, replaces Stripe's API address (a stand-in such as
	// stripe-mock, or a test's).
	APIURL string
	// HTTPClient, when set, makes the requests.
	HTTPClient *http.Client
}

// NewStripe builds the provider; the library's own retries (idempotent,
// with its idempotency keys) stay on.
func NewStripe(o StripeOptions) *Stripe {
	cfg := &stripe.BackendConfig{LeveledLogger: &stripe.LeveledLogger{Level: stripe.LevelNull}}
	if o.APIURL != "" {
		cfg.URL = stripe.String(strings.TrimRight(o.APIURL, "/"))
	}
	if o.HTTPClient != nil {
		cfg.HTTPClient = o.HTTPClient
	} else {
		cfg.HTTPClient = &http.Client{Timeout: 30 * time.Second}
	}
	backends := &stripe.Backends{
		API:         stripe.GetBackendWithConfig(stripe.APIBackend, cfg),
		Connect:     stripe.GetBackendWithConfig(stripe.ConnectBackend, cfg),
		Uploads:     stripe.GetBackendWithConfig(stripe.UploadsBackend, cfg),
		MeterEvents: stripe.GetBackendWithConfig(stripe.MeterEventsBackend, cfg),
	}
	live := strings.HasPrefix(o.SecretKey, "sk_live_") || strings.HasPrefix(o.SecretKey, "rk_live_")
	return &Stripe{client: stripe.NewClient(o.SecretKey, stripe.WithBackends(backends)), live: live}
}

// Name is "stripe".
func (s *Stripe) Name() string { return "stripe" }

// Livemode is true with a live key.
func (s *Stripe) Livemode() bool { return s.live }

// Open creates a Checkout Session in payment mode: one line item priced
// at the pack in cents, the account as client_reference_id and, with the
// pack, in the metadata.
func (s *Stripe) Open(ctx context.Context, r Request) (Opened, error) {
	params := &stripe.CheckoutSessionCreateParams{
		Mode: stripe.String(string(stripe.CheckoutSessionModePayment)),
		LineItems: []*stripe.CheckoutSessionCreateLineItemParams{{
			Quantity: stripe.Int64(1),
			PriceData: &stripe.CheckoutSessionCreateLineItemPriceDataParams{
				Currency:   stripe.String("usd"),
				UnitAmount: stripe.Int64(Cents(r.Pack.Price)),
				ProductData: &stripe.CheckoutSessionCreateLineItemPriceDataProductDataParams{
					Name:        stripe.String("Credit pack " + r.Pack.ID + " USD"),
					Description: stripe.String(usd(r.Pack.Credit) + " USD of credit"),
				},
			},
		}},
		ClientReferenceID: stripe.String(r.AccountID),
		Metadata:          map[string]string{"account_id": r.AccountID, "pack": r.Pack.ID},
		SuccessURL:        stripe.String(r.SuccessURL),
		CancelURL:         stripe.String(r.CancelURL),
		ExpiresAt:         stripe.Int64(r.ExpiresAt.Unix()),
	}
	cs, err := s.client.V1CheckoutSessions.Create(ctx, params)
	if err != nil {
		var se *stripe.Error
		if errors.As(err, &se) && se.HTTPStatusCode >= 400 && se.HTTPStatusCode < 500 && se.HTTPStatusCode != http.StatusTooManyRequests {
			slog.Default().ErrorContext(ctx, "stripe refused to open a checkout session", "status", se.HTTPStatusCode, "code", se.Code, "message", se.Msg)
			return Opened{}, &errs.Error{Kind: errs.Unavailable, Msg: "the payment provider refused to open a checkout (the server log says why)"}
		}
		slog.Default().WarnContext(ctx, "stripe could not be reached", "err", err)
		return Opened{}, &errs.Error{Kind: errs.Unavailable, Msg: "the payment provider cannot be reached; try again shortly", RetryAfter: 5 * time.Second}
	}
	if cs.ID == "" || cs.URL == "" {
		return Opened{}, errors.New("stripe answered a checkout session without id or url")
	}
	if cs.Livemode != s.live {
		return Opened{}, fmt.Errorf("stripe opened a session with livemode %t for a key with livemode %t", cs.Livemode, s.live)
	}
	exp := r.ExpiresAt
	if cs.ExpiresAt != 0 {
		exp = time.Unix(cs.ExpiresAt, 0)
	}
	return Opened{ID: cs.ID, URL: cs.URL, ExpiresAt: exp}, nil
}

// usd writes an amount with two decimals ("52.50").
func usd(m interface{ String() string }) string {
	s := m.String()
	switch i := strings.IndexByte(s, '.'); {
	case i < 0:
		return s + ".00"
	case len(s)-i == 2:
		return s + "0"
	}
	return s
}
