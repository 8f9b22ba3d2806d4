package frontend_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/workflowservice/v1"

	"conduit/app/apptest"
	"conduit/internal/money"
	"conduit/workflows"
)

// echoGraph: question → prompt → local-echo → output "answer".
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

func createPipeline(t *testing.T, key string, draft any) string {
	t.Helper()
	body := wantStatus(t, do(t, "POST", "/api/pipelines", key, map[string]any{"name": t.Name(), "draft": draft}), http.StatusCreated)
	return body["id"].(string)
}

func publish(t *testing.T, key, id string) map[string]any {
	t.Helper()
	return wantStatus(t, do(t, "POST", "/api/pipelines/"+id+"/publish", key, nil), http.StatusOK)
}

func invoke(t *testing.T, key, id string, inputs any, headers ...string) map[string]any {
	t.Helper()
	return wantStatus(t, do(t, "POST", "/api/pipelines/"+id+"/invoke", key, map[string]any{"inputs": inputs}, headers...), http.StatusAccepted)
}

// waitRun polls the statusUrl until the run leaves running.
func waitRun(t *testing.T, key, statusURL string) map[string]any {
	t.Helper()
	path := strings.TrimPrefix(statusURL, env.URL)
	var body map[string]any
	apptest.Eventually(t, 60*time.Second, "the run to leave running", func() error {
		if body = wantStatus(t, do(t, "GET", path, key, nil), http.StatusOK); body["status"] == "running" {
			return fmt.Errorf("still running: %v", body)
		}
		return nil
	})
	return body
}

func balanceUSD(t *testing.T, key string) float64 {
	t.Helper()
	return wantStatus(t, do(t, "GET", "/api/account/balance", key, nil), http.StatusOK)["balanceUsd"].(float64)
}

func TestAuthorPublishInvokePoll(t *testing.T) {
	acct, key := env.NewAccount(t)
	id := createPipeline(t, key, echoGraph("Q: {{question}}", "local-echo"))

	// A draft is never served.
	r := do(t, "POST", "/api/pipelines/"+id+"/invoke", key, map[string]any{"inputs": map[string]any{"question": "hi"}})
	if body := wantStatus(t, r, http.StatusConflict); !strings.Contains(body["error"].(string), "is not published") {
		t.Fatalf("%v", body)
	}

	pub := publish(t, key, id)
	if pub["servingVersion"].(float64) != 1 {
		t.Fatalf("%v", pub)
	}
	contract := pub["contract"].(map[string]any)
	if fmt.Sprint(contract["outputs"]) != "[answer]" || fmt.Sprint(contract["inputs"]) != "[map[key:question required:true]]" {
		t.Fatalf("contract %v", contract)
	}

	acc := invoke(t, key, id, map[string]any{"question": "What is a pipeline?"})
	runID := acc["runId"].(string)
	if acc["status"] != "running" || acc["version"].(float64) != 1 || !strings.Contains(runID, "#") || len(runID) != len("2026-11-22T11:30:00.123Z#a1b2c3d4") {
		t.Fatalf("accept body %v", acc)
	}
	if want := env.URL + "/api/pipelines/" + id + "/invoke?runId=" + url.QueryEscape(runID); acc["statusUrl"] != want {
		t.Fatalf("statusUrl %v, want %s", acc["statusUrl"], want)
	}

	run := waitRun(t, key, acc["statusUrl"].(string))
	if run["status"] != "success" || run["version"].(float64) != 1 {
		t.Fatalf("run %v", run)
	}
	if out := run["outputs"].(map[string]any); out["answer"] != "Q: What is a pipeline?" {
		t.Fatalf("outputs %v", out)
	}
	usage := run["usage"].(map[string]any)
	// "Q: What is a pipeline?" is 7 cl100k tokens; local-echo echoes it.
	if usage["prompt"].(float64) != 7 || usage["completion"].(float64) != 7 || usage["total"].(float64) != 14 {
		t.Fatalf("usage %v", usage)
	}
	// 7 × 0.0001/1K = 0.7 → 1 micro-USD, 7 × 0.0002/1K = 1.4 → 2: each part rounds up.
	if usage["costUsd"].(float64) != 0.000003 {
		t.Fatalf("costUsd %v", usage["costUsd"])
	}
	for _, f := range []string{"startedAt", "finishedAt", "durationMs"} {
		if run[f] == nil {
			t.Fatalf("finished run lacks %s: %v", f, run)
		}
	}
	// Charged exactly the cost, once.
	bal, err := env.Platform.Store.Balance(context.Background(), acct)
	if err != nil || bal != 5*money.USD-3 {
		t.Fatalf("balance %s %v", bal, err)
	}
}

