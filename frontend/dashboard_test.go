package frontend_test

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"conduit/frontend"
	"conduit/internal/checkout"
	"conduit/internal/config"
	"conduit/internal/money"
	"conduit/internal/payments"
)

// getPage fetches an absolute URL and returns status, content type and body.
func getPage(t *testing.T, u string) (int, string, string) {
	t.Helper()
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, resp.Header.Get("Content-Type"), string(b)
}

// topUpUrl in a real 402 (invoke and chat) opens a page where a human
// tops up: the credit packs, how to buy one, and how agents pay with x402
// on this deployment.
func TestTopUpURLOfA402IsTheCreditsPage(t *testing.T) {
	acct, key := env.NewAccount(t)
	id, _ := chatPipeline(t, key, "local-echo")
	if _, err := env.Platform.Store.Hold(context.Background(), acct, 5*money.USD, "drain/"+acct); err != nil {
		t.Fatal(err)
	}
	invoke402 := wantStatus(t, do(t, "POST", "/api/pipelines/"+id+"/invoke", key, map[string]any{"inputs": map[string]any{"question": "x"}}), http.StatusPaymentRequired)
	chat402 := wantStatus(t, do(t, "POST", "/api/pipelines/"+id+"/chat/completions", key,
		map[string]any{"messages": []map[string]string{{"role": "user", "content": "x"}}}), http.StatusPaymentRequired)
	chatURL, _ := chat402["error"].(map[string]any)["topUpUrl"].(string)
	if invoke402["topUpUrl"] != chatURL || chatURL == "" {
		t.Fatalf("topUpUrl %v and %v", invoke402["topUpUrl"], chatURL)
	}

	status, ctype, page := getPage(t, chatURL)
	if status != http.StatusOK || ctype != "text/html; charset=utf-8" || !strings.HasPrefix(page, "<!doctype html>") {
		t.Fatalf("%s: %d %s", chatURL, status, ctype)
	}
	for _, want := range []string{
		// The packs of spec §8, from accounts.Packs.
		"<td>10 USD pack</td><td class=\"num\">10.00 USD</td><td class=\"num\">10.00 USD</td>",
		"<td>25 USD pack</td><td class=\"num\">25.00 USD</td><td class=\"num\">25.00 USD</td>",
		"<td>50 USD pack</td><td class=\"num\">50.00 USD</td><td class=\"num\">52.50 USD <span class=\"note\">(+2.50 USD bonus)</span>",
		// Card checkout is on here: signing in buys one.
		`<a href="/signin?next=%2Fdashboard%2Fcredits">sign in</a>`,
		// x402 as this deployment offers it.
		"<code>POST " + env.URL + "/api/billing/credits/x402</code>",
		"5.00 USD per call",
		"<code>eip155:8453</code>", "<code>" + env.Config.X402.SolanaNetwork + "</code>",
		"USDC", "PAYMENT-REQUIRED", "PAYMENT-SIGNATURE",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
	if strings.Contains(page, "<script") {
		t.Error("the page carries script")
	}

	if strings.Contains(page, "card checkout is not available") {
		t.Error("the page says checkout is off")
	}

	// A deployment without card checkout: the operator's command.
	noCards := env.Platform.FrontendDeps()
	noCards.Checkout = &checkout.Service{}
	status, _, page = getPage(t, serve(t, noCards)+"/dashboard/credits")
	if status != http.StatusOK || !strings.Contains(page, "card checkout is not available") ||
		!strings.Contains(page, "conduit account pack -account ACCOUNT_ID -paid 50 -reference PAYMENT_ID") {
		t.Fatalf("without card checkout: %d %s", status, page)
	}

	// A deployment without x402 says so instead.
	off, err := payments.New(config.X402{Enabled: false}, nil)
	if err != nil {
		t.Fatal(err)
	}
	deps := env.Platform.FrontendDeps()
	deps.Payments = off
	status, _, page = getPage(t, serve(t, deps)+"/dashboard/credits")
	if status != http.StatusOK || !strings.Contains(page, "not enabled on this deployment") || strings.Contains(page, "/api/billing/credits/x402") ||
		!strings.Contains(page, "52.50 USD") {
		t.Fatalf("%d %s", status, page)
	}
}

// The credits page is where a 402's human lands: signed in, they buy a
// pack from it with its Buy button, pay at the checkout and come back to
// it, with the credit on their balance once.
func TestBuyAPackFromTheCreditsPage(t *testing.T) {
	b := newBrowser(t, env.URL)
	b.signUp(uniqueEmail(t), "a password long enough")
	credits := b.do("GET", "/dashboard/credits", nil)
	if credits.status != http.StatusOK || strings.Count(credits.body, ">Buy</button>") != 3 || !strings.Contains(credits.body, "TEST MODE") ||
		!strings.Contains(credits.body, `aria-label="Buy the 50 USD pack for 50.00 USD"`) {
		t.Fatalf("signed-in credits page: %d %s", credits.status, credits.body)
	}
	v := credits.fields()
	v.Set("pack", "50")
	// Without the page's token: refused.
	if p := b.do("POST", frontend.CreditsCheckoutPath, url.Values{"pack": {"50"}, "csrf": {"forged"}}); p.status != http.StatusForbidden {
		t.Fatalf("buy without the token: %d", p.status)
	}
	to := b.do("POST", frontend.CreditsCheckoutPath, v).location(t)
	if !strings.HasPrefix(to.Path, checkout.LocalPagePath+"cs_test_") {
		t.Fatalf("buy goes to %s", to)
	}
	id := strings.TrimPrefix(to.Path, checkout.LocalPagePath)
	form := b.do("GET", to.Path, nil)
	pay := form.fields()
	pay.Set("name", "Test Buyer")
	pay.Set("number", "4242424242424242")
	pay.Set("expiry", "12/"+time.Now().AddDate(2, 0, 0).Format("06"))
	pay.Set("cvc", "123")
	back := b.do("POST", to.Path, pay).location(t)
	if back.Path != frontend.CreditsPagePath || back.Query().Get("checkout") != "success" || back.Query().Get("session_id") != id {
		t.Fatalf("back to %s", back)
	}
	if res := packGranted(t, id); res.Credit != 52*money.USD+money.Cents(50) {
		t.Fatalf("grant %+v", res)
	}
	if p := b.do("GET", back.RequestURI(), nil); p.status != http.StatusOK || !strings.Contains(p.body, "being confirmed") {
		t.Fatalf("credits page after paying: %d", p.status)
	}
	if st, bal := b.api("GET", "/api/account/balance", nil); st != http.StatusOK || bal["balanceUsd"] != 57.5 {
		t.Fatalf("balance %v", bal)
	}
}
