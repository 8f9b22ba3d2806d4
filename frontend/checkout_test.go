package frontend_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stripe/stripe-go/v85/webhook"

	"conduit/frontend"
	"conduit/internal/checkout"
	"conduit/internal/checkout/stripetest"
	"conduit/internal/money"
	"conduit/internal/store"
	"conduit/workflows"
)

// Buying a credit pack through the local TEST MODE checkout, as a browser
// does it: the dashboard opens a checkout with the session cookie, the
// buyer fills the card form, the checkout signs Stripe's
// checkout.session.completed and posts it to the webhook route, and the
// pack's workflow grants it once.

// postWebhook sends a webhook as the provider would.
type webhookPair struct {
	payload   []byte
	signature string
}

func signedPair(payload []byte, signature string) webhookPair { return webhookPair{payload, signature} }

func postWebhook(t *testing.T, w webhookPair) (int, map[string]any) {
	t.Helper()
	payload, signature := w.payload, w.signature
	req, _ := http.NewRequest("POST", env.URL+frontend.StripeWebhookPath, bytes.NewReader(payload))
	req.Header.Set("Content-Type", "application/json; charset=utf-8")
	if signature != "" {
		req.Header.Set(checkout.SignatureHeader, signature)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var m map[string]any
	_ = json.Unmarshal(raw, &m)
	return resp.StatusCode, m
}

// packGranted waits for the pack's workflow and returns what it granted.
func packGranted(t *testing.T, sessionID string) workflows.PackResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var res workflows.PackResult
	if err := env.Platform.Temporal.GetWorkflow(ctx, workflows.PackWorkflowID(sessionID), "").Get(ctx, &res); err != nil {
		t.Fatalf("pack workflow of %s: %v", sessionID, err)
	}
	return res
}

func packEntries(t *testing.T, b *browser) []map[string]any {
	t.Helper()
	return ledgerPage(t, b, "type=pack")
}