func TestPublishRollbackServeTheRightVersion(t *testing.T) {
	_, key := env.NewAccount(t)
	id := createPipeline(t, key, echoGraph("v1: {{question}}", "local-echo"))
	publish(t, key, id)

	// Editing the draft changes nothing that serves.
	wantStatus(t, do(t, "PUT", "/api/pipelines/"+id+"/draft", key, map[string]any{"draft": echoGraph("v2: {{question}}", "local-echo")}), http.StatusOK)
	run := waitRun(t, key, invoke(t, key, id, map[string]any{"question": "x"})["statusUrl"].(string))
	if run["outputs"].(map[string]any)["answer"] != "v1: x" {
		t.Fatalf("draft leaked into serving: %v", run)
	}

	publish(t, key, id)
	acc := invoke(t, key, id, map[string]any{"question": "x"})
	if acc["version"].(float64) != 2 {
		t.Fatalf("%v", acc)
	}
	if run := waitRun(t, key, acc["statusUrl"].(string)); run["outputs"].(map[string]any)["answer"] != "v2: x" || run["version"].(float64) != 2 {
		t.Fatalf("%v", run)
	}

	rb := wantStatus(t, do(t, "POST", "/api/pipelines/"+id+"/rollback", key, map[string]any{"version": 1}), http.StatusOK)
	if rb["servingVersion"].(float64) != 1 {
		t.Fatalf("%v", rb)
	}
	acc = invoke(t, key, id, map[string]any{"question": "x"})
	if run := waitRun(t, key, acc["statusUrl"].(string)); run["outputs"].(map[string]any)["answer"] != "v1: x" || acc["version"].(float64) != 1 {
		t.Fatalf("%v", run)
	}

	vs := wantStatus(t, do(t, "GET", "/api/pipelines/"+id+"/versions", key, nil), http.StatusOK)["versions"].([]any)
	if len(vs) != 2 || vs[0].(map[string]any)["version"].(float64) != 2 || vs[1].(map[string]any)["serving"] != true {
		t.Fatalf("versions %v", vs)
	}
	v2 := wantStatus(t, do(t, "GET", "/api/pipelines/"+id+"/versions/2", key, nil), http.StatusOK)
	if !strings.Contains(fmt.Sprint(v2["graph"]), "v2: {{question}}") || v2["serving"] != false {
		t.Fatalf("%v", v2)
	}
	wantStatus(t, do(t, "POST", "/api/pipelines/"+id+"/rollback", key, map[string]any{"version": 7}), http.StatusNotFound)
	wantStatus(t, do(t, "POST", "/api/pipelines/"+id+"/rollback", key, map[string]any{}), http.StatusBadRequest)
	wantStatus(t, do(t, "GET", "/api/pipelines/"+id+"/versions/9", key, nil), http.StatusNotFound)
}

func TestInvalidDraftIsSavedButNotPublished(t *testing.T) {
	_, key := env.NewAccount(t)
	id := createPipeline(t, key, echoGraph("{{question}} {{nowhere}}", "gpt-unknown"))
	got := wantStatus(t, do(t, "GET", "/api/pipelines/"+id, key, nil), http.StatusOK)
	v := got["draftValidation"].(map[string]any)
	if v["valid"] != false || !strings.Contains(fmt.Sprint(v["problems"]), `unknown model "gpt-unknown"`) || !strings.Contains(fmt.Sprint(v["problems"]), "{{nowhere}} has no source") {
		t.Fatalf("%v", v)
	}
	r := do(t, "POST", "/api/pipelines/"+id+"/publish", key, nil)
	body := wantStatus(t, r, http.StatusBadRequest)
	if body["error"] != "the draft is not valid; nothing was published" || len(body["problems"].([]any)) != 2 {
		t.Fatalf("%v", body)
	}
	if got := wantStatus(t, do(t, "GET", "/api/pipelines/"+id, key, nil), http.StatusOK); got["servingVersion"] != nil {
		t.Fatal("an invalid draft was published")
	}
	// Malformed graphs are refused outright.
	r = do(t, "PUT", "/api/pipelines/"+id+"/draft", key, map[string]any{"draft": map[string]any{"nodes": "x"}})
	if body := wantStatus(t, r, http.StatusBadRequest); !strings.Contains(body["error"].(string), "draft is not a pipeline graph") {
		t.Fatalf("%v", body)
	}
}

