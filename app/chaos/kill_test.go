package chaos_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	mrand "math/rand/v2"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gagliardetto/solana-go"
	"github.com/gagliardetto/solana-go/rpc"

	"conduit/app/apptest"
	"conduit/frontend"
	"conduit/internal/money"
	"conduit/internal/payments"
	"conduit/internal/x402"
)

// Environment variables that vary the campaign.
const (
	seedEnv   = "CONDUIT_CHAOS_SEED"
	roundsEnv = "CONDUIT_CHAOS_ROUNDS"
)

// The campaign's requests, with every answer they got.
type (
	invokeReq struct {
		pipeline string
		slow     bool
		// key is the Idempotency-Key ("" for none).
		key      string
		question string

		mu sync.Mutex
		// accepted are the run ids of every 202 (a keyed request is
		// retried after a 503 until it gets one; each unkeyed attempt is
		// a request of its own).
		accepted []string
		// replayed counts 202s marked Idempotent-Replayed.
		replayed int
		// refused counts 503s ("nothing was charged" for unkeyed ones).
		refused int
		// via picks the API replica each attempt goes to (nil: the
		// harness's API); the scale-out test spreads requests over
		// frontend processes.
		via func() string
	}
	paidReq struct {
		kind   string // "render" or "topup"
		wallet solana.PrivateKey
		minted money.Micros
		header string
		body   any
		bearer bool

		mu       sync.Mutex
		statuses []int
		// answers are the 200 bodies.
		answers []map[string]any
		// expired: the payment reached settlement after its blockhash
		// left the validity window (a worker dead long enough) and was
		// refused, as a validator refuses it.
		expired bool
		// via: as invokeReq's.
		via func() string
		// lost counts presentations whose answer never came (the API
		// replica died holding the request).
		lost int
	}
)

// A kill and what was open when it landed.
type kill struct {
	round int
	after time.Duration
	open  int
}

