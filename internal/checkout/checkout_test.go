package checkout_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stripe/stripe-go/v85/webhook"

	"conduit/internal/checkout"
	"conduit/internal/checkout/stripetest"
	"conduit/internal/errs"
	"conduit/internal/money"
)

func TestStripeOpensACheckoutSession(t *testing.T) {
	api := stripetest.New()
	defer api.Close()
	p := checkout.NewStripe(checkout.StripeOptions{SecretKey: stripetest.Key, APIURL: api.URL})
	pack, _ := checkout.PackByID("50")
	exp := time.Now().Add(2 * time.Hour).Truncate(time.Second)
	got, err := p.Open(context.Background(), checkout.Request{AccountID: "acct_buyer", Pack: pack,
		SuccessURL: "https://conduit.example/dashboard/credits?checkout=success&session_id={CHECKOUT_SESSION_ID}",
		CancelURL:  "https://conduit.example/dashboard/credits?checkout=cancel", ExpiresAt: exp})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(got.ID, "cs_test_") || !strings.HasPrefix(got.URL, "https://checkout.stripe.com/c/pay/"+got.ID) || !got.ExpiresAt.Equal(exp) {
		t.Fatalf("opened %+v", got)
	}
	if p.Livemode() || p.Name() != "stripe" {
		t.Fatal("a test key is not live")
	}
	if len(api.Requests) != 1 {
		t.Fatalf("%d requests", len(api.Requests))
	}
	f := api.Requests[0]
	for k, want := range map[string]string{
		"mode": "payment", "line_items[0][quantity]": "1", "line_items[0][price_data][currency]": "usd",
		"line_items[0][price_data][unit_amount]": "5000", "line_items[0][price_data][product_data][name]": "Credit pack 50 USD",
		"client_reference_id": "acct_buyer", "metadata[account_id]": "acct_buyer", "metadata[pack]": "50",
		"success_url": "https://conduit.example/dashboard/credits?checkout=success&session_id={CHECKOUT_SESSION_ID}",
		"cancel_url":  "https://conduit.example/dashboard/credits?checkout=cancel", "expires_at": strconv.FormatInt(exp.Unix(), 10),
	} {
		if f.Get(k) != want {
			t.Errorf("%s = %q, want %q", k, f.Get(k), want)
		}
	}
	if api.IdempotencyKeys[0] == "" {
		t.Error("the library sent no Idempotency-Key")
	}
}

func TestStripeRefusalIsUnavailable(t *testing.T) {
	api := stripetest.New()
	defer api.Close()
	p := checkout.NewStripe(checkout.StripeOptions{SecretKey: "sk_test_wrong", APIURL: api.URL})
	pack, _ := checkout.PackByID("10")
	_, err := p.Open(context.Background(), checkout.Request{AccountID: "a", Pack: pack, SuccessURL: "https://x.example/s", CancelURL: "https://x.example/c", ExpiresAt: time.Now().Add(time.Hour)})
	if e, ok := errs.As(err); !ok || e.Kind != errs.Unavailable {
		t.Fatalf("wrong key: %v", err)
	}
	// Stripe gone: also a passing failure, not a 500.
	api.Close()
	_, err = checkout.NewStripe(checkout.StripeOptions{SecretKey: stripetest.Key, APIURL: api.URL}).Open(context.Background(),
		checkout.Request{AccountID: "a", Pack: pack, SuccessURL: "https://x.example/s", CancelURL: "https://x.example/c", ExpiresAt: time.Now().Add(time.Hour)})
	if e, ok := errs.As(err); !ok || e.Kind != errs.Unavailable {
		t.Fatalf("unreachable: %v", err)
	}
}

// The local checkout signs as Stripe does: the official library verifies
// it, and refuses it with another secret, a changed body or an old time.
func TestLocalSignatureIsStripes(t *testing.T) {
	payload := []byte(`{"id":"evt_test_1","object":"event","api_version":"2026-03-25.dahlia","type":"checkout.session.completed","data":{"object":{}}}`)
	secret := "whsec_0123456789abcdef"
	sig := checkout.Sign(payload, secret, time.Now())
	if err := webhook.ValidatePayload(payload, sig, secret); err != nil {
		t.Fatalf("the library refuses our signature %q: %v", sig, err)
	}
	if webhook.ValidatePayload(payload, sig, secret+"x") == nil || webhook.ValidatePayload(append(payload, ' '), sig, secret) == nil ||
		webhook.ValidatePayload(payload, checkout.Sign(payload, secret, time.Now().Add(-10*time.Minute)), secret) == nil {
		t.Fatal("a bad signature passed")
	}
}

func TestTestCards(t *testing.T) {
	now := time.Date(2026, 11, 23, 0, 0, 0, 0, time.UTC)
	for _, c := range []struct{ name, number, expiry, cvc, want string }{
		{"A", "4242 4242 4242 4242", "12/34", "123", ""},
		{"A", "5555555555554444", "11/26", "1234", ""},
		{"A", "4000 0000 0000 0002", "12/34", "123", "declined"},
		{"A", "4242 4242 4242 4241", "12/34", "123", "not valid"},
		{"A", "4242", "12/34", "123", "not valid"},
		{"A", "4242 4242 4242 4242", "10/26", "123", "expired"},
		{"A", "4242 4242 4242 4242", "13/30", "123", "MM/YY"},
		{"A", "4242 4242 4242 4242", "12/34", "12", "CVC"},
		{" ", "4242 4242 4242 4242", "12/34", "123", "name"},
	} {
		got := checkout.CheckTestCard(c.name, c.number, c.expiry, c.cvc, now)
		if (c.want == "") != (got == "") || !strings.Contains(got, c.want) {
			t.Errorf("%+v: %q", c, got)
		}
	}
}

func TestPacks(t *testing.T) {
	var got []string
	for _, p := range checkout.Packs() {
		got = append(got, p.ID+"="+p.Credit.String())
	}
	if strings.Join(got, ",") != "10=10,25=25,50=52.5" || checkout.Cents(52*money.USD+money.Cents(50)) != 5250 {
		t.Fatalf("packs %v", got)
	}
	if _, ok := checkout.PackByID("30"); ok {
		t.Fatal("a 30 pack")
	}
}