func TestFailingModelNodeIsNotCharged(t *testing.T) {
	acct, key := env.NewAccount(t)
	id := createPipeline(t, key, echoGraph("{{question}}", "local-echo"))
	publish(t, key, id)
	// local-echo takes at most 8192 prompt tokens; this is 9001.
	run := waitRun(t, key, invoke(t, key, id, map[string]any{"question": strings.Repeat("word ", 9000)})["statusUrl"].(string))
	if run["status"] != "error" || !strings.Contains(run["error"].(string), `node "llm" failed: prompt has 9001 tokens; local-echo accepts at most 8192`) {
		t.Fatalf("%v", run)
	}
	if u := run["usage"].(map[string]any); u["costUsd"].(float64) != 0 {
		t.Fatalf("failed run reports a cost: %v", u)
	}
	if bal, _ := env.Platform.Store.Balance(context.Background(), acct); bal != 5*money.USD {
		t.Fatalf("failed run changed the balance: %s", bal)
	}
}

func TestGuardrailBlockAndPartial(t *testing.T) {
	acct, key := env.NewAccount(t)
	graph := map[string]any{
		"nodes": []map[string]any{
			{"id": "question", "type": "input", "key": "question"},
			{"id": "llm", "type": "model", "model": "local-echo", "prompt": "{{question}}"},
			{"id": "check", "type": "guardrail", "input": "llm", "rules": []map[string]any{{"kind": "pii"}}, "action": "block"},
			{"id": "answer", "type": "output", "key": "answer", "from": "check"},
			{"id": "shout", "type": "prompt", "transform": "upper", "source": "question"},
			{"id": "loud", "type": "output", "key": "loud", "from": "shout"},
		},
		"edges": []map[string]any{
			{"from": "question", "to": "llm"}, {"from": "llm", "to": "check"}, {"from": "check", "to": "answer"},
			{"from": "question", "to": "shout"}, {"from": "shout", "to": "loud"},
		},
	}
	id := createPipeline(t, key, graph)
	publish(t, key, id)

	run := waitRun(t, key, invoke(t, key, id, map[string]any{"question": "write to ann@example.com"})["statusUrl"].(string))
	if run["status"] != "partial" || !strings.Contains(run["error"].(string), `guardrail "check" blocked the run: pii: value contains an email address`) {
		t.Fatalf("%v", run)
	}
	if out := run["outputs"].(map[string]any); out["loud"] != "WRITE TO ANN@EXAMPLE.COM" || out["answer"] != nil {
		t.Fatalf("outputs %v", out)
	}
	if bal, _ := env.Platform.Store.Balance(context.Background(), acct); bal != 5*money.USD {
		t.Fatalf("partial run charged: %s", bal)
	}
	run = waitRun(t, key, invoke(t, key, id, map[string]any{"question": "all clear"})["statusUrl"].(string))
	if run["status"] != "success" || run["outputs"].(map[string]any)["answer"] != "all clear" {
		t.Fatalf("%v", run)
	}
}

func TestInsufficientCreditsIs402AndStartsNothing(t *testing.T) {
	acct, key := env.NewAccount(t)
	id := createPipeline(t, key, echoGraph("{{question}}", "local-echo"))
	publish(t, key, id)
	// Spend the whole balance on a hold, as if other runs were in flight.
	if _, err := env.Platform.Store.Hold(context.Background(), acct, 5*money.USD, "drain/"+acct); err != nil {
		t.Fatal(err)
	}
	r := do(t, "POST", "/api/pipelines/"+id+"/invoke", key, map[string]any{"inputs": map[string]any{"question": "x"}})
	body := wantStatus(t, r, http.StatusPaymentRequired)
	if body["code"] != "INSUFFICIENT_CREDITS" || body["balanceUsd"].(float64) != 0 || body["topUpUrl"] != env.URL+"/dashboard/credits" || !strings.HasPrefix(body["error"].(string), "insufficient credits") {
		t.Fatalf("%v", body)
	}
	// The amount needed is a number too, the one the prose names.
	if req, _ := body["requiredUsd"].(float64); req <= 0 || !strings.Contains(body["error"].(string), "up to "+strconv.FormatFloat(req, 'f', -1, 64)) {
		t.Fatalf("requiredUsd %v beside %q", body["requiredUsd"], body["error"])
	}
	runs := wantStatus(t, do(t, "GET", "/api/pipelines/"+id+"/runs", key, nil), http.StatusOK)["runs"].([]any)
	if len(runs) != 0 {
		t.Fatalf("a refused invoke left a run: %v", runs)
	}
}