func TestBuyAPackThroughTheLocalCheckoutOnce(t *testing.T) {
	b := newBrowser(t, env.URL)
	s := b.signUp(uniqueEmail(t), "a password long enough")
	csrf := s["csrfToken"].(string)

	st, packs := b.api("GET", frontend.PacksPath, nil)
	if st != http.StatusOK || packs["provider"] != "local" || packs["testMode"] != true {
		t.Fatalf("packs: %d %v", st, packs)
	}
	want := []string{"10:10:10", "25:25:25", "50:50:52.5"}
	for i, p := range packs["packs"].([]any) {
		p := p.(map[string]any)
		if got := p["id"].(string) + ":" + jsonNumber(p["price"]) + ":" + jsonNumber(p["credit"]); got != want[i] {
			t.Fatalf("pack %d: %s, want %s", i, got, want[i])
		}
	}

	// Refusals first: no CSRF token, a pack not on sale, a return address
	// on another site.
	open := map[string]any{"pack": "50", "successUrl": "/dashboard/credits?checkout=success", "cancelUrl": "/dashboard/credits?checkout=cancel"}
	if st, _ := b.api("POST", frontend.CheckoutPath, open); st != http.StatusForbidden {
		t.Fatalf("checkout without the CSRF token: %d", st)
	}
	for _, bad := range []map[string]any{
		{"pack": "30"}, {"pack": "50", "successUrl": "https://elsewhere.example/"}, {"pack": "50", "cancelUrl": "//elsewhere.example/x"}, {"pack": 50},
	} {
		if st, body := b.api("POST", frontend.CheckoutPath, bad, frontend.CSRFHeader, csrf); st != http.StatusBadRequest {
			t.Fatalf("checkout %v: %d %v", bad, st, body)
		}
	}
	st, opened := b.api("POST", frontend.CheckoutPath, open, frontend.CSRFHeader, csrf)
	if st != http.StatusCreated || !strings.HasPrefix(opened["id"].(string), "cs_test_") {
		t.Fatalf("checkout: %d %v", st, opened)
	}
	id := opened["id"].(string)
	if opened["url"] != env.URL+checkout.LocalPagePath+id {
		t.Fatalf("checkout url %v", opened["url"])
	}

	// The checkout page: clearly test mode, a labelled card form.
	pagePath := checkout.LocalPagePath + id
	p := b.do("GET", pagePath, nil)
	if p.status != http.StatusOK || !strings.Contains(p.body, "TEST MODE") || !strings.Contains(p.body, `<label for="card-number">Card number</label>`) ||
		!strings.Contains(p.body, "52.50") || p.fields().Get("csrf") == "" {
		t.Fatalf("checkout page: %d %s", p.status, p.body)
	}
	pay := func(number string) page {
		v := p.fields()
		v.Set("name", "Test Buyer")
		v.Set("number", number)
		v.Set("expiry", "12/"+time.Now().AddDate(3, 0, 0).Format("06"))
		v.Set("cvc", "123")
		return b.do("POST", pagePath, v)
	}
	// Someone else cannot see it; nobody signed out can either.
	other := newBrowser(t, env.URL)
	other.signUp(uniqueEmail(t), "another password long enough")
	if o := other.do("GET", pagePath, nil); o.status != http.StatusNotFound {
		t.Fatalf("another account's checkout page: %d", o.status)
	}
	if o := newBrowser(t, env.URL).do("GET", pagePath, nil); o.location(t).Path != frontend.SignInPath {
		t.Fatalf("signed out: %v", o.header)
	}
	// A declined card pays nothing.
	if d := pay("4000 0000 0000 0002"); d.status != http.StatusPaymentRequired || !strings.Contains(d.body, "declined") {
		t.Fatalf("declined card: %d %s", d.status, d.body)
	}
	if d := pay("4242 4242 4242 4241"); d.status != http.StatusPaymentRequired || !strings.Contains(d.body, "not valid") {
		t.Fatalf("bad card number: %d", d.status)
	}
	if entries := packEntries(t, b); len(entries) != 0 {
		t.Fatalf("packs before paying: %v", entries)
	}

	// Pay: back to the success page; the workflow grants 52.50.
	paid := pay("4242 4242 4242 4242")
	if loc := paid.location(t); loc.String() != env.URL+"/dashboard/credits?checkout=success" {
		t.Fatalf("after paying: %s", loc)
	}
	if res := packGranted(t, id); res.Credit.String() != "52.5" || res.Duplicate {
		t.Fatalf("grant: %+v", res)
	}
	if st, bal := b.api("GET", "/api/account/balance", nil); st != http.StatusOK || bal["balanceUsd"] != 57.5 {
		t.Fatalf("balance after the pack: %v", bal)
	}
	entries := packEntries(t, b)
	if len(entries) != 1 || entries[0]["amount"] != 52.5 || entries[0]["reference"] != "pack/checkout/"+id {
		t.Fatalf("pack entries: %v", entries)
	}
	if again := b.do("GET", pagePath, nil); again.status != http.StatusConflict {
		t.Fatalf("the paid checkout's page: %d", again.status)
	}

	// The webhook replayed, byte for byte with its signature: nothing new.
	events, err := env.Platform.Store.CheckoutEvents(context.Background(), id)
	if err != nil || len(events) != 1 || events[0].Type != "checkout.session.completed" {
		t.Fatalf("events: %v %v", events, err)
	}
	ev := events[0]
	for range 2 {
		if st, body := postWebhook(t, webhookPair{ev.Payload, ev.Signature}); st != http.StatusOK || body["duplicate"] != true || body["started"] != false {
			t.Fatalf("replayed webhook: %d %v", st, body)
		}
	}
	// Forged: the body changed under the signature, a signature with
	// another secret, no signature, a stale one.
	secret := env.Config.Checkout.WebhookSecret
	forged := bytes.Replace(ev.Payload, []byte(`"amount_total": 5000`), []byte(`"amount_total": 500000`), 1)
	if bytes.Equal(forged, ev.Payload) {
		t.Fatalf("the event has no amount_total to forge: %s", ev.Payload)
	}
	for name, c := range map[string]struct {
		body []byte
		sig  string
	}{
		"changed body":   {forged, ev.Signature},
		"another secret": {forged, checkout.Sign(forged, "whsec_not_the_secret_at_all", time.Now())},
		"no signature":   {ev.Payload, ""},
		"stale":          {ev.Payload, checkout.Sign(ev.Payload, secret, time.Now().Add(-time.Hour))},
		"garbage":        {ev.Payload, "t=abc,v1=zz"},
	} {
		if st, body := postWebhook(t, webhookPair{c.body, c.sig}); st != http.StatusBadRequest || !strings.Contains(body["error"].(string), "webhook refused") {
			t.Fatalf("%s: %d %v", name, st, body)
		}
	}
	// Balance and ledger: +52.50 exactly once.
	if entries := packEntries(t, b); len(entries) != 1 {
		t.Fatalf("pack entries after replays and forgeries: %v", entries)
	}
	if st, bal := b.api("GET", "/api/account/balance", nil); st != http.StatusOK || bal["balanceUsd"] != 57.5 {
		t.Fatalf("balance after replays: %v", bal)
	}
}

