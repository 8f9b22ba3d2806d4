package browsertest

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"

	"github.com/chromedp/chromedp"
)

// buyPack buys the 50 USD pack from the credits page through the local
// checkout (test mode) with a test card, returns on the credits page and
// gives the checkout session's id (the success URL carries it, as
// Stripe's does).
func buyPack(x *b) string {
	x.t.Helper()
	x.run("checkout", x.click("Buy the 50.00 USD pack"), chromedp.WaitVisible(`#card-number`, chromedp.ByQuery))
	x.run("checkout page", x.waitText("body", "TEST MODE"), x.waitText("h1", "50"))
	x.accessible("checkout")
	x.shot("checkout")
	x.run("pay",
		x.typeInto(`#card-name`, "Ada Lovelace"),
		x.typeInto(`#card-number`, "4242 4242 4242 4242"),
		x.typeInto(`#card-expiry`, "12/34"),
		x.typeInto(`#card-cvc`, "123"),
		chromedp.Click(`//button[starts-with(normalize-space(), "Pay")]`, chromedp.BySearch),
		chromedp.WaitVisible(`[data-testid=balance]`, chromedp.ByQuery),
	)
	var loc string
	x.run("location", chromedp.Location(&loc))
	u, err := url.Parse(loc)
	if err != nil {
		x.t.Fatal(err)
	}
	id := u.Query().Get("session_id")
	if u.Path != "/dashboard/billing" || u.Query().Get("checkout") != "success" || !strings.HasPrefix(id, "cs_test_") {
		x.t.Fatalf("after paying the browser is at %s", loc)
	}
	return id
}

// replayWebhook posts the webhook the checkout delivered for session —
// captured as it arrived, payload and signature — to the webhook route
// again, twice, as a provider's retry or an attacker's replay would. The
// route may accept it (it is validly signed) but must grant nothing more.
func replayWebhook(x *b, session string) {
	x.t.Helper()
	events, err := env.Platform.Store.CheckoutEvents(context.Background(), session)
	if err != nil || len(events) != 1 {
		x.t.Fatalf("the webhook events of %s: %v, %v (want the one the checkout delivered)", session, events, err)
	}
	ev := events[0]
	post := func(payload []byte, sig string) (int, map[string]any) {
		req, err := http.NewRequest("POST", env.URL+"/api/billing/webhooks/stripe", bytes.NewReader(payload))
		if err != nil {
			x.t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json; charset=utf-8")
		req.Header.Set("Stripe-Signature", sig)
		res, err := env.HTTP.Do(req)
		if err != nil {
			x.t.Fatal(err)
		}
		defer res.Body.Close()
		var out map[string]any
		_ = json.NewDecoder(res.Body).Decode(&out)
		return res.StatusCode, out
	}
	for range 2 {
		if code, out := post(ev.Payload, ev.Signature); code != http.StatusOK || out["started"] != false {
			x.t.Fatalf("replaying the captured webhook: %d %v, want 200 and nothing started", code, out)
		}
	}
	// The same event with its amount changed no longer matches its
	// signature: refused.
	forged := bytes.Replace(ev.Payload, []byte(`"amount_total": 5000`), []byte(`"amount_total": 500000`), 1)
	if bytes.Equal(forged, ev.Payload) {
		x.t.Fatalf("the captured event has no amount_total of 5000:\n%s", ev.Payload)
	}
	if code, out := post(forged, ev.Signature); code != http.StatusBadRequest {
		x.t.Fatalf("a forged webhook: %d %v, want 400", code, out)
	}
}