func TestIdempotentInvoke(t *testing.T) {
	acct, key := env.NewAccount(t)
	id := createPipeline(t, key, echoGraph("{{question}}", "local-echo"))
	publish(t, key, id)
	var wg sync.WaitGroup
	ids := make([]string, 6)
	for i := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ids[i] = invoke(t, key, id, map[string]any{"question": "once"}, "Idempotency-Key", "order-42")["runId"].(string)
		}()
	}
	wg.Wait()
	for _, r := range ids[1:] {
		if r != ids[0] {
			t.Fatalf("one key started several runs: %v", ids)
		}
	}
	waitRun(t, key, env.URL+"/api/pipelines/"+id+"/invoke?runId="+url.QueryEscape(ids[0]))
	// After it finished, the same key still answers the same run.
	again := invoke(t, key, id, map[string]any{"question": "once"}, "Idempotency-Key", "order-42")
	if again["runId"] != ids[0] {
		t.Fatalf("%v", again)
	}
	runs := wantStatus(t, do(t, "GET", "/api/pipelines/"+id+"/runs", key, nil), http.StatusOK)["runs"].([]any)
	if len(runs) != 1 {
		t.Fatalf("%d runs", len(runs))
	}
	if bal, _ := env.Platform.Store.Balance(context.Background(), acct); bal != 5*money.USD-2 {
		t.Fatalf("charged %s", 5*money.USD-bal)
	}
	// Another account's identical key is its own.
	_, other := env.NewAccount(t)
	id2 := createPipeline(t, other, echoGraph("{{question}}", "local-echo"))
	publish(t, other, id2)
	if r := invoke(t, other, id2, map[string]any{"question": "once"}, "Idempotency-Key", "order-42"); r["runId"] == ids[0] {
		t.Fatal("idempotency keys leak across accounts")
	}
}

