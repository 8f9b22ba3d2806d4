package frontend_test

import (
	"errors"
	"net/http"
	"strings"
	"testing"

	"conduit/frontend"
	"conduit/internal/config"
	"conduit/internal/money"
	"conduit/internal/paycall"
	"conduit/internal/payments"
)

// A statusUrl already handed out keeps answering when pay-per-call is
// switched off: claim tickets and file links depend on the signing secret,
// not on the payment or media switch; only selling (the menu, a new
// purchase) stops.
func TestPaidStatusURLAnswersWithPayPerCallOff(t *testing.T) {
	w := newWallet(t, money.USD)
	rec := wantStatus(t, buy(t, frontend.SpeechPath, w, map[string]any{"text": "Switches off, tickets still on."}), http.StatusOK)
	rec = finished(t, rec["statusUrl"].(string))
	if rec["status"] != "success" {
		t.Fatalf("%v", rec)
	}
	noPayments, err := payments.New(config.X402{Enabled: false}, nil)
	if err != nil {
		t.Fatal(err)
	}
	paymentsOff := env.Platform.FrontendDeps()
	paymentsOff.Payments = noPayments
	mediaOff := env.Platform.FrontendDeps()
	mediaOff.Media.Err = errors.New("media is switched off")

	for name, deps := range map[string]frontend.Deps{"payments off": paymentsOff, "media off": mediaOff} {
		t.Run(name, func(t *testing.T) {
			base := serve(t, deps)
			here := func(u string) string { return strings.Replace(u, env.URL, base, 1) }
			status, _, got := send(t, "GET", here(rec["statusUrl"].(string)), nil)
			if status != http.StatusOK || got["runId"] != rec["runId"] || got["status"] != "success" || got["audio"] == nil {
				t.Fatalf("polling the paid run: %d %v", status, got)
			}
			resp, err := http.Get(here(got["audio"].(string)))
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "audio/mpeg" {
				t.Fatalf("the file link: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
			}
			// Selling stops: the menu and a new purchase are 503.
			for _, method := range []string{"GET", "POST"} {
				if status, _, body := send(t, method, base+frontend.SpeechPath, map[string]any{"text": "x"}); status != http.StatusServiceUnavailable {
					t.Fatalf("%s %s with pay-per-call off: %d %v", method, frontend.SpeechPath, status, body)
				}
			}
		})
	}

	// Without the signing secret nothing can check a ticket: 503, not a
	// guess and not a crash.
	noSecret := env.Platform.FrontendDeps()
	noSecret.Media = paycall.Media{Err: errors.New("media.secret is not set")}
	base := serve(t, noSecret)
	for _, u := range []string{rec["statusUrl"].(string), rec["audio"].(string)} {
		status, _, body := send(t, "GET", strings.Replace(u, env.URL, base, 1), nil)
		if status != http.StatusServiceUnavailable || !strings.Contains(body["error"].(string), "media.secret") {
			t.Fatalf("GET %s without the secret: %d %v", u, status, body)
		}
	}
}
