package frontend_test

// The payment hardening: a payment is bound to the purchase it paid for,
// nothing is keyed on it before its signature verified, settlement is
// crash-safe, and concurrent replays are answered at once. Everything runs
// on the real stack with real signatures on the embedded chains.

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"

	"conduit/app/apptest"
	"conduit/frontend"
	"conduit/internal/money"
	"conduit/internal/x402"
	"conduit/workflows"
)

// rewrite decodes a PAYMENT-SIGNATURE header, lets f change it, and
// encodes it again.
func rewrite(t *testing.T, h string, f func(*x402.PaymentPayload)) string {
	t.Helper()
	p, err := x402.DecodePaymentPayload(h)
	if err != nil {
		t.Fatal(err)
	}
	f(&p)
	out, err := x402.EncodeHeader(p)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// forge keeps a payment's payer and nonce and breaks its signature.
func forge(t *testing.T, h string) string {
	return rewrite(t, h, func(p *x402.PaymentPayload) {
		if strings.HasPrefix(p.Accepted.Network, "solana:") {
			var sp x402.SVMPayload
			_ = json.Unmarshal(p.Payload, &sp)
			raw, _ := base64.StdEncoding.DecodeString(sp.Transaction)
			raw[len(raw)-1] ^= 0xff // the message changes under the signatures
			sp.Transaction = base64.StdEncoding.EncodeToString(raw)
			p.Payload, _ = json.Marshal(sp)
			return
		}
		var ep x402.EVMPayload
		_ = json.Unmarshal(p.Payload, &ep)
		b := []byte(ep.Signature)
		if b[10] == '0' {
			b[10] = '1'
		} else {
			b[10] = '0'
		}
		ep.Signature = string(b)
		p.Payload, _ = json.Marshal(ep)
	})
}

func speechBody(text string) map[string]any { return map[string]any{"text": text} }

// payments rows for a payer, by status.
func paymentRows(t *testing.T, network, payer string) map[string]int {
	t.Helper()
	conn := dbConn(t)
	rows, err := conn.Query(context.Background(), `SELECT status, count(*) FROM payments WHERE network = $1 AND payer = $2 GROUP BY status`,
		network, x402.NormalizeAddress(network, payer))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int{}
	for rows.Next() {
		var s string
		var n int
		if err := rows.Scan(&s, &n); err != nil {
			t.Fatal(err)
		}
		out[s] = n
	}
	return out
}

func dbConn(t *testing.T) *pgx.Conn {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), env.Config.Database.URL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

// workflowAbsent fails unless no workflow with this id was ever started.
func workflowAbsent(t *testing.T, id string) {
	t.Helper()
	_, err := env.Platform.Temporal.DescribeWorkflowExecution(context.Background(), id, "")
	var nf *serviceerror.NotFound
	if !errors.As(err, &nf) {
		t.Fatalf("workflow %s exists (%v)", id, err)
	}
}

// openPaymentWorkflows counts top-up and render workflows started since
// then that are still running.
func openPaymentWorkflows(t *testing.T, since time.Time) int {
	t.Helper()
	q := "ExecutionStatus = 'Running' AND StartTime > '" + since.UTC().Format(time.RFC3339Nano) + "'"
	resp, err := env.Platform.Temporal.ListWorkflow(context.Background(), &workflowservice.ListWorkflowExecutionsRequest{Query: q, PageSize: 1000})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range resp.Executions {
		if name := e.GetType().GetName(); name == "TopUp" || name == "Render" {
			n++
		}
	}
	return n
}

// noneLeftRunning waits (bounded) for every payment workflow started since
// then to end.
func noneLeftRunning(t *testing.T, since time.Time) {
	t.Helper()
	apptest.Eventually(t, 90*time.Second, "every payment workflow to end", func() error {
		if n := openPaymentWorkflows(t, since); n != 0 {
			return fmt.Errorf("%d payment workflows still running", n)
		}
		return nil
	})
}

// Item 1: a 0.02 speech payment rewritten to look like a 5.00 top-up is
// refused in the spec's words; a payment for one paid resource does not buy
// another at the same price; the same payment for another request is 409.
func TestPaymentIsBoundToItsPurchase(t *testing.T) {
	_, key := env.NewAccount(t)
	w := newWallet(t, 10*money.USD)
	text := "Bound to its purchase."
	sig := w.pay(t, challengeFor(t, frontend.SpeechPath, speechBody(text)))
	if rec := wantStatus(t, env.Do(t, "POST", frontend.SpeechPath, speechBody(text), "PAYMENT-SIGNATURE", sig), http.StatusOK); rec["status"] != "success" {
		t.Fatalf("%v", rec)
	}
	spent := w.tokens(t)
	top := challenge(t)
	asTopUp := rewrite(t, sig, func(p *x402.PaymentPayload) { p.Accepted = top.Accepts[0]; p.Resource = &top.Resource })
	for _, bearer := range []string{key, ""} {
		r := do(t, "POST", topUpPath, bearer, nil, "PAYMENT-SIGNATURE", asTopUp)
		if body := wantStatus(t, r, http.StatusPaymentRequired); body["error"] != "invalid_payload: authorization nonce already submitted" {
			t.Fatalf("%v", body)
		}
	}
	if balanceUSD(t, key) != 5 || walletBalance(t, w) != 0 || w.tokens(t) != spent {
		t.Fatal("a reused speech payment bought credit")
	}

	// The same payment for another text at the same price: 409.
	r := env.Do(t, "POST", frontend.SpeechPath, speechBody("Another text, same price."), "PAYMENT-SIGNATURE", sig)
	if e := wantStatus(t, r, http.StatusConflict); e["code"] != "PAYMENT_ALREADY_REDEEMED" || e["transaction"] == nil {
		t.Fatalf("%v", e)
	}

	// A fresh payment signed for music (0.06) does not buy 0.06 of speech.
	music := map[string]any{"prompt": "calm piano", "seconds": 15}
	mpr := challengeFor(t, frontend.MusicPath, music)
	long := strings.Repeat("Sixty cents of speech. ", 6)[:130]
	spr := challengeFor(t, frontend.SpeechPath, speechBody(long))
	if mpr.Accepts[0].Amount != spr.Accepts[0].Amount {
		t.Fatalf("prices differ: music %s, speech %s", mpr.Accepts[0].Amount, spr.Accepts[0].Amount)
	}
	msig := w.pay(t, mpr)
	before := w.tokens(t)
	r = env.Do(t, "POST", frontend.SpeechPath, speechBody(long), "PAYMENT-SIGNATURE", msig)
	if e := wantStatus(t, r, http.StatusPaymentRequired); !strings.Contains(e["error"].(string), "was made for "+env.URL+frontend.MusicPath) {
		t.Fatalf("%v", e)
	}
	if w.tokens(t) != before {
		t.Fatal("a music payment bought speech")
	}
	// It still buys the music it was made for.
	if rec := wantStatus(t, env.Do(t, "POST", frontend.MusicPath, music, "PAYMENT-SIGNATURE", msig), http.StatusOK); rec["status"] != "success" {
		t.Fatalf("%v", rec)
	}
}

// Items 2 and 8: forged headers (a real payer and nonce, a broken
// signature) are refused before anything is keyed on them, even after the
// genuine payment settled; refusals that depend on chain state are not
// final; a replay without the bearer learns nothing of its account.
func TestForgedPaymentsChangeNothing(t *testing.T) {
	acct, key := env.NewAccount(t)
	w := newWallet(t, 10*money.USD)
	pr := challenge(t)
	genuine := w.pay(t, pr)
	forged := forge(t, genuine)
	p, _ := x402.DecodePaymentPayload(genuine)
	ep, _, _ := x402.ParseEVMPayload(p.Payload)
	id := workflows.TopUpWorkflowID(pr.Accepts[0].Network, strings.ToLower(w.addr.Hex()), strings.ToLower(ep.Authorization.Nonce), acct)

	// Forged first: refused, nothing recorded, no workflow under the
	// payment's id, so the genuine payment is unaffected.
	if body := wantStatus(t, do(t, "POST", topUpPath, key, nil, "PAYMENT-SIGNATURE", forged), http.StatusPaymentRequired); !strings.Contains(body["error"].(string), "signature") {
		t.Fatalf("%v", body)
	}
	workflowAbsent(t, id)
	if n := paymentRows(t, pr.Accepts[0].Network, w.addr.Hex()); len(n) != 0 {
		t.Fatalf("a forged payment was recorded: %v", n)
	}
	body := wantStatus(t, do(t, "POST", topUpPath, key, nil, "PAYMENT-SIGNATURE", genuine), http.StatusOK)
	if body["grantedUsd"].(float64) != 5 || body["duplicate"] != false || body["balanceUsd"].(float64) != 10 {
		t.Fatalf("%v", body)
	}
	// Forged after: still refused, with and without the bearer: no balance.
	for _, bearer := range []string{key, ""} {
		if body := wantStatus(t, do(t, "POST", topUpPath, bearer, nil, "PAYMENT-SIGNATURE", forged), http.StatusPaymentRequired); body["balanceUsd"] != nil {
			t.Fatalf("%v", body)
		}
	}
	// The genuine replay with the bearer: duplicate, nothing granted.
	again := wantStatus(t, do(t, "POST", topUpPath, key, nil, "PAYMENT-SIGNATURE", genuine), http.StatusOK)
	if again["duplicate"] != true || again["grantedUsd"].(float64) != 0 || again["balanceUsd"].(float64) != 10 {
		t.Fatalf("%v", again)
	}
	// The genuine replay without the bearer: the payment bought credit
	// for another account; it is spent, and that account's balance stays
	// unknown.
	anon := wantStatus(t, env.Do(t, "POST", topUpPath, nil, "PAYMENT-SIGNATURE", genuine), http.StatusPaymentRequired)
	if anon["error"] != "invalid_payload: authorization nonce already submitted" || anon["balanceUsd"] != nil {
		t.Fatalf("%v", anon)
	}
	if balanceUSD(t, key) != 10 || w.tokens(t) != 5_000_000 {
		t.Fatal("replays moved money")
	}

	// Refused while unfunded, bought once funded: the refusal is not final.
	poor := newWallet(t, 0)
	sig := poor.pay(t, challenge(t))
	if body := wantStatus(t, env.Do(t, "POST", topUpPath, nil, "PAYMENT-SIGNATURE", sig), http.StatusPaymentRequired); !strings.HasPrefix(body["error"].(string), "invalid_payload: execution reverted") {
		t.Fatalf("%v", body)
	}
	if _, err := env.Platform.Payments.Mint(context.Background(), poor.addr.Hex(), 5*money.USD); err != nil {
		t.Fatal(err)
	}
	if body := wantStatus(t, env.Do(t, "POST", topUpPath, nil, "PAYMENT-SIGNATURE", sig), http.StatusOK); body["grantedUsd"].(float64) != 5 || body["balanceUsd"].(float64) != 5 {
		t.Fatalf("%v", body)
	}

	// Pay-per-call: a forged header naming a real payment is a 402, never
	// a 409 or the earlier run.
	text := "Forged copies buy nothing."
	ssig := w.pay(t, challengeFor(t, frontend.SpeechPath, speechBody(text)))
	wantStatus(t, env.Do(t, "POST", frontend.SpeechPath, speechBody(text), "PAYMENT-SIGNATURE", ssig), http.StatusOK)
	if e := wantStatus(t, env.Do(t, "POST", frontend.SpeechPath, speechBody(text), "PAYMENT-SIGNATURE", forge(t, ssig)), http.StatusPaymentRequired); e["runId"] != nil {
		t.Fatalf("%v", e)
	}
}

// Item 3: the chain accepts a payment and the answer is lost (the worker
// dies, the connection drops) before it is recorded. The retry finds the
// settlement on the chain instead of refusing a paid buyer. Both networks,
// top-up and pay-per-call.
func TestSettlementIsCrashSafe(t *testing.T) {
	t.Run("evm top-up", func(t *testing.T) {
		w := newWallet(t, 10*money.USD)
		env.Faults.LoseSettleAnswers(1)
		body := wantStatus(t, env.Do(t, "POST", topUpPath, nil, "PAYMENT-SIGNATURE", w.pay(t, challenge(t))), http.StatusOK)
		if body["grantedUsd"].(float64) != 5 || body["balanceUsd"].(float64) != 5 || w.tokens(t) != 5_000_000 {
			t.Fatalf("%v tokens %d", body, w.tokens(t))
		}
		if rows := paymentRows(t, "eip155:8453", w.addr.Hex()); rows["settled"] != 1 || len(rows) != 1 {
			t.Fatalf("%v", rows)
		}
	})
	t.Run("solana top-up", func(t *testing.T) {
		k := solWallet(t, 10*money.USD)
		pr := challenge(t)
		env.Faults.LoseSettleAnswers(1)
		body := wantStatus(t, env.Do(t, "POST", topUpPath, nil, "PAYMENT-SIGNATURE", solPay(t, k, pr)), http.StatusOK)
		left, _ := env.Platform.Store.SVMBalance(context.Background(), pr.Accepts[1].Asset, k.PublicKey().String())
		if body["grantedUsd"].(float64) != 5 || body["balanceUsd"].(float64) != 5 || left != 5_000_000 {
			t.Fatalf("%v left %d", body, left)
		}
	})
	// The chaos campaign's find: the answer is lost, and by the retry the
	// transaction's blockhash has aged out, so the resubmission is refused
	// for that before any duplicate check. The payment landed, so the
	// chain is asked and the top-up is granted, not refused.
	t.Run("solana top-up resubmitted after its blockhash expired", func(t *testing.T) {
		k := solWallet(t, 10*money.USD)
		pr := challenge(t)
		env.Faults.LoseSettleAnswers(1)
		env.Faults.ExpireSettles(1)
		body := wantStatus(t, env.Do(t, "POST", topUpPath, nil, "PAYMENT-SIGNATURE", solPay(t, k, pr)), http.StatusOK)
		left, _ := env.Platform.Store.SVMBalance(context.Background(), pr.Accepts[1].Asset, k.PublicKey().String())
		if body["grantedUsd"].(float64) != 5 || body["balanceUsd"].(float64) != 5 || left != 5_000_000 {
			t.Fatalf("%v left %d", body, left)
		}
	})
	t.Run("evm speech", func(t *testing.T) {
		w := newWallet(t, money.USD)
		env.Faults.LoseSettleAnswers(1)
		rec := wantStatus(t, buy(t, frontend.SpeechPath, w, speechBody("Paid once, recorded once.")), http.StatusOK)
		if rec["status"] != "success" || usd(rec["paidUsd"]) != 20_000 || w.tokens(t) != 980_000 || walletBalance(t, w) != 0 {
			t.Fatalf("%v tokens %d", rec, w.tokens(t))
		}
	})
	t.Run("facilitator down before settling", func(t *testing.T) {
		w := newWallet(t, 10*money.USD)
		env.Faults.FailSettles(2)
		body := wantStatus(t, env.Do(t, "POST", topUpPath, nil, "PAYMENT-SIGNATURE", w.pay(t, challenge(t))), http.StatusOK)
		if body["grantedUsd"].(float64) != 5 || w.tokens(t) != 5_000_000 {
			t.Fatalf("%v", body)
		}
	})
}

// Item 4: the same paid request ten times at once: one 200, nine 409, and
// no workflow left running.
func TestConcurrentReplaysOfOnePaidRequest(t *testing.T) {
	since := time.Now()
	w := newWallet(t, money.USD)
	text := "Ten at once."
	sig := w.pay(t, challengeFor(t, frontend.SpeechPath, speechBody(text)))
	var wg sync.WaitGroup
	codes := make(chan int, 10)
	for range 10 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			codes <- env.Do(t, "POST", frontend.SpeechPath, map[string]any{"text": text, "async": true}, "PAYMENT-SIGNATURE", sig).Status
		}()
	}
	wg.Wait()
	close(codes)
	count := map[int]int{}
	for c := range codes {
		count[c]++
	}
	if count[200] != 1 || count[409] != 9 {
		t.Fatalf("answers %v", count)
	}
	noneLeftRunning(t, since)
	if w.tokens(t) != 980_000 {
		t.Fatalf("tokens %d", w.tokens(t))
	}
}