func TestWorkerRestartMidRunFinishesOnceAndChargesOnce(t *testing.T) {
	acct, key := env.NewAccount(t)
	// local-echo-slow streams 25 ms a token: ~3 s for this prompt.
	id := createPipeline(t, key, echoGraph("{{question}}", "local-echo-slow"))
	publish(t, key, id)
	acc := invoke(t, key, id, map[string]any{"question": strings.Repeat("slow ", 120)})
	runID := acc["runId"].(string)

	// Wait until the model call is under way, then kill the worker.
	apptest.Eventually(t, 20*time.Second, "the model activity to start", func() error {
		desc, err := env.Platform.Temporal.DescribeWorkflowExecution(context.Background(), workflows.PipelineRunWorkflowID(runID), "")
		if err != nil {
			return err
		}
		if len(desc.PendingActivities) == 0 {
			return errors.New("no pending activity")
		}
		return nil
	})
	time.Sleep(300 * time.Millisecond) // into the call: tokens are streaming
	env.StopWorker()
	time.Sleep(500 * time.Millisecond) // a short outage, as a crash and restart give
	if err := env.StartWorker(); err != nil {
		t.Fatal(err)
	}

	run := waitRun(t, key, acc["statusUrl"].(string))
	if run["status"] != "success" || run["outputs"].(map[string]any)["answer"] != strings.Repeat("slow ", 120) {
		t.Fatalf("%v", run)
	}
	// The model call really was cut off and run again.
	iter := env.Platform.Temporal.GetWorkflowHistory(context.Background(), workflows.PipelineRunWorkflowID(runID), "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	maxAttempt := int32(0)
	for iter.HasNext() {
		ev, err := iter.Next()
		if err != nil {
			t.Fatal(err)
		}
		if a := ev.GetActivityTaskStartedEventAttributes(); a != nil {
			maxAttempt = max(maxAttempt, a.Attempt)
		}
	}
	if maxAttempt < 2 {
		t.Fatalf("the model activity was not retried after the worker stopped (attempt %d)", maxAttempt)
	}
	r, err := env.Platform.Store.Run(context.Background(), runID)
	if err != nil {
		t.Fatal(err)
	}
	n, charged, err := env.Platform.Store.ChargesForHold(context.Background(), r.HoldID)
	if err != nil || n != 1 || charged != r.Cost || charged == 0 {
		t.Fatalf("charges: %d totalling %s (run cost %s) %v", n, charged, r.Cost, err)
	}
	if bal, _ := env.Platform.Store.Balance(context.Background(), acct); bal != 5*money.USD-charged {
		t.Fatalf("balance %s", bal)
	}
}

func TestInvokeErrors(t *testing.T) {
	_, key := env.NewAccount(t)
	_, other := env.NewAccount(t)
	id := createPipeline(t, key, echoGraph("{{question}}", "local-echo"))
	publish(t, key, id)
	noIO := createPipeline(t, key, map[string]any{"nodes": []any{}, "edges": []any{}})
	publish(t, key, noIO)

	cases := []struct {
		name, method, path, key string
		body                    any
		status                  int
		want                    string
	}{
		{"no key", "POST", "/api/pipelines/" + id + "/invoke", "", map[string]any{"inputs": map[string]any{}}, 401, "missing API key"},
		{"another account", "POST", "/api/pipelines/" + id + "/invoke", other, map[string]any{"inputs": map[string]any{"question": "x"}}, 403, "does not own pipeline"},
		{"unknown pipeline", "POST", "/api/pipelines/pl_nope/invoke", key, map[string]any{"inputs": map[string]any{}}, 404, `pipeline "pl_nope" not found`},
		{"inputs missing", "POST", "/api/pipelines/" + id + "/invoke", key, map[string]any{}, 400, "inputs is required and must be a JSON object"},
		{"inputs not object", "POST", "/api/pipelines/" + id + "/invoke", key, map[string]any{"inputs": []int{1}}, 400, "inputs is required and must be a JSON object"},
		{"required key missing", "POST", "/api/pipelines/" + id + "/invoke", key, map[string]any{"inputs": map[string]any{"other": 1}}, 400, "missing required input: question"},
		{"no input or output node", "POST", "/api/pipelines/" + noIO + "/invoke", key, map[string]any{"inputs": map[string]any{}}, 409, "pipeline has no input node and no output node"},
		{"poll without runId", "GET", "/api/pipelines/" + id + "/invoke", key, nil, 400, "runId is required"},
		{"poll unknown run", "GET", "/api/pipelines/" + id + "/invoke?runId=" + url.QueryEscape("2026-01-01T00:00:00.000Z#00000000"), key, nil, 404, "not found"},
		{"poll other account", "GET", "/api/pipelines/" + id + "/invoke?runId=x", other, nil, 403, "does not own"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			body := wantStatus(t, do(t, c.method, c.path, c.key, c.body), c.status)
			if msg, _ := body["error"].(string); !strings.Contains(msg, c.want) || len(body) != 1 {
				t.Fatalf("want {error} mentioning %q, got %v", c.want, body)
			}
		})
	}
	runs := wantStatus(t, do(t, "GET", "/api/pipelines/"+id+"/runs", key, nil), http.StatusOK)["runs"].([]any)
	if len(runs) != 0 {
		t.Fatalf("refused requests left runs: %v", runs)
	}
	// A run of one pipeline is not found through another.
	acc := invoke(t, key, id, map[string]any{"question": "x"})
	id2 := createPipeline(t, key, echoGraph("{{question}}", "local-echo"))
	wantStatus(t, do(t, "GET", "/api/pipelines/"+id2+"/invoke?runId="+url.QueryEscape(acc["runId"].(string)), key, nil), http.StatusNotFound)
}

func TestScopesOnPipelineRoutes(t *testing.T) {
	_, readOnly := env.NewAccount(t, "pipelines:read")
	wantStatus(t, do(t, "POST", "/api/pipelines", readOnly, map[string]any{"name": "x"}), http.StatusForbidden)
	wantStatus(t, do(t, "GET", "/api/pipelines", readOnly, nil), http.StatusOK)
}