// TestKillCampaign is #14's kill -9 campaign on the real stack. Each
// round starts a mixed batch of pipeline runs (fast inline and slow
// model calls, some with an Idempotency-Key), a paid speech render and a
// credit top-up (both paid on the embedded Solana network), SIGKILLs the
// worker process at a random moment, and starts a new one. Requests that
// got a 503 or no answer are retried as a client would. Afterwards every
// run, render and top-up must have ended exactly once with its money
// right: see checkCampaign.
func TestKillCampaign(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv(seedEnv); s != "" {
		var err error
		if seed, err = strconv.ParseUint(s, 10, 64); err != nil {
			t.Fatalf("%s=%q is not a number", seedEnv, s)
		}
	}
	rounds := 15
	if s := os.Getenv(roundsEnv); s != "" {
		var err error
		if rounds, err = strconv.Atoi(s); err != nil || rounds < 1 {
			t.Fatalf("%s=%q is not a positive number", roundsEnv, s)
		}
	}
	t.Logf("kill campaign: seed %d (%s=%d reruns it), %d rounds", seed, seedEnv, seed, rounds)
	rng := mrand.New(mrand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	ctx := context.Background()
	began := time.Now()

	// Only the child process polls: the harness's in-process worker stops.
	env.StopWorker()
	w := &workerProc{t: t, env: workerEnv(env.Config), logDir: t.TempDir()}
	t.Cleanup(w.stop)

	acct, key := env.NewAccount(t)
	initial, err := env.Platform.Store.Balance(ctx, acct)
	if err != nil {
		t.Fatal(err)
	}
	fast := createPipeline(t, key, echoGraph("Q: {{question}}", "local-echo"))
	slow := createPipeline(t, key, echoGraph("Slowly: {{question}}", "local-echo-slow"))
	topUp := challengeFor(t, payments.TopUpPath, nil)
	solOffer := solanaOffer(t, topUp)

	var invokes []*invokeReq
	var paid []*paidReq
	var kills []kill
	var wg sync.WaitGroup
	invoke := func(r *invokeReq) {
		invokes = append(invokes, r)
		wg.Add(1)
		go func() { defer wg.Done(); runInvoke(t, key, r) }()
	}
	// One round's worker stays dead longer than the API waits for an
	// admission (30 s), so requests get 503s: keyed ones retry, unkeyed
	// ones were told nothing was charged.
	long := rng.IntN(rounds)
	since := time.Now()
	w.start()
	for round := range rounds {
		// The batch: two to four runs, a render and a top-up most rounds.
		for range 2 + rng.IntN(3) {
			r := &invokeReq{pipeline: fast, question: words(rng, 3+rng.IntN(10))}
			if rng.IntN(2) == 0 {
				// 25 ms a token: 1 to 3 s in the model, so kills land mid-call.
				r.pipeline, r.slow, r.question = slow, true, words(rng, 30+rng.IntN(60))
			}
			if rng.IntN(3) != 0 {
				r.key = fmt.Sprintf("chaos-%d-%d-%d", seed, round, len(invokes))
			}
			invoke(r)
		}
		if rng.IntN(4) != 0 {
			body := map[string]any{"text": "Round " + strconv.Itoa(round) + ": " + words(rng, 2+rng.IntN(6)), "async": true}
			p := &paidReq{kind: "render", wallet: newWallet(t, money.USD), minted: money.USD, body: body}
			p.header = solPay(t, p.wallet, solanaOffer(t, challengeFor(t, frontend.SpeechPath, body)))
			paid = append(paid, p)
			wg.Add(1)
			go func() { defer wg.Done(); runPaid(t, key, p, frontend.SpeechPath) }()
		}
		if rng.IntN(4) != 0 {
			p := &paidReq{kind: "topup", wallet: newWallet(t, 6*money.USD), minted: 6 * money.USD, bearer: rng.IntN(2) == 0}
			p.header = solPay(t, p.wallet, solOffer)
			paid = append(paid, p)
			wg.Add(1)
			go func() { defer wg.Done(); runPaid(t, key, p, payments.TopUpPath) }()
		}

		after := time.Duration(rng.IntN(1500)) * time.Millisecond
		time.Sleep(after)
		k := kill{round: round, after: after, open: openWorkflows(t, since)}
		w.kill()
		kills = append(kills, k)
		t.Logf("round %d: killed the worker %v after the batch, %d workflows open", round, after, k.open)
		switch {
		case round == long:
			// Asked while no worker runs: one request without a key and
			// one with, both answered 503 when the outage outlasts the
			// API's wait.
			invoke(&invokeReq{pipeline: fast, question: words(rng, 5)})
			invoke(&invokeReq{pipeline: fast, question: words(rng, 5), key: fmt.Sprintf("chaos-%d-%d-outage", seed, round)})
			outage := 31*time.Second + time.Duration(rng.IntN(5000))*time.Millisecond
			t.Logf("round %d: the worker stays dead for %v", round, outage)
			time.Sleep(outage)
		case rng.IntN(2) == 0:
			time.Sleep(time.Duration(rng.IntN(1000)) * time.Millisecond)
		}
		w.start()
	}
	t.Logf("%d rounds in %v; draining with one worker", rounds, time.Since(began).Round(time.Millisecond))

	// One worker stays up: every request gets its answer, every workflow
	// closes.
	waited := make(chan struct{})
	go func() { wg.Wait(); close(waited) }()
	select {
	case <-waited:
	case <-time.After(4 * time.Minute):
		t.Fatal("requests still unanswered 4 minutes after the last kill")
	}
	apptest.Eventually(t, 3*time.Minute, "every workflow to close after the last answer", func() error {
		if n := openWorkflows(t, since); n != 0 {
			return fmt.Errorf("%d still open", n)
		}
		return nil
	})
	t.Logf("drained after %v", time.Since(began).Round(time.Millisecond))

	checkCampaign(t, campaign{
		account: acct, key: key, initial: initial, since: since,
		invokes: invokes, paid: paid, kills: kills, offer: solOffer,
	})
	t.Logf("campaign checked after %v: %d pipeline requests, %d paid requests, %d kills",
		time.Since(began).Round(time.Millisecond), len(invokes), len(paid), len(kills))
}

// runInvoke sends one invoke as a careful client: a keyed request is
// retried with the same key after a 503 or a lost answer until it is
// accepted; an unkeyed one that gets a 503 ("nothing was charged") is
// asked again as a new request.
func runInvoke(t *testing.T, key string, r *invokeReq) {
	body := map[string]any{"inputs": map[string]any{"question": r.question}}
	headers := []string{"Authorization", "Bearer " + key}
	if r.key != "" {
		headers = append(headers, "Idempotency-Key", r.key)
	}
	for end := time.Now().Add(4 * time.Minute); time.Now().Before(end); {
		// Admission waits at most 30 s, so the API always answers first.
		resp, err := sendVia(r.via, "POST", "/api/pipelines/"+r.pipeline+"/invoke", body, 45*time.Second, headers...)
		switch {
		case err != nil && r.key == "":
			// The API runs in this process and is never killed: an
			// unkeyed request's outcome must never be unknown.
			t.Errorf("unkeyed invoke: no answer: %v", err)
			return
		case err != nil:
			t.Logf("keyed invoke %s: no answer (%v); retrying", r.key, err)
		case resp.status == http.StatusAccepted:
			r.mu.Lock()
			r.accepted = append(r.accepted, resp.json["runId"].(string))
			if resp.header.Get("Idempotent-Replayed") == "true" {
				r.replayed++
			}
			r.mu.Unlock()
			return
		case resp.status == http.StatusServiceUnavailable:
			r.mu.Lock()
			r.refused++
			r.mu.Unlock()
		default:
			t.Errorf("invoke (key %q): %d %s", r.key, resp.status, resp.body)
			return
		}
		time.Sleep(500 * time.Millisecond)
	}
	t.Errorf("invoke (key %q) never accepted", r.key)
}

// runPaid presents one Solana payment as a careful client: after a 503
// or a lost answer the same PAYMENT-SIGNATURE is presented again, as the
// protocol allows (the payment is settled at most once).
func runPaid(t *testing.T, key string, p *paidReq, path string) {
	var headers []string
	if p.bearer {
		headers = append(headers, "Authorization", "Bearer "+key)
	}
	headers = append(headers, "PAYMENT-SIGNATURE", p.header)
	for end := time.Now().Add(4 * time.Minute); time.Now().Before(end); {
		// A render's admission waits up to 2 minutes; a top-up waits for
		// its workflow as long as the caller does.
		resp, err := sendVia(p.via, "POST", path, p.body, 150*time.Second, headers...)
		if err != nil {
			p.mu.Lock()
			p.lost++
			p.mu.Unlock()
			t.Logf("%s: no answer (%v); presenting the payment again", p.kind, err)
			time.Sleep(500 * time.Millisecond)
			continue
		}
		p.mu.Lock()
		p.statuses = append(p.statuses, resp.status)
		if resp.status == http.StatusOK {
			p.answers = append(p.answers, resp.json)
		}
		p.mu.Unlock()
		switch resp.status {
		case http.StatusOK:
			return
		case http.StatusServiceUnavailable:
			// A render answers 503 only when its admission outlasted the
			// wait; its run (if the payment was taken) finishes on its own.
			if p.kind == "render" {
				return
			}
		case http.StatusPaymentRequired:
			if strings.Contains(string(resp.body), "Blockhash not found") {
				p.mu.Lock()
				p.expired = true
				p.mu.Unlock()
				return
			}
			t.Errorf("%s: %d %s", p.kind, resp.status, resp.body)
			return
		case http.StatusConflict:
			// The same render payment presented again after its answer
			// was lost: already redeemed by the first presentation.
			if p.kind == "render" && len(p.statuses)+p.lost > 1 {
				return
			}
			t.Errorf("%s: %d %s", p.kind, resp.status, resp.body)
			return
		default:
			t.Errorf("%s: %d %s", p.kind, resp.status, resp.body)
			return
		}
		time.Sleep(500 * time.Millisecond)
	}
	t.Errorf("%s: never answered", p.kind)
}

// response is an answered request.
type response struct {
	status int
	header http.Header
	body   []byte
	json   map[string]any
}

var client = &http.Client{}

// send sends a request to the API without failing the test (it runs on
// the campaign's goroutines).
func send(method, path string, body any, timeout time.Duration, headers ...string) (*response, error) {
	return sendVia(nil, method, path, body, timeout, headers...)
}

// sendVia is send to the API replica via names (nil: the harness's API).
func sendVia(via func() string, method, path string, body any, timeout time.Duration, headers ...string) (*response, error) {
	base := env.URL
	if via != nil {
		base = via()
	}
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return nil, err
		}
		rd = bytes.NewReader(b)
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, base+path, rd)
	if err != nil {
		return nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	out := &response{status: resp.StatusCode, header: resp.Header, body: b}
	if len(bytes.TrimSpace(b)) > 0 {
		if err := json.Unmarshal(b, &out.json); err != nil {
			return nil, fmt.Errorf("%d with a body that is not JSON (%v): %s", resp.StatusCode, err, b)
		}
	}
	return out, nil
}

