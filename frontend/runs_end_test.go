package frontend_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"

	"conduit/app/apptest"
	"conduit/frontend"
	"conduit/internal/money"
	"conduit/internal/store"
	"conduit/workflows"
)

// #14 item 1: a NUL character cannot be stored by PostgreSQL, so every
// text field of every endpoint refuses it before anything happens — with a
// valid payment attached, nothing is settled.
func TestNULTextIsRefusedBeforeAnything(t *testing.T) {
	w := newWallet(t, 10*money.USD)
	for _, c := range []struct {
		path string
		body map[string]any
	}{
		{frontend.SpeechPath, map[string]any{"text": "hello\u0000world"}},
		{frontend.VideoPath, map[string]any{"prompt": "a cat\u0000"}},
		{frontend.MusicPath, map[string]any{"prompt": "\u0000 calm piano"}},
	} {
		clean := map[string]any{}
		for k, v := range c.body {
			clean[k] = strings.ReplaceAll(v.(string), "\u0000", "")
		}
		sig := w.pay(t, challengeFor(t, c.path, clean))
		e := wantStatus(t, env.Do(t, "POST", c.path, c.body, "PAYMENT-SIGNATURE", sig), http.StatusBadRequest)
		if !strings.Contains(e["error"].(string), "NUL") {
			t.Fatalf("%s: %v", c.path, e)
		}
	}
	if w.tokens(t) != 10_000_000 {
		t.Fatalf("tokens %d: a refused request was settled", w.tokens(t))
	}
	// A literal backslash-u0000 is text, not a NUL.
	rec := wantStatus(t, buy(t, frontend.SpeechPath, w, map[string]any{"text": `the escape \u0000 spelled out`}), http.StatusOK)
	if rec["status"] != "success" {
		t.Fatalf("%v", rec)
	}

	_, key := env.NewAccount(t)
	id := createPipeline(t, key, echoGraph("Q: {{question}}", "local-echo"))
	publish(t, key, id)
	e := wantStatus(t, do(t, "POST", "/api/pipelines/"+id+"/invoke", key, map[string]any{"inputs": map[string]any{"question": "a\u0000b"}}), http.StatusBadRequest)
	if !strings.Contains(e["error"].(string), "NUL") {
		t.Fatalf("%v", e)
	}
	chat := do(t, "POST", "/api/pipelines/"+id+"/chat/completions", key, map[string]any{"messages": []map[string]any{{"role": "user", "content": "hi\u0000"}}})
	if b := wantStatus(t, chat, http.StatusBadRequest); b["error"].(map[string]any)["type"] != "invalid_request_error" {
		t.Fatalf("%v", b)
	}
	if balanceUSD(t, key) != 5 {
		t.Fatal("a refused run moved credit")
	}
}

// #14 item 2: a run whose result can never be recorded (here: an output
// PostgreSQL's jsonb refuses, from input that reached the workflow past
// an older edge) ends anyway — as an error, its hold released — instead
// of retrying forever with the credit held.
func TestUnstorableResultEndsTheRun(t *testing.T) {
	acct, key := env.NewAccount(t)
	id := createPipeline(t, key, echoGraph("Q: {{question}}", "local-echo"))
	v := publish(t, key, id)
	ctx := context.Background()
	p, err := env.Platform.Store.Pipeline(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	ver, err := env.Platform.Store.Version(ctx, id, *p.ServingVersion)
	if err != nil {
		t.Fatal(err)
	}
	runID := time.Now().UTC().Format("2006-01-02T15:04:05.000Z") + "#nul00000"
	if _, _, err := env.Platform.Store.StartRun(ctx, store.NewRun{
		RunID: runID, PipelineID: id, Version: ver.Version, AccountID: acct, Kind: "invoke",
		Inputs: map[string]string{"question": "clean"}, StartedAt: time.Now(), Hold: money.USD,
	}); err != nil {
		t.Fatal(err)
	}
	if balanceUSD(t, key) != 4 {
		t.Fatalf("hold not taken: %v", v)
	}
	run, err := env.Platform.Temporal.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID: workflows.PipelineRunWorkflowID(runID), TaskQueue: workflows.PipelineQueue,
		WorkflowIDReusePolicy: enumspb.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE,
	}, workflows.WfPipelineRun, workflows.RunInput{
		RunID: runID, PipelineID: id, Version: ver.Version, AccountID: acct, Graph: ver.Graph,
		Inputs: map[string]string{"question": "un\u0000storable"}, Held: money.USD, ModelTimeout: time.Minute, ModelAttempts: 2,
		Kind: "invoke", StartedAt: time.Now(), WorkflowID: workflows.PipelineRunWorkflowID(runID),
	})
	if err != nil {
		t.Fatal(err)
	}
	waitCtx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	var state workflows.RunState
	if err := run.Get(waitCtx, &state); err != nil {
		t.Fatalf("the run did not end: %v", err)
	}
	r, err := env.Platform.Store.Run(ctx, runID)
	if err != nil || r.Status != "error" || !strings.Contains(r.Error, "could not be recorded") || len(r.Outputs) != 0 {
		t.Fatalf("%+v %v", r, err)
	}
	if balanceUSD(t, key) != 5 {
		t.Fatal("the hold of an unrecordable run was not released")
	}
}