func TestRunHistoryNewestFirstPagedAndFiltered(t *testing.T) {
	_, key := env.NewAccount(t)
	id := createPipeline(t, key, echoGraph("{{question}}", "local-echo"))
	publish(t, key, id)
	var last map[string]any
	for i := range 3 {
		last = invoke(t, key, id, map[string]any{"question": fmt.Sprint("q", i)})
		waitRun(t, key, last["statusUrl"].(string))
	}
	failing := invoke(t, key, id, map[string]any{"question": strings.Repeat("word ", 9000)})
	waitRun(t, key, failing["statusUrl"].(string))

	page := wantStatus(t, do(t, "GET", "/api/pipelines/"+id+"/runs?limit=2", key, nil), http.StatusOK)
	runs := page["runs"].([]any)
	if len(runs) != 2 || runs[0].(map[string]any)["runId"] != failing["runId"] || runs[1].(map[string]any)["runId"] != last["runId"] {
		t.Fatalf("page 1 %v", runs)
	}
	next := strings.TrimPrefix(page["nextUrl"].(string), env.URL)
	page2 := wantStatus(t, do(t, "GET", next, key, nil), http.StatusOK)
	if len(page2["runs"].([]any)) != 2 || page2["nextUrl"] != nil {
		t.Fatalf("page 2 %v", page2)
	}
	errs := wantStatus(t, do(t, "GET", "/api/pipelines/"+id+"/runs?status=error", key, nil), http.StatusOK)["runs"].([]any)
	if len(errs) != 1 || errs[0].(map[string]any)["status"] != "error" {
		t.Fatalf("filtered %v", errs)
	}
	wantStatus(t, do(t, "GET", "/api/pipelines/"+id+"/runs?status=weird", key, nil), http.StatusBadRequest)
	wantStatus(t, do(t, "GET", "/api/pipelines/"+id+"/runs?limit=0", key, nil), http.StatusBadRequest)
}

func TestRunsAreFindableInTemporal(t *testing.T) {
	_, key := env.NewAccount(t)
	id := createPipeline(t, key, echoGraph("{{question}}", "local-echo"))
	publish(t, key, id)
	acc := invoke(t, key, id, map[string]any{"question": "x"})
	waitRun(t, key, acc["statusUrl"].(string))
	apptest.Eventually(t, 10*time.Second, "the run to be listed by its search attributes", func() error {
		resp, err := env.Platform.Temporal.ListWorkflow(context.Background(), &workflowservice.ListWorkflowExecutionsRequest{
			Query: fmt.Sprintf("PipelineId = '%s' AND PipelineVersion = 1 AND RunStatus = 'success'", id),
		})
		if err != nil {
			t.Fatal(err)
		}
		if len(resp.Executions) == 1 && resp.Executions[0].Execution.WorkflowId == workflows.PipelineRunWorkflowID(acc["runId"].(string)) {
			return nil
		}
		return fmt.Errorf("listed: %v", resp.Executions)
	})
}

func TestLongOutputsAreTruncatedWithAFlag(t *testing.T) {
	_, key := env.NewAccount(t)
	graph := map[string]any{
		"nodes": []map[string]any{
			{"id": "text", "type": "input", "key": "text"},
			{"id": "out", "type": "output", "key": "out", "from": "text"},
			{"id": "link", "type": "input", "key": "link"},
			{"id": "url", "type": "output", "key": "url", "from": "link"},
		},
		"edges": []map[string]any{{"from": "text", "to": "out"}, {"from": "link", "to": "url"}},
	}
	id := createPipeline(t, key, graph)
	publish(t, key, id)
	long := strings.Repeat("é", 9000)
	media := "https://cdn.example.com/v.mp4?" + strings.Repeat("a", 9000)
	run := waitRun(t, key, invoke(t, key, id, map[string]any{"text": long, "link": media})["statusUrl"].(string))
	out := run["outputs"].(map[string]any)
	if len([]rune(out["out"].(string))) != 8000 || out["url"] != media || fmt.Sprint(run["truncatedOutputs"]) != "[out]" {
		t.Fatalf("truncation: %d chars, flag %v", len([]rune(out["out"].(string))), run["truncatedOutputs"])
	}
	// A pipeline with no model node costs nothing and needs no credit.
	if run["usage"].(map[string]any)["costUsd"].(float64) != 0 || run["status"] != "success" {
		t.Fatalf("%v", run)
	}
}
