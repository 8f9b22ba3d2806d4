package config

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"
)

// Checkout configures card payments for credit packs (docs/accounts.md,
// "Card payments").
type Checkout struct {
	// Provider is "" (card payments off: the checkout routes answer 503),
	// "local" (the embedded TEST MODE checkout page: a fake card buys
	// real credit, so never in production; the dev command and the test
	// harness use it) or "stripe" (Stripe Checkout Sessions).
	Provider string `mapstructure:"provider"`
	// WebhookSecret verifies the webhook's Stripe-Signature (Stripe's
	// whsec_… endpoint secret; the local checkout signs with it too). The
	// dev command generates one.
	WebhookSecret string `mapstructure:"webhook_secret"`
	// WebhookTolerance is how old a signed webhook may be.
	WebhookTolerance time.Duration `mapstructure:"webhook_tolerance"`
	// StripeSecretKey is the API key (sk_test_… or sk_live_…).
	StripeSecretKey string `mapstructure:"stripe_secret_key"`
	// StripeAPIURL overrides Stripe's API address (a local stand-in such
	// as stripe-mock); empty: Stripe's own.
	StripeAPIURL string `mapstructure:"stripe_api_url"`
	// SessionTTL is how long a checkout can be paid (Stripe: 30m to 24h).
	SessionTTL time.Duration `mapstructure:"session_ttl"`
}

var checkoutDefaults = map[string]any{
	"checkout.provider":          "",
	"checkout.webhook_secret":    "",
	"checkout.webhook_tolerance": "5m",
	"checkout.stripe_secret_key": "",
	"checkout.stripe_api_url":    "",
	"checkout.session_ttl":       "24h",
}

// Ready says why card payments cannot be offered, or nil when they can.
func (c Checkout) Ready() error {
	switch c.Provider {
	case "":
		return errors.New("card payments are off (checkout.provider is empty)")
	case "local":
	case "stripe":
		if c.StripeSecretKey == "" {
			return errors.New("checkout.stripe_secret_key is required with the stripe provider")
		}
	default:
		return fmt.Errorf("checkout.provider %q must be local or stripe", c.Provider)
	}
	if len(c.WebhookSecret) < 16 {
		return errors.New("checkout.webhook_secret must be set (at least 16 characters) to verify webhooks")
	}
	return nil
}

func (c *Config) validateCheckout() []error {
	var errs []error
	k := c.Checkout
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	switch k.Provider {
	case "", "local", "stripe":
	default:
		bad("checkout.provider (%s_CHECKOUT_PROVIDER) %q must be empty, local or stripe", EnvPrefix, k.Provider)
	}
	if k.Provider == "stripe" {
		if k.StripeSecretKey == "" {
			bad("checkout.stripe_secret_key (%s_CHECKOUT_STRIPE_SECRET_KEY) is required with the stripe provider", EnvPrefix)
		} else if !strings.HasPrefix(k.StripeSecretKey, "sk_") && !strings.HasPrefix(k.StripeSecretKey, "rk_") {
			bad("checkout.stripe_secret_key (%s_CHECKOUT_STRIPE_SECRET_KEY) must be a secret or restricted key (sk_… or rk_…)", EnvPrefix)
		}
	}
	if k.Provider != "" && len(k.WebhookSecret) < 16 {
		bad("checkout.webhook_secret (%s_CHECKOUT_WEBHOOK_SECRET) must be set (at least 16 characters) to verify webhooks", EnvPrefix)
	}
	if k.StripeAPIURL != "" {
		if u, err := url.Parse(k.StripeAPIURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			bad("checkout.stripe_api_url (%s_CHECKOUT_STRIPE_API_URL) must be an absolute http(s) URL", EnvPrefix)
		}
	}
	if k.WebhookTolerance < 10*time.Second || k.WebhookTolerance > time.Hour {
		bad("checkout.webhook_tolerance (%s_CHECKOUT_WEBHOOK_TOLERANCE) must be from 10s to 1h", EnvPrefix)
	}
	if k.SessionTTL < 30*time.Minute || k.SessionTTL > 24*time.Hour {
		bad("checkout.session_ttl (%s_CHECKOUT_SESSION_TTL) must be from 30m to 24h", EnvPrefix)
	}
	return errs
}
