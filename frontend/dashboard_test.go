package frontend_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

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
		// Buying one is the operator's command until a checkout exists.
		"conduit account pack -account ACCOUNT_ID -paid 50 -reference PAYMENT_ID",
		"card checkout is not available",
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