// Item 6: a wallet's account holds only what it paid, so a refused 0.02
// speech cannot be retried as a 1.26 render on free credit.
func TestNoFreeCreditForWallets(t *testing.T) {
	w := newWallet(t, money.USD)
	rec := wantStatus(t, buy(t, frontend.SpeechPath, w, speechBody("This is a bomb threat.")), http.StatusOK)
	if rec["status"] != "error" || usd(rec["balanceUsd"]) != 20_000 {
		t.Fatalf("%v", rec)
	}
	e := wantStatus(t, post(t, rec["retryUrl"].(string), speechBody(strings.Repeat("Long text for an expensive retry. ", 88)[:2990])), http.StatusPaymentRequired)
	if usd(e["balanceUsd"]) != 20_000 || usd(e["priceUsd"]) != 1_260_000 {
		t.Fatalf("%v", e)
	}
	if walletBalance(t, w) != 20_000 {
		t.Fatal("the refused retry moved credit")
	}
}

// Item 7: forged headers naming a wallet do not spend its per-wallet budget.
func TestWalletLimitCountsOnlyVerifiedPayments(t *testing.T) {
	cfg := *env.Config
	cfg.X402.WalletRateLimit = "2-M"
	deps := env.Platform.FrontendDeps()
	deps.Config = &cfg
	srv := serve(t, deps)
	w := newWallet(t, money.USD)
	text := "Counted after the signature."
	pr := challengeFor(t, frontend.SpeechPath, speechBody(text))
	for range 5 {
		if r, _, _ := send(t, "POST", srv+frontend.SpeechPath, speechBody(text), "PAYMENT-SIGNATURE", forge(t, w.pay(t, pr))); r != http.StatusPaymentRequired {
			t.Fatalf("forged: %d", r)
		}
	}
	for i := range 3 {
		want := http.StatusOK
		if i == 2 {
			want = http.StatusTooManyRequests
		}
		if r, _, _ := send(t, "POST", srv+frontend.SpeechPath, map[string]any{"text": text, "async": true}, "PAYMENT-SIGNATURE", w.pay(t, pr)); r != want {
			t.Fatalf("genuine call %d: %d, want %d", i, r, want)
		}
	}
}

