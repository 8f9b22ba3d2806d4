package frontend_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"conduit/internal/accounts"
	"conduit/internal/money"
)

// bearerTransport adds an API key to every request, as an assistant's MCP
// client configured with a key does.
type bearerTransport struct{ key string }

func (b bearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.key)
	return http.DefaultTransport.RoundTrip(r)
}

// progressLog collects the progress notifications a client receives.
type progressLog struct {
	mu    sync.Mutex
	notes []*mcp.ProgressNotificationParams
}

func (p *progressLog) all() []*mcp.ProgressNotificationParams {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]*mcp.ProgressNotificationParams(nil), p.notes...)
}

// connectMCP opens a session with the official Go client over streamable
// HTTP, authenticated with key.
func connectMCP(t *testing.T, key string, progress *progressLog) *mcp.ClientSession {
	t.Helper()
	return connectMCPAt(t, key, progress, "")
}

// connectMCPAt asks for a protocol revision: "" for the client's latest
// (sessionless, 2026-07-28), "2025-11-25" for the last one with sessions.
func connectMCPAt(t *testing.T, key string, progress *progressLog, version string) *mcp.ClientSession {
	t.Helper()
	opts := &mcp.ClientOptions{}
	if progress != nil {
		opts.ProgressNotificationHandler = func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
			progress.mu.Lock()
			progress.notes = append(progress.notes, req.Params)
			progress.mu.Unlock()
		}
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "conduit-test", Version: "1"}, opts)
	transport := &mcp.StreamableClientTransport{Endpoint: env.URL + "/api/mcp", HTTPClient: &http.Client{Transport: bearerTransport{key}}}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, err := client.Connect(ctx, transport, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatalf("connecting to /api/mcp: %v", err)
	}
	if got := cs.InitializeResult().ProtocolVersion; version != "" && got != version {
		t.Fatalf("negotiated protocol %s, asked for %s", got, version)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

// callTool calls a tool and returns its result, failing on a transport
// or protocol error (tool errors are results).
func callTool(t *testing.T, cs *mcp.ClientSession, name string, args any, progressToken ...any) *mcp.CallToolResult {
	t.Helper()
	params := &mcp.CallToolParams{Name: name, Arguments: args}
	if len(progressToken) > 0 {
		params.SetProgressToken(progressToken[0])
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	res, err := cs.CallTool(ctx, params)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return res
}

// toolOK calls a tool that must succeed and returns its structured result.
func toolOK(t *testing.T, cs *mcp.ClientSession, name string, args any, progressToken ...any) map[string]any {
	t.Helper()
	res := callTool(t, cs, name, args, progressToken...)
	if res.IsError {
		t.Fatalf("%s(%v) is a tool error: %s", name, args, toolText(res))
	}
	out, ok := res.StructuredContent.(map[string]any)
	if !ok {
		t.Fatalf("%s: structured content %T", name, res.StructuredContent)
	}
	// The text content is the same JSON, for clients that read only text.
	var fromText map[string]any
	if err := json.Unmarshal([]byte(toolText(res)), &fromText); err != nil || !jsonEqual(fromText, out) {
		t.Fatalf("%s: text content %s does not match the structured content", name, toolText(res))
	}
	return out
}

// toolErr calls a tool that must answer a tool error containing want.
func toolErr(t *testing.T, cs *mcp.ClientSession, name string, args any, want string) string {
	t.Helper()
	res := callTool(t, cs, name, args)
	if !res.IsError || !strings.Contains(toolText(res), want) {
		t.Fatalf("%s(%v): want a tool error containing %q, got isError=%v %s", name, args, want, res.IsError, toolText(res))
	}
	return toolText(res)
}

func toolText(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

func jsonEqual(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}

// chainGraph: question → prompt → llm1 → llm2 → answer, on the slow echo
// model, so a run lasts long enough to report progress.
func chainGraph(system string) map[string]any {
	return map[string]any{
		"nodes": []map[string]any{
			{"id": "question", "type": "input", "key": "question", "description": "what to echo"},
			{"id": "prompt", "type": "prompt", "template": "Echo: {{question}}"},
			{"id": "llm1", "type": "model", "model": "local-echo-slow", "system": system, "prompt": "{{prompt}}", "maxTokens": 100},
			{"id": "llm2", "type": "model", "model": "local-echo-slow", "prompt": "{{llm1}}", "maxTokens": 100},
			{"id": "answer", "type": "output", "key": "answer", "from": "llm2"},
		},
		"edges": []map[string]any{
			{"from": "question", "to": "prompt"}, {"from": "prompt", "to": "llm1"}, {"from": "llm1", "to": "llm2"}, {"from": "llm2", "to": "answer"},
		},
	}
}

// The whole life of a pipeline through the tool server, with the
// official Go MCP client: list tools, author, validate, publish, run
// (waiting, with progress), inspect, page, publish v2, roll back,
// estimate, read the balance, mint a key and use it.
// Both protocol eras: the sessionless revision the client prefers, and
// the last revision with sessions.
func TestMCPAuthorPublishRunInspect(t *testing.T) {
	t.Run("latest", func(t *testing.T) { mcpLifecycle(t, "") })
	t.Run("2025-11-25", func(t *testing.T) { mcpLifecycle(t, "2025-11-25") })
}

func mcpLifecycle(t *testing.T, version string) {
	acct, key := env.NewAccount(t)
	progress := &progressLog{}
	cs := connectMCPAt(t, key, progress, version)
	ctx := context.Background()
	if got := cs.InitializeResult().ProtocolVersion; version == "" && got != "2026-07-28" {
		t.Fatalf("the client's latest revision negotiated %s", got)
	}

	list, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, tool := range list.Tools {
		names[tool.Name] = true
		if tool.InputSchema == nil || tool.OutputSchema == nil || tool.Annotations == nil || tool.Description == "" {
			t.Errorf("tool %s lacks a schema, annotations or a description", tool.Name)
		}
		if tool.Annotations != nil && tool.Annotations.ReadOnlyHint != strings.HasPrefix(tool.Name, "get_") &&
			!strings.HasPrefix(tool.Name, "list_") && tool.Name != "validate_draft" && tool.Name != "estimate_run_cost" {
			t.Errorf("tool %s: readOnlyHint %v", tool.Name, tool.Annotations.ReadOnlyHint)
		}
	}
	for _, want := range []string{"list_pipelines", "get_pipeline", "create_pipeline", "update_draft", "validate_draft", "publish_pipeline",
		"rollback_pipeline", "run_pipeline", "get_run", "list_runs", "estimate_run_cost", "get_credit_balance", "create_api_key"} {
		if !names[want] {
			t.Errorf("tools/list lacks %s", want)
		}
	}

	// Author: a draft with a problem is saved, and says what to fix.
	broken := chainGraph("Be brief.")
	broken["nodes"].([]map[string]any)[2]["model"] = "no-such-model"
	p := toolOK(t, cs, "create_pipeline", map[string]any{"name": "chain", "draft": broken})
	id := p["id"].(string)
	if p["servingVersion"] != nil || p["draftValidation"].(map[string]any)["valid"] != false {
		t.Fatalf("created: %v", p)
	}
	toolErr(t, cs, "publish_pipeline", map[string]any{"pipelineId": id}, "no-such-model")
	v := toolOK(t, cs, "validate_draft", map[string]any{"pipelineId": id, "draft": chainGraph("Be brief.")})
	if v["valid"] != true || len(v["contract"].(map[string]any)["inputs"].([]any)) != 1 {
		t.Fatalf("validate a given graph: %v", v)
	}
	toolOK(t, cs, "update_draft", map[string]any{"pipelineId": id, "draft": chainGraph("Be brief.")})
	if v := toolOK(t, cs, "validate_draft", map[string]any{"pipelineId": id}); v["valid"] != true {
		t.Fatalf("validate the saved draft: %v", v)
	}
	p = toolOK(t, cs, "publish_pipeline", map[string]any{"pipelineId": id})
	if p["servingVersion"] != float64(1) {
		t.Fatalf("published: %v", p)
	}
	got := toolOK(t, cs, "get_pipeline", map[string]any{"pipelineId": id})
	if c := got["contract"].(map[string]any); c["outputs"].([]any)[0] != "answer" || len(got["versions"].([]any)) != 1 {
		t.Fatalf("get_pipeline: %v", got)
	}
	if l := toolOK(t, cs, "list_pipelines", map[string]any{}); len(l["pipelines"].([]any)) != 1 {
		t.Fatalf("list_pipelines: %v", l)
	}

	// Estimate before running: a range from the prompts' real tokens up to
	// the hold.
	est := toolOK(t, cs, "estimate_run_cost", map[string]any{"pipelineId": id, "inputs": map[string]any{"question": "hello there, model: echo this back slowly, one token at a time"}})
	minUSD, maxUSD := usd(est["minUsd"]), usd(est["maxUsd"])
	if minUSD <= 0 || minUSD >= maxUSD || est["affordable"] != true || len(est["nodes"].([]any)) != 2 || est["version"] != float64(1) {
		t.Fatalf("estimate: %v", est)
	}

	// Run and wait: progress notifications per node while it runs, the
	// finished record in the answer.
	run := toolOK(t, cs, "run_pipeline", map[string]any{"pipelineId": id, "inputs": map[string]any{"question": "hello there, model: echo this back slowly, one token at a time"}, "waitSeconds": 60}, "run-1")
	if run["status"] != "success" || run["outputs"].(map[string]any)["answer"] != "Echo: hello there, model: echo this back slowly, one token at a time" || run["version"] != float64(1) {
		t.Fatalf("run: %v", run)
	}
	cost := usd(run["usage"].(map[string]any)["costUsd"])
	if cost < minUSD || cost > maxUSD {
		t.Fatalf("cost %s outside the estimate [%s, %s]", cost, minUSD, maxUSD)
	}
	notes := progress.all()
	if len(notes) < 2 {
		t.Fatalf("%d progress notifications", len(notes))
	}
	for i, n := range notes {
		if n.ProgressToken != "run-1" || n.Total != 5 || (i > 0 && n.Progress < notes[i-1].Progress) || n.Message == "" {
			t.Fatalf("progress %d: %+v", i, n)
		}
	}
	runID := run["runId"].(string)
	if !strings.Contains(run["statusUrl"].(string), "%23") {
		t.Fatalf("statusUrl %v", run["statusUrl"])
	}

	// Inspect: the per-node trace with tokens and cost, and the history.
	r := toolOK(t, cs, "get_run", map[string]any{"runId": runID})
	nodes := r["nodes"].([]any)
	if r["status"] != "success" || len(nodes) != 5 || r["kind"] != "invoke" {
		t.Fatalf("get_run: %v", r)
	}
	var traced money.Micros
	for _, n := range nodes {
		n := n.(map[string]any)
		if n["status"] != "success" || n["startedAt"] == nil {
			t.Fatalf("node %v", n)
		}
		if n["type"] == "model" {
			traced += usd(n["costUsd"])
			if n["promptTokens"].(float64) < 1 || n["completionTokens"].(float64) < 1 {
				t.Fatalf("model node %v", n)
			}
		}
	}
	if traced != cost {
		t.Fatalf("node costs add up to %s, the run cost %s", traced, cost)
	}
	toolOK(t, cs, "run_pipeline", map[string]any{"pipelineId": id, "inputs": map[string]any{"question": "second"}, "waitSeconds": 60})
	page := toolOK(t, cs, "list_runs", map[string]any{"pipelineId": id, "limit": 1})
	if len(page["runs"].([]any)) != 1 || page["nextAfter"] == nil {
		t.Fatalf("list_runs page 1: %v", page)
	}
	page = toolOK(t, cs, "list_runs", map[string]any{"pipelineId": id, "limit": 1, "after": page["nextAfter"]})
	if rs := page["runs"].([]any); len(rs) != 1 || rs[0].(map[string]any)["runId"] != runID || page["nextAfter"] != nil {
		t.Fatalf("list_runs page 2: %v", page)
	}

	// Version 2, then back to 1: runs follow what serves.
	toolOK(t, cs, "update_draft", map[string]any{"pipelineId": id, "draft": chainGraph("Be verbose."), "name": "chain v2"})
	if p := toolOK(t, cs, "publish_pipeline", map[string]any{"pipelineId": id}); p["servingVersion"] != float64(2) || p["name"] != "chain v2" {
		t.Fatalf("v2: %v", p)
	}
	if p := toolOK(t, cs, "rollback_pipeline", map[string]any{"pipelineId": id, "version": 1}); p["servingVersion"] != float64(1) {
		t.Fatalf("rollback: %v", p)
	}
	if r := toolOK(t, cs, "run_pipeline", map[string]any{"pipelineId": id, "inputs": map[string]any{"question": "after rollback"}}); r["version"] != float64(1) || r["status"] != "running" {
		t.Fatalf("run after rollback: %v", r)
	}

	// The balance: the free credit less what succeeded runs cost (the
	// last run may still hold its credit).
	bal := toolOK(t, cs, "get_credit_balance", map[string]any{})
	stored, err := env.Platform.Store.Balance(ctx, acct)
	if err != nil || usd(bal["balanceUsd"]) != stored || stored >= 5*money.USD-cost || bal["topUpUrl"] == nil {
		t.Fatalf("balance %v, stored %s", bal, stored)
	}

	// A key minted through the tool server works at once, with what it
	// was given and nothing more.
	k := toolOK(t, cs, "create_api_key", map[string]any{"name": "reader", "permissions": []string{"pipelines:read"}})
	secret, _ := k["key"].(string)
	if !strings.HasPrefix(secret, "cnd_") || k["status"] != "active" || len(k["permissions"].([]any)) != 1 {
		t.Fatalf("create_api_key: %v", k)
	}
	reader := connectMCP(t, secret, nil)
	if l := toolOK(t, reader, "list_pipelines", map[string]any{}); len(l["pipelines"].([]any)) != 1 {
		t.Fatalf("the new key's list: %v", l)
	}
	toolErr(t, reader, "run_pipeline", map[string]any{"pipelineId": id, "inputs": map[string]any{"question": "x"}}, "lacks the pipelines:run permission")
	toolErr(t, reader, "create_api_key", map[string]any{"name": "more"}, "lacks the keys:manage permission")
	// The subset rule: a key-managing key grants at most what it holds.
	manager := toolOK(t, cs, "create_api_key", map[string]any{"name": "manager", "permissions": []string{"keys:manage", "pipelines:read"}})["key"].(string)
	mgr := connectMCP(t, manager, nil)
	toolErr(t, mgr, "create_api_key", map[string]any{"name": "wider", "permissions": []string{"pipelines:run"}}, "cannot grant permissions it does not hold: pipelines:run")
	toolErr(t, mgr, "create_api_key", map[string]any{"name": "default"}, "cannot grant the default permissions it does not hold: pipelines:run")
	if k := toolOK(t, mgr, "create_api_key", map[string]any{"name": "narrow", "permissions": []string{"pipelines:read"}}); k["key"] == nil {
		t.Fatalf("a subset: %v", k)
	}
}

// Bad arguments, missing scopes and another account's pipeline are tool
// errors with a sentence, never transport failures, and change nothing.
func TestMCPToolErrors(t *testing.T) {
	_, key := env.NewAccount(t)
	cs := connectMCP(t, key, nil)
	id := toolOK(t, cs, "create_pipeline", map[string]any{"name": "errs", "draft": chainGraph("x")})["id"].(string)

	toolErr(t, cs, "run_pipeline", map[string]any{"pipelineId": id, "inputs": map[string]any{"question": "x"}}, "is not published; publish a version first")
	toolOK(t, cs, "publish_pipeline", map[string]any{"pipelineId": id})
	for _, c := range []struct {
		tool string
		args map[string]any
		want string
	}{
		{"run_pipeline", map[string]any{"pipelineId": id}, "inputs"},
		{"run_pipeline", map[string]any{"pipelineId": id, "inputs": map[string]any{}}, "question"},
		{"run_pipeline", map[string]any{"pipelineId": id, "inputs": map[string]any{"question": "x"}, "waitSeconds": 61}, "waitSeconds"},
		{"run_pipeline", map[string]any{"pipelineId": id, "inputs": map[string]any{"question": "x"}, "bogus": 1}, "bogus"},
		{"create_pipeline", map[string]any{"name": 5}, "name"},
		{"create_pipeline", map[string]any{"name": ""}, "name is required"},
		{"create_pipeline", map[string]any{"name": "a\u0000b"}, "cannot be stored"},
		{"create_pipeline", map[string]any{"name": "x", "draft": map[string]any{"nodes": "no"}}, "not a pipeline graph"},
		{"rollback_pipeline", map[string]any{"pipelineId": id, "version": 99}, "has no version 99"},
		{"rollback_pipeline", map[string]any{"pipelineId": id, "version": "1"}, "version"},
		{"list_runs", map[string]any{"pipelineId": id, "status": "bogus"}, "status"},
		{"get_pipeline", map[string]any{"pipelineId": "pl_missing"}, "not found"},
		{"get_run", map[string]any{"runId": "2026-01-01T00:00:00.000Z#00000000"}, "not found"},
	} {
		toolErr(t, cs, c.tool, c.args, c.want)
	}
	if l := toolOK(t, cs, "list_pipelines", map[string]any{}); len(l["pipelines"].([]any)) != 1 {
		t.Fatalf("bad calls created pipelines: %v", l)
	}
	if page := toolOK(t, cs, "list_runs", map[string]any{"pipelineId": id}); len(page["runs"].([]any)) != 0 {
		t.Fatalf("bad calls started runs: %v", page)
	}

	// Another account cannot touch the pipeline or its runs.
	_, otherKey := env.NewAccount(t)
	other := connectMCP(t, otherKey, nil)
	run := toolOK(t, cs, "run_pipeline", map[string]any{"pipelineId": id, "inputs": map[string]any{"question": "mine"}})
	for _, c := range []struct {
		tool string
		args map[string]any
	}{
		{"get_pipeline", map[string]any{"pipelineId": id}},
		{"update_draft", map[string]any{"pipelineId": id, "draft": chainGraph("theirs")}},
		{"publish_pipeline", map[string]any{"pipelineId": id}},
		{"rollback_pipeline", map[string]any{"pipelineId": id, "version": 1}},
		{"run_pipeline", map[string]any{"pipelineId": id, "inputs": map[string]any{"question": "x"}}},
		{"list_runs", map[string]any{"pipelineId": id}},
		{"estimate_run_cost", map[string]any{"pipelineId": id, "inputs": map[string]any{"question": "x"}}},
	} {
		toolErr(t, other, c.tool, c.args, "does not own pipeline")
	}
	toolErr(t, other, "get_run", map[string]any{"runId": run["runId"]}, "not found")

	// A key without a scope gets a tool error naming it.
	_, readOnly := env.NewAccount(t, "pipelines:read")
	ro := connectMCP(t, readOnly, nil)
	toolErr(t, ro, "create_pipeline", map[string]any{"name": "x"}, "lacks the pipelines:write permission")
	if b := toolOK(t, ro, "get_credit_balance", map[string]any{}); usd(b["balanceUsd"]) != 5*money.USD {
		t.Fatalf("any key reads the balance: %v", b)
	}
}

// A session belongs to the account that opened it: another account's key
// presenting its id is refused, and no key at all is a 401.
func TestMCPSessionsBelongToTheirAccount(t *testing.T) {
	acct, key := env.NewAccount(t)
	cs := connectMCPAt(t, key, nil, "2025-11-25")
	if cs.ID() == "" {
		t.Fatal("no session id: the server should keep sessions")
	}
	_, otherKey := env.NewAccount(t)
	body := `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"list_pipelines","arguments":{}}}`
	headers := []string{"Mcp-Session-Id", cs.ID(), "Accept", "application/json, text/event-stream", "Mcp-Protocol-Version", "2025-11-25"}
	r := env.Do(t, http.MethodPost, "/api/mcp", body, append(headers, "Authorization", "Bearer "+otherKey)...)
	if r.Status != http.StatusForbidden {
		t.Fatalf("another account's key on the session: %d %s", r.Status, r.Body)
	}
	if r := env.Do(t, http.MethodPost, "/api/mcp", body, headers...); r.Status != http.StatusUnauthorized {
		t.Fatalf("no key: %d %s", r.Status, r.Body)
	}
	// The owner's session still works.
	toolOK(t, cs, "list_pipelines", map[string]any{})

	// Within the session, each request acts with its own key: a weaker
	// key of the same account gets its own scopes, not the session's.
	_, weaker, err := env.Platform.Accounts().CreateKey(context.Background(), acct, accounts.KeyRequest{Name: "weaker", Permissions: []string{"pipelines:read"}})
	if err != nil {
		t.Fatal(err)
	}
	call := `{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"create_pipeline","arguments":{"name":"x"}}}`
	r = env.Do(t, http.MethodPost, "/api/mcp", call, append(headers, "Authorization", "Bearer "+weaker)...)
	if r.Status != http.StatusOK || !strings.Contains(string(r.Body), `"isError":true`) || !strings.Contains(string(r.Body), "lacks the pipelines:write permission") {
		t.Fatalf("a weaker key in the session: %d %s", r.Status, r.Body)
	}
	if l := toolOK(t, cs, "list_pipelines", map[string]any{}); len(l["pipelines"].([]any)) != 0 {
		t.Fatalf("the weaker key created a pipeline: %v", l)
	}
}
