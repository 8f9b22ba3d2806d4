package checkout_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"conduit/internal/checkout"
	"conduit/internal/errs"
)

// The card form is untrusted input: any text gets an answer, never a
// panic, and an accepted number is 12 to 19 digits.
func FuzzCheckTestCard(f *testing.F) {
	f.Add("A", "4242 4242 4242 4242", "12/34", "123")
	f.Add("", "4000000000000002", "1/1", "")
	f.Add("\x00", "-- --", "99/99", "12345")
	now := time.Date(2026, 11, 23, 0, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, name, number, expiry, cvc string) {
		if checkout.CheckTestCard(name, number, expiry, cvc, now) != "" {
			return
		}
		d := strings.NewReplacer(" ", "", "-", "").Replace(number)
		if len(d) < 12 || len(d) > 19 || strings.Trim(d, "0123456789") != "" || d == checkout.DeclinedCard {
			t.Fatalf("accepted %q", number)
		}
	})
}

// A webhook whose signature cannot verify is refused before anything is
// read or written (the service here has no store: reaching it would
// panic), whatever the body and header.
func FuzzWebhookRefusesUnsigned(f *testing.F) {
	f.Add([]byte(`{"id":"evt_1","object":"event","type":"checkout.session.completed"}`), "t=1,v1=00")
	f.Add([]byte(`{}`), "")
	f.Add([]byte("\xff"), "t=,v1=,v0=")
	svc := &checkout.Service{Provider: &checkout.Local{}, WebhookSecret: "whsec_fuzz_secret_0123456789", Tolerance: time.Minute}
	f.Fuzz(func(t *testing.T, payload []byte, header string) {
		_, err := svc.Webhook(context.Background(), payload, header)
		if e, ok := errs.As(err); !ok || e.Kind != errs.Invalid {
			t.Fatalf("unsigned webhook: %v", err)
		}
	})
}