// An event signed with the real secret must still agree with the checkout
// we opened: its amount, its account, its mode. Ours decide what is
// granted, never the webhook's word.
func TestWebhookMustAgreeWithOurCheckout(t *testing.T) {
	_, key := env.NewAccount(t)
	opened := wantStatus(t, do(t, "POST", frontend.CheckoutPath, key, map[string]any{"pack": "10"}), http.StatusCreated)
	id := opened["id"].(string)
	cs, err := env.Platform.Store.CheckoutSessionByID(context.Background(), id)
	if err != nil || cs.SuccessURL != env.URL+"/dashboard/credits?checkout=success&session_id={CHECKOUT_SESSION_ID}" {
		t.Fatalf("stored checkout: %+v %v", cs, err)
	}
	local := &checkout.Local{BaseURL: env.URL, Secret: env.Config.Checkout.WebhookSecret}
	signed := func(change func(m map[string]any)) ([]byte, string) {
		payload, _, err := local.Completed(cs, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		_ = json.Unmarshal(payload, &m)
		change(m["data"].(map[string]any)["object"].(map[string]any))
		b, _ := json.Marshal(m)
		return b, checkout.Sign(b, env.Config.Checkout.WebhookSecret, time.Now())
	}
	for name, change := range map[string]func(map[string]any){
		"amount":   func(o map[string]any) { o["amount_total"] = 5000 },
		"account":  func(o map[string]any) { o["client_reference_id"] = "acct_someone_else" },
		"livemode": func(o map[string]any) { o["livemode"] = true },
		"currency": func(o map[string]any) { o["currency"] = "eur" },
	} {
		if st, body := postWebhook(t, signedPair(signed(change))); st != http.StatusBadRequest {
			t.Fatalf("%s: %d %v", name, st, body)
		}
	}
	// Unpaid, or a session opened elsewhere: acknowledged, nothing done.
	for name, change := range map[string]func(map[string]any){
		"unpaid":  func(o map[string]any) { o["payment_status"] = "unpaid" },
		"unknown": func(o map[string]any) { o["id"] = "cs_test_not_ours" },
	} {
		if st, body := postWebhook(t, signedPair(signed(change))); st != http.StatusOK || body["started"] != false || body["ignored"] == nil {
			t.Fatalf("%s: %d %v", name, st, body)
		}
	}
	if bal := balanceUSD(t, key); bal != 5 {
		t.Fatalf("balance after refused webhooks: %v", bal)
	}
	// The consistent event grants the 10 pack.
	if st, body := postWebhook(t, signedPair(signed(func(map[string]any) {}))); st != http.StatusOK || body["started"] != true {
		t.Fatalf("consistent event: %d %v", st, body)
	}
	if res := packGranted(t, id); res.Credit.String() != "10" {
		t.Fatalf("grant %+v", res)
	}
	if bal := balanceUSD(t, key); bal != 15 {
		t.Fatalf("balance: %v", bal)
	}
}

func jsonNumber(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// The Stripe provider end to end: the API opens a Checkout Session at the
// stand-in Stripe through the official library, and the event Stripe
// sends when it is paid (signed by the library's own test signer) grants
// the pack once.
func TestStripeCheckoutGrantsOnce(t *testing.T) {
	api := stripetest.New()
	defer api.Close()
	const secret = "whsec_stripe_endpoint_secret_for_tests"
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cfg := *env.Config
	cfg.HTTP.PublicURL = "http://" + ln.Addr().String()
	cfg.Checkout.Provider, cfg.Checkout.StripeSecretKey, cfg.Checkout.StripeAPIURL, cfg.Checkout.WebhookSecret = "stripe", stripetest.Key, api.URL, secret
	deps := env.Platform.FrontendDeps()
	deps.Config = &cfg
	deps.Checkout = &checkout.Service{Store: env.Platform.Store, Temporal: env.Platform.Temporal, WebhookSecret: secret, Tolerance: 5 * time.Minute,
		SessionTTL: 24 * time.Hour, Provider: checkout.NewStripe(checkout.StripeOptions{SecretKey: stripetest.Key, APIURL: api.URL})}
	srv := &http.Server{Handler: frontend.New(deps).Handler()}
	go srv.Serve(ln)
	defer srv.Close()
	base := cfg.HTTP.PublicURL
	call := func(method, path, key string, body any, headers ...string) (int, map[string]any) {
		t.Helper()
		b, _ := json.Marshal(body)
		req, _ := http.NewRequest(method, base+path, bytes.NewReader(b))
		req.Header.Set("Content-Type", "application/json")
		if key != "" {
			req.Header.Set("Authorization", "Bearer "+key)
		}
		for i := 0; i+1 < len(headers); i += 2 {
			req.Header.Set(headers[i], headers[i+1])
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var m map[string]any
		_ = json.NewDecoder(resp.Body).Decode(&m)
		return resp.StatusCode, m
	}

	acct, key := env.NewAccount(t)
	if st, packs := call("GET", frontend.PacksPath, key, nil); st != http.StatusOK || packs["provider"] != "stripe" || packs["testMode"] != true {
		t.Fatalf("packs: %d %v", st, packs)
	}
	st, opened := call("POST", frontend.CheckoutPath, key, map[string]any{"pack": "25", "successUrl": "/dashboard/credits?paid={CHECKOUT_SESSION_ID}"})
	if st != http.StatusCreated || !strings.HasPrefix(opened["url"].(string), "https://checkout.stripe.com/c/pay/"+opened["id"].(string)) {
		t.Fatalf("open: %d %v", st, opened)
	}
	id := opened["id"].(string)
	if f := api.Requests[len(api.Requests)-1]; f.Get("client_reference_id") != acct || f.Get("line_items[0][price_data][unit_amount]") != "2500" ||
		f.Get("success_url") != base+"/dashboard/credits?paid={CHECKOUT_SESSION_ID}" {
		t.Fatalf("what Stripe was asked: %v", f)
	}
	cs, err := env.Platform.Store.CheckoutSessionByID(context.Background(), id)
	if err != nil || cs.Provider != "stripe" || cs.AccountID != acct || cs.Price != 25*money.USD || cs.Status != "open" {
		t.Fatalf("stored: %+v %v", cs, err)
	}

	payload, err := api.Completed(id)
	if err != nil {
		t.Fatal(err)
	}
	signed := webhook.GenerateTestSignedPayload(&webhook.UnsignedPayload{Payload: payload, Secret: secret, Timestamp: time.Now()})
	post := func(body []byte, sig string) (int, map[string]any) {
		t.Helper()
		req, _ := http.NewRequest("POST", base+frontend.StripeWebhookPath, bytes.NewReader(body))
		req.Header.Set(checkout.SignatureHeader, sig)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var m map[string]any
		_ = json.NewDecoder(resp.Body).Decode(&m)
		return resp.StatusCode, m
	}
	// Signed with the local checkout's secret: not this endpoint's.
	if st, _ := post(payload, checkout.Sign(payload, env.Config.Checkout.WebhookSecret, time.Now())); st != http.StatusBadRequest {
		t.Fatalf("another secret: %d", st)
	}
	if st, body := post(signed.Payload, signed.Header); st != http.StatusOK || body["started"] != true {
		t.Fatalf("webhook: %d %v", st, body)
	}
	if res := packGranted(t, id); res.Credit != 25*money.USD {
		t.Fatalf("grant %+v", res)
	}
	if st, body := post(signed.Payload, signed.Header); st != http.StatusOK || body["duplicate"] != true {
		t.Fatalf("replay: %d %v", st, body)
	}
	if bal := balanceUSD(t, key); bal != 30 {
		t.Fatalf("balance %v, want 30", bal)
	}
	if cs, _ := env.Platform.Store.CheckoutSessionByID(context.Background(), id); cs.Status != "complete" || cs.PaymentStatus != "paid" || cs.CompletedAt == nil {
		t.Fatalf("the session after payment: %+v", cs)
	}
}

// A pack's grant survives the process dying at each step of the webhook's
// way: after the event was recorded but before the grant's workflow
// started (the provider delivers again: the workflow starts then), and
// with no worker to run the grant (the delivery answers, the grant waits;
// a redelivery meanwhile starts nothing) — then one pack, once.
func TestPackGrantSurvivesACrashBetweenSteps(t *testing.T) {
	ctx := context.Background()
	b := newBrowser(t, env.URL)
	s := b.signUp(uniqueEmail(t), "a password long enough")
	acct := s["accountId"].(string)
	st, opened := b.api("POST", frontend.CheckoutPath, map[string]any{"pack": "50"}, frontend.CSRFHeader, s["csrfToken"].(string))
	if st != http.StatusCreated {
		t.Fatalf("checkout: %d %v", st, opened)
	}
	id := opened["id"].(string)
	cs, err := env.Platform.Store.CheckoutSessionByID(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	local := env.Platform.Checkout.Provider.(*checkout.Local)
	payload, sig, err := local.Completed(cs, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	var ev struct{ ID, Type string }
	if err := json.Unmarshal(payload, &ev); err != nil {
		t.Fatal(err)
	}
	before, err := env.Platform.Store.Balance(ctx, acct)
	if err != nil {
		t.Fatal(err)
	}

	// The first delivery recorded the event, then the process died.
	if _, err := env.Platform.Store.RecordCheckoutEvent(ctx, store.CheckoutEvent{ID: ev.ID, SessionID: id, Type: ev.Type, Payload: payload, Signature: sig}); err != nil {
		t.Fatal(err)
	}
	// The redelivery finds no worker: the grant is started, not done.
	env.StopWorker()
	workerUp := false
	t.Cleanup(func() {
		if !workerUp {
			_ = env.StartWorker()
		}
	})
	if st, out := postWebhook(t, signedPair(payload, sig)); st != http.StatusOK || out["started"] != true {
		t.Fatalf("redelivery after the crash: %d %v", st, out)
	}
	if st, out := postWebhook(t, signedPair(payload, sig)); st != http.StatusOK || out["started"] != false || out["duplicate"] != true {
		t.Fatalf("redelivery while the grant waits: %d %v", st, out)
	}
	if now, _ := env.Platform.Store.Balance(ctx, acct); now != before {
		t.Fatalf("granted with no worker: %s → %s", before, now)
	}
	if err := env.StartWorker(); err != nil {
		t.Fatal(err)
	}
	workerUp = true
	packGranted(t, id)
	if st, out := postWebhook(t, signedPair(payload, sig)); st != http.StatusOK || out["started"] != false {
		t.Fatalf("redelivery after the grant: %d %v", st, out)
	}
	after, err := env.Platform.Store.Balance(ctx, acct)
	if err != nil {
		t.Fatal(err)
	}
	if after-before != 52_500_000 {
		t.Fatalf("balance %s → %s, want +52.50 once", before, after)
	}
	if n := len(packEntries(t, b)); n != 1 {
		t.Fatalf("%d pack entries", n)
	}
}
