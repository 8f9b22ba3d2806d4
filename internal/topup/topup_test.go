package topup

import (
	"context"
	"errors"
	"testing"

	"conduit/internal/accounts"
	"conduit/internal/config"
	"conduit/internal/errs"
	"conduit/internal/payments"
)

// A deployment without x402 refuses in the spec's words before reading
// anything of the request. (The paths that settle are proven on the real
// stack: frontend/billing_test.go, payments_test.go, app/chaos.)
func TestOffRefusesBeforeAnything(t *testing.T) {
	off, err := payments.New(config.X402{Enabled: false}, nil)
	if err != nil {
		t.Fatal(err)
	}
	s := &Service{Payments: off}
	_, err = s.Buy(context.Background(), Request{Authorization: "Bearer x", Payment: "y"})
	var e *errs.Error
	if !errors.As(err, &e) || e.Kind != errs.Unavailable || e.Msg != NotConfigured {
		t.Fatalf("%v", err)
	}
}

// Only a key that may use pipelines may pick the credited account.
func TestBearerNeedsAPipelinesScope(t *testing.T) {
	for scopes, want := range map[string]bool{"pipelines:run": true, "pipelines:read": true, "keys:manage": false, "": false} {
		p := accounts.Principal{}
		if scopes != "" {
			p.Scopes = []string{scopes}
		}
		if pipelinesScope(p) != want {
			t.Errorf("%q: %v", scopes, !want)
		}
	}
}