// mustSend is send on the test's goroutine.
func mustSend(t *testing.T, method, path string, body any, want int, headers ...string) *response {
	t.Helper()
	resp, err := send(method, path, body, time.Minute, headers...)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	if resp.status != want {
		t.Fatalf("%s %s: %d, want %d: %s", method, path, resp.status, want, resp.body)
	}
	return resp
}

// echoGraph: question → prompt → model → output "answer".
func echoGraph(template, model string) map[string]any {
	return map[string]any{
		"nodes": []map[string]any{
			{"id": "question", "type": "input", "key": "question"},
			{"id": "prompt", "type": "prompt", "template": template},
			{"id": "llm", "type": "model", "model": model, "prompt": "{{prompt}}", "maxTokens": 400},
			{"id": "answer", "type": "output", "key": "answer", "from": "llm"},
		},
		"edges": []map[string]any{
			{"from": "question", "to": "prompt"}, {"from": "prompt", "to": "llm"}, {"from": "llm", "to": "answer"},
		},
	}
}

func createPipeline(t *testing.T, key string, graph any) string {
	t.Helper()
	auth := []string{"Authorization", "Bearer " + key}
	id := mustSend(t, "POST", "/api/pipelines", map[string]any{"name": "chaos", "draft": graph}, http.StatusCreated, auth...).json["id"].(string)
	mustSend(t, "POST", "/api/pipelines/"+id+"/publish", nil, http.StatusOK, auth...)
	return id
}