// #14 item 9: operators find renders and top-ups by kind, model, payer,
// network and outcome; a failed render is findable as failed.
func TestRendersAndTopUpsAreFindable(t *testing.T) {
	w := newWallet(t, 10*money.USD)
	rec := wantStatus(t, buy(t, frontend.SpeechPath, w, map[string]any{"text": "This is a bomb threat."}), http.StatusOK)
	if rec["status"] != "error" {
		t.Fatalf("%v", rec)
	}
	wantStatus(t, env.Do(t, "POST", topUpPath, nil, "PAYMENT-SIGNATURE", w.pay(t, challenge(t))), http.StatusOK)
	payer := w.addr.Hex()
	for _, c := range []struct{ query, want string }{
		{"Kind = 'speech' AND Model = 'speech-v3' AND RunStatus = 'error' AND Network = 'eip155:8453' AND Payer = '" + payer + "'",
			workflows.RenderWorkflowID(rec["runId"].(string))},
		{"Kind = 'topup' AND RunStatus = 'success' AND Payer = '" + payer + "'", "topup/"},
	} {
		apptest.Eventually(t, 30*time.Second, "a "+c.want+" workflow listed by "+c.query, func() error {
			resp, err := env.Platform.Temporal.ListWorkflow(context.Background(), &workflowservice.ListWorkflowExecutionsRequest{Query: c.query})
			if err != nil {
				t.Fatalf("%s: %v", c.query, err)
			}
			for _, e := range resp.Executions {
				if strings.HasPrefix(e.GetExecution().GetWorkflowId(), c.want) {
					return nil
				}
			}
			return fmt.Errorf("%d listed, none matches", len(resp.Executions))
		})
	}
}

// #14 item 3: a template that amplifies a large input ends the run with a
// clear node error and its hold released, instead of a workflow task that
// fails forever with the credit held; an input over the per-value limit
// is refused before anything is held.
func TestTemplateAmplificationEndsTheRun(t *testing.T) {
	_, key := env.NewAccount(t)
	id := createPipeline(t, key, echoGraph("{{question}}{{question}}{{question}}", "local-echo"))
	publish(t, key, id)
	run := invoke(t, key, id, map[string]any{"question": strings.Repeat("q", 300<<10)})
	rec := waitRun(t, key, run["statusUrl"].(string))
	if rec["status"] != "error" || !strings.Contains(rec["error"].(string), "limit per node") {
		t.Fatalf("%v", rec["error"])
	}
	if balanceUSD(t, key) != 5 {
		t.Fatal("the hold of an amplified run was not released")
	}
	e := wantStatus(t, do(t, "POST", "/api/pipelines/"+id+"/invoke", key, map[string]any{"inputs": map[string]any{"question": strings.Repeat("q", 600<<10)}}), http.StatusBadRequest)
	if !strings.Contains(e["error"].(string), "limit per value") {
		t.Fatalf("%v", e)
	}
}