// Item 9: the payer is spelled EIP-55 in every answer.
func TestPayerIsChecksummedEverywhere(t *testing.T) {
	w := newWallet(t, 10*money.USD)
	want := w.addr.Hex()
	r := env.Do(t, "POST", topUpPath, nil, "PAYMENT-SIGNATURE", w.pay(t, challenge(t)))
	body := wantStatus(t, r, http.StatusOK)
	sr, _ := x402.DecodeSettleResponse(r.Header.Get("PAYMENT-RESPONSE"))
	if body["payer"] != want || sr.Payer != want {
		t.Fatalf("top-up %v, PAYMENT-RESPONSE %q", body["payer"], sr.Payer)
	}
	r = buy(t, frontend.SpeechPath, w, speechBody("Spelled one way."))
	rec := wantStatus(t, r, http.StatusOK)
	sr, _ = x402.DecodeSettleResponse(r.Header.Get("PAYMENT-RESPONSE"))
	if rec["payer"] != want || sr.Payer != want {
		t.Fatalf("record %v, PAYMENT-RESPONSE %q", rec["payer"], sr.Payer)
	}
	if polled := wantStatus(t, get(t, rec["statusUrl"].(string)), http.StatusOK); polled["payer"] != want {
		t.Fatalf("polled %v", polled["payer"])
	}
}