// challengeFor posts body unpaid and decodes the 402's challenge.
func challengeFor(t *testing.T, path string, body any) x402.PaymentRequired {
	t.Helper()
	resp := mustSend(t, "POST", path, body, http.StatusPaymentRequired)
	pr, err := x402.DecodePaymentRequired(resp.header.Get(x402.HeaderPaymentRequired))
	if err != nil {
		t.Fatal(err)
	}
	return pr
}

// solanaOffer is the challenge's Solana offer.
func solanaOffer(t *testing.T, pr x402.PaymentRequired) x402.PaymentRequirements {
	t.Helper()
	for _, a := range pr.Accepts {
		if strings.HasPrefix(a.Network, "solana:") {
			return a
		}
	}
	t.Fatalf("no Solana offer in %+v", pr.Accepts)
	return x402.PaymentRequirements{}
}

// newWallet is a Solana wallet holding usd of play tokens on the
// embedded ledger (in PostgreSQL, which the worker process settles on).
func newWallet(t *testing.T, usd money.Micros) solana.PrivateKey {
	t.Helper()
	k, err := solana.NewRandomPrivateKey()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := env.Platform.Payments.Mint(context.Background(), k.PublicKey().String(), usd); err != nil {
		t.Fatal(err)
	}
	return k
}

// solPay signs the Solana offer as a Solana client would.
func solPay(t *testing.T, k solana.PrivateKey, offer x402.PaymentRequirements) string {
	t.Helper()
	// A recent blockhash from the embedded network, as the official
	// client gets it.
	bh, err := rpc.New(env.Platform.Payments.SolanaRPC).GetLatestBlockhash(context.Background(), rpc.CommitmentFinalized)
	if err != nil {
		t.Fatal(err)
	}
	p, err := x402.SignSVM(offer, k, bh.Value.Blockhash)
	if err != nil {
		t.Fatal(err)
	}
	h, err := x402.EncodeHeader(p)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

var vocabulary = strings.Fields("the quick brown fox jumps over a lazy dog while seven wizards quietly judge every boxing match near old river banks")

// words is n words of text.
func words(rng *mrand.Rand, n int) string {
	out := make([]string, n)
	for i := range out {
		out[i] = vocabulary[rng.IntN(len(vocabulary))]
	}
	return strings.Join(out, " ")
}