// #14 item 6: renders run at most temporal.render_concurrency at once per
// worker (2 in the harness); a third waits for a slot, and settlement is on
// another queue, so the third purchase is still taken at once.
func TestRendersAreBoundedPerWorker(t *testing.T) {
	if n := env.Config.Temporal.RenderConcurrency; n != 2 {
		t.Fatalf("the harness runs %d renders at once, this test expects 2", n)
	}
	w := newWallet(t, 10*money.USD)
	var prompts, status, runIDs []string
	for i := range 3 {
		prompt := "bounded " + t.Name() + " " + string(rune('a'+i))
		rec := wantStatus(t, buyVideo(t, w, map[string]any{"prompt": prompt, "model": "kine-3.0", "async": true}), http.StatusOK)
		if rec["status"] != "running" || rec["transaction"] == nil {
			t.Fatalf("purchase %d was not taken at once: %v", i, rec)
		}
		prompts, status = append(prompts, prompt), append(status, rec["statusUrl"].(string))
		runIDs = append(runIDs, rec["runId"].(string))
	}
	submitted := func() (n int) {
		for _, p := range prompts {
			n += min(1, env.Studio.Submits(p))
		}
		return n
	}
	env.Studio.WaitSubmitted(t, prompts[0])
	env.Studio.WaitSubmitted(t, prompts[1])
	// The third has no slot while the first two are held at the studio:
	// its render is on the queue (scheduled), and stays there.
	renderScheduled := func() error {
		desc, err := env.Platform.Temporal.DescribeWorkflowExecution(context.Background(), workflows.RenderWorkflowID(runIDs[2]), "")
		if err != nil {
			return err
		}
		for _, pa := range desc.GetPendingActivities() {
			if pa.GetActivityType().GetName() == workflows.ActRender {
				if pa.GetState() != enumspb.PENDING_ACTIVITY_STATE_SCHEDULED {
					t.Fatalf("the third render left the queue while two held the slots: %v", pa.GetState())
				}
				return nil
			}
		}
		return errors.New("its render is not scheduled yet")
	}
	apptest.Eventually(t, 30*time.Second, "the third render to wait on the queue", renderScheduled)
	time.Sleep(500 * time.Millisecond) // a worker with a free slot takes a task within milliseconds
	if err := renderScheduled(); err != nil {
		t.Fatal(err)
	}
	if n := submitted(); n != 2 {
		t.Fatalf("%d renders reached the studio at once", n)
	}
	env.Studio.Release(prompts[0])
	env.Studio.WaitSubmitted(t, prompts[2])
	env.Studio.Release(prompts[1])
	env.Studio.Release(prompts[2])
	for _, s := range status {
		if rec := finished(t, s); rec["status"] != "success" {
			t.Fatalf("%v", rec)
		}
	}
}

// #14 item 8: while a run is open its statusUrl answers from the workflow
// (live per-node progress; a render's stage); once closed, from
// PostgreSQL, in the same format.
func TestPollingAnswersFromTheWorkflowWhileOpen(t *testing.T) {
	_, key := env.NewAccount(t)
	id := createPipeline(t, key, echoGraph("Q: {{question}}", "local-echo-slow"))
	publish(t, key, id)
	run := invoke(t, key, id, map[string]any{"question": strings.Repeat("word ", 150)})
	path := strings.TrimPrefix(run["statusUrl"].(string), env.URL)
	var live map[string]any
	apptest.Eventually(t, 20*time.Second, "live progress while the run is open", func() error {
		if rec := wantStatus(t, do(t, "GET", path, key, nil), http.StatusOK); rec["status"] != "running" || rec["nodes"] == nil {
			return fmt.Errorf("status %v, nodes %v", rec["status"], rec["nodes"])
		} else {
			live = rec
		}
		return nil
	})
	status := map[string]string{}
	for _, n := range live["nodes"].([]any) {
		n := n.(map[string]any)
		status[n["id"].(string)] = n["status"].(string)
	}
	if status["question"] != "success" || status["llm"] != "running" || status["answer"] != "pending" {
		t.Fatalf("nodes %v", status)
	}
	if done := waitRun(t, key, run["statusUrl"].(string)); done["status"] != "success" || done["nodes"] != nil || done["outputs"] == nil {
		t.Fatalf("%v", done)
	}

	w := newWallet(t, 5*money.USD)
	prompt := "stage " + t.Name()
	rec := wantStatus(t, buyVideo(t, w, map[string]any{"prompt": prompt, "model": "kine-3.0", "async": true}), http.StatusOK)
	env.Studio.WaitSubmitted(t, prompt)
	if polled := wantStatus(t, get(t, rec["statusUrl"].(string)), http.StatusOK); polled["status"] != "running" || polled["stage"] != "rendering" {
		t.Fatalf("%v", polled)
	}
	env.Studio.Release(prompt)
	if final := finished(t, rec["statusUrl"].(string)); final["status"] != "success" || final["stage"] != nil {
		t.Fatalf("%v", final)
	}
}

