package frontend_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"

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
		found := ""
		for end := time.Now().Add(30 * time.Second); found == "" && time.Now().Before(end); time.Sleep(200 * time.Millisecond) {
			resp, err := env.Platform.Temporal.ListWorkflow(context.Background(), &workflowservice.ListWorkflowExecutionsRequest{Query: c.query})
			if err != nil {
				t.Fatalf("%s: %v", c.query, err)
			}
			for _, e := range resp.Executions {
				if strings.HasPrefix(e.GetExecution().GetWorkflowId(), c.want) {
					found = e.GetExecution().GetWorkflowId()
				}
			}
		}
		if found == "" {
			t.Fatalf("nothing found for %s", c.query)
		}
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
	var prompts, status []string
	for i := range 3 {
		prompt := "bounded " + t.Name() + " " + string(rune('a'+i))
		rec := wantStatus(t, buyVideo(t, w, map[string]any{"prompt": prompt, "model": "kine-3.0", "async": true}), http.StatusOK)
		if rec["status"] != "running" || rec["transaction"] == nil {
			t.Fatalf("purchase %d was not taken at once: %v", i, rec)
		}
		prompts, status = append(prompts, prompt), append(status, rec["statusUrl"].(string))
	}
	submitted := func() (n int) {
		for _, p := range prompts {
			n += min(1, env.Studio.Submits(p))
		}
		return n
	}
	env.Studio.WaitSubmitted(t, prompts[0])
	env.Studio.WaitSubmitted(t, prompts[1])
	// The third has no slot while the first two are held at the studio.
	time.Sleep(1500 * time.Millisecond)
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
	for end := time.Now().Add(20 * time.Second); live == nil && time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
		if rec := wantStatus(t, do(t, "GET", path, key, nil), http.StatusOK); rec["status"] == "running" && rec["nodes"] != nil {
			live = rec
		}
	}
	if live == nil {
		t.Fatal("no live progress while the run was open")
	}
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