// #14 item 4: an Idempotency-Key is bound to its pipeline and to the
// request it first came with. The same key with the same body answers the
// same run (marked replayed), with another body is a 409 that changes
// nothing, and on another pipeline of the same account is another request.
func TestIdempotencyKeyIsBoundToItsRequest(t *testing.T) {
	acct, key := env.NewAccount(t)
	id := createPipeline(t, key, echoGraph("{{question}}", "local-echo"))
	publish(t, key, id)
	first := do(t, "POST", "/api/pipelines/"+id+"/invoke", key, map[string]any{"inputs": map[string]any{"question": "once"}}, "Idempotency-Key", "order-7")
	acc := wantStatus(t, first, http.StatusAccepted)
	if first.Header.Get("Idempotent-Replayed") != "" {
		t.Fatal("a first request is not a replay")
	}
	waitRun(t, key, acc["statusUrl"].(string))
	before := balanceUSD(t, key)

	again := do(t, "POST", "/api/pipelines/"+id+"/invoke", key, map[string]any{"inputs": map[string]any{"question": "once"}}, "Idempotency-Key", "order-7")
	if b := wantStatus(t, again, http.StatusAccepted); b["runId"] != acc["runId"] || b["status"] != "success" || again.Header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("replay: %v %v", b, again.Header)
	}
	other := do(t, "POST", "/api/pipelines/"+id+"/invoke", key, map[string]any{"inputs": map[string]any{"question": "twice"}}, "Idempotency-Key", "order-7")
	b := wantStatus(t, other, http.StatusConflict)
	if msg, _ := b["error"].(string); !strings.Contains(msg, "order-7") || !strings.Contains(msg, "different request") || !strings.Contains(msg, acc["runId"].(string)) {
		t.Fatalf("conflict: %v", b)
	}
	// Another pipeline of the same account: another request, another run.
	id2 := createPipeline(t, key, echoGraph("{{question}}", "local-echo"))
	publish(t, key, id2)
	acc2 := invoke(t, key, id2, map[string]any{"question": "twice"}, "Idempotency-Key", "order-7")
	if acc2["runId"] == acc["runId"] {
		t.Fatal("a key on another pipeline answered the first pipeline's run")
	}
	waitRun(t, key, acc2["statusUrl"].(string))
	runs := wantStatus(t, do(t, "GET", "/api/pipelines/"+id+"/runs", key, nil), http.StatusOK)["runs"].([]any)
	if len(runs) != 1 {
		t.Fatalf("%d runs on the first pipeline", len(runs))
	}
	if after := balanceUSD(t, key); before-after > 0.0001 {
		t.Fatalf("the replay or the refusal moved credit: %v → %v", before, after)
	}
	_ = acct
}

// #14 item 4: admission is the run workflow's first step. While no worker
// runs, a request waits and nothing exists but the workflow (no run row,
// no hold); once a worker is back the run is admitted, answered and run,
// and the same key then answers that run. No run exists without its
// workflow, and no hold without its run.
func TestAdmissionIsTheWorkflowsFirstStep(t *testing.T) {
	acct, key := env.NewAccount(t)
	id := createPipeline(t, key, echoGraph("{{question}}", "local-echo"))
	publish(t, key, id)
	env.StopWorker()
	defer func() {
		if err := env.StartWorker(); err != nil {
			t.Fatal(err)
		}
	}()
	answered := make(chan *apptest.Response, 1)
	go func() {
		answered <- env.Do(t, "POST", "/api/pipelines/"+id+"/invoke", map[string]any{"inputs": map[string]any{"question": "queued"}},
			append(apptest.Bearer(key), "Idempotency-Key", "queued-1")...)
	}()
	wfID := workflows.KeyedRunWorkflowID(acct, id, "queued-1")
	apptest.Eventually(t, 20*time.Second, "the run's workflow to start", func() error {
		_, err := env.Platform.Temporal.DescribeWorkflowExecution(context.Background(), wfID, "")
		return err
	})
	time.Sleep(300 * time.Millisecond) // a moment for a too-early write to show
	if runs := wantStatus(t, do(t, "GET", "/api/pipelines/"+id+"/runs", key, nil), http.StatusOK)["runs"].([]any); len(runs) != 0 {
		t.Fatalf("a run was written before its workflow admitted it: %v", runs)
	}
	if bal := balanceUSD(t, key); bal != 5 {
		t.Fatalf("credit held before admission: %v", bal)
	}
	if err := env.StartWorker(); err != nil {
		t.Fatal(err)
	}
	r := <-answered
	acc := wantStatus(t, r, http.StatusAccepted)
	run := waitRun(t, key, acc["statusUrl"].(string))
	if run["status"] != "success" {
		t.Fatalf("%v", run)
	}
	stored, err := env.Platform.Store.Run(context.Background(), acc["runId"].(string))
	if err != nil || stored.WorkflowID != wfID {
		t.Fatalf("the run names workflow %q, want %q (%v)", stored.WorkflowID, wfID, err)
	}
	again := invoke(t, key, id, map[string]any{"question": "queued"}, "Idempotency-Key", "queued-1")
	if again["runId"] != acc["runId"] {
		t.Fatalf("the key answered another run: %v", again)
	}
}
