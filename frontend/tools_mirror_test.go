package frontend_test

import (
	"encoding/json"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"

	"conduit/internal/money"
)

// mirrorSchemas reads GET /api/v1/tools and resolves every tool's output
// schema, to validate the answers against.
func mirrorSchemas(t *testing.T, key string) map[string]*jsonschema.Resolved {
	t.Helper()
	body := wantStatus(t, do(t, http.MethodGet, "/api/v1/tools", key, nil), http.StatusOK)
	out := map[string]*jsonschema.Resolved{}
	for _, raw := range body["tools"].([]any) {
		tool := raw.(map[string]any)
		name, _ := tool["name"].(string)
		for _, field := range []string{"description", "inputSchema", "outputSchema", "annotations"} {
			if tool[field] == nil {
				t.Fatalf("GET /api/v1/tools: %s lacks %s", name, field)
			}
		}
		b, _ := json.Marshal(tool["outputSchema"])
		var s jsonschema.Schema
		if err := json.Unmarshal(b, &s); err != nil {
			t.Fatalf("%s: output schema %s: %v", name, b, err)
		}
		resolved, err := s.Resolve(nil)
		if err != nil {
			t.Fatalf("%s: output schema does not resolve: %v", name, err)
		}
		out[name] = resolved
	}
	if len(out) != 19 {
		t.Fatalf("%d tools listed", len(out))
	}
	return out
}

// mirror calls a tool on the HTTP mirror and returns its answer.
func mirror(t *testing.T, key, name string, args any, status int) map[string]any {
	t.Helper()
	return wantStatus(t, do(t, http.MethodPost, "/api/v1/tools/"+name, key, args), status)
}

// volatile are fields that differ between two otherwise equal calls that
// each create something: ids, times, secrets.
var volatile = map[string]bool{"id": true, "pipelineId": true, "runId": true, "createdAt": true, "updatedAt": true, "startedAt": true,
	"finishedAt": true, "durationMs": true, "key": true, "prefix": true, "statusUrl": true, "lastUsedAt": true}

func normalize(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := map[string]any{}
		for k, e := range x {
			if volatile[k] {
				out[k] = "…"
			} else {
				out[k] = normalize(e)
			}
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = normalize(e)
		}
		return out
	}
	return v
}

// The mirror answers every tool as the MCP server does: for calls that
// read, the same result; for calls that create (done once on each
// surface), the same result but for ids and times. Every answer on both
// surfaces validates against the output schema the mirror lists.
func TestToolMirrorMatchesMCP(t *testing.T) {
	_, key := env.NewAccount(t)
	schemas := mirrorSchemas(t, key)
	cs := connectMCP(t, key, nil)
	check := func(name string, answers ...map[string]any) {
		t.Helper()
		for _, a := range answers {
			if err := schemas[name].Validate(a); err != nil {
				t.Fatalf("%s: the answer %v does not match its output schema: %v", name, a, err)
			}
		}
	}
	same := func(name string, args map[string]any) map[string]any {
		t.Helper()
		viaMCP := toolOK(t, cs, name, args)
		viaHTTP := mirror(t, key, name, args, http.StatusOK)
		check(name, viaMCP, viaHTTP)
		if !jsonEqual(viaMCP, viaHTTP) {
			t.Fatalf("%s: MCP answered %v, the mirror %v", name, viaMCP, viaHTTP)
		}
		return viaMCP
	}
	// alike runs a creating call once on each surface with its own
	// arguments (argsMCP, argsHTTP) and compares the answers.
	alike := func(name string, argsMCP, argsHTTP map[string]any) (map[string]any, map[string]any) {
		t.Helper()
		viaMCP := toolOK(t, cs, name, argsMCP)
		viaHTTP := mirror(t, key, name, argsHTTP, http.StatusOK)
		check(name, viaMCP, viaHTTP)
		if !jsonEqual(normalize(viaMCP), normalize(viaHTTP)) {
			t.Fatalf("%s: MCP answered %v, the mirror %v", name, viaMCP, viaHTTP)
		}
		return viaMCP, viaHTTP
	}
	on := func(id string, args map[string]any) map[string]any {
		out := map[string]any{"pipelineId": id}
		for k, v := range args {
			out[k] = v
		}
		return out
	}

	a, b := alike("create_pipeline", map[string]any{"name": "twin"}, map[string]any{"name": "twin"})
	idA, idB := a["id"].(string), b["id"].(string)
	alike("update_draft", on(idA, map[string]any{"draft": chainGraph("One.")}), on(idB, map[string]any{"draft": chainGraph("One.")}))
	same("validate_draft", on(idA, nil))
	same("validate_draft", on(idA, map[string]any{"draft": map[string]any{"nodes": []any{}, "edges": []any{}}}))
	alike("publish_pipeline", on(idA, nil), on(idB, nil))
	same("get_pipeline", on(idA, nil))
	same("list_pipelines", map[string]any{})
	inputs := map[string]any{"inputs": map[string]any{"question": "twins"}, "waitSeconds": 60}
	runA, runB := alike("run_pipeline", on(idA, inputs), on(idB, inputs))
	if runA["status"] != "success" || runB["status"] != "success" {
		t.Fatalf("runs: %v %v", runA, runB)
	}
	same("get_run", map[string]any{"runId": runA["runId"]})
	same("get_run", map[string]any{"runId": runB["runId"]})
	same("list_runs", on(idA, nil))
	same("list_runs", on(idB, map[string]any{"status": "success", "limit": 5}))
	alike("update_draft", on(idA, map[string]any{"draft": chainGraph("Two."), "name": "twin 2"}), on(idB, map[string]any{"draft": chainGraph("Two."), "name": "twin 2"}))
	alike("publish_pipeline", on(idA, nil), on(idB, nil))
	alike("rollback_pipeline", on(idA, map[string]any{"version": 1}), on(idB, map[string]any{"version": 1}))
	same("estimate_run_cost", on(idA, map[string]any{"inputs": map[string]any{"question": "how much?"}}))
	same("estimate_run_cost", on(idA, map[string]any{"inputs": map[string]any{"question": "how much?"}, "draft": true}))
	same("get_credit_balance", map[string]any{})
	alike("create_api_key", map[string]any{"name": "twin key", "permissions": []string{"pipelines:read"}},
		map[string]any{"name": "twin key", "permissions": []string{"pipelines:read"}})

	// Errors on the mirror are the API's: the status and {error}.
	if r := mirror(t, key, "get_pipeline", map[string]any{"pipelineId": "pl_nope"}, http.StatusNotFound); !strings.Contains(r["error"].(string), "not found") {
		t.Fatalf("404 body %v", r)
	}
	mirror(t, key, "no_such_tool", map[string]any{}, http.StatusNotFound)
	_, reader := env.NewAccount(t, "pipelines:read")
	if r := mirror(t, reader, "publish_pipeline", on(idA, nil), http.StatusForbidden); !strings.Contains(r["error"].(string), "pipelines:write") {
		t.Fatalf("403 body %v", r)
	}
	if r := mirror(t, reader, "get_pipeline", on(idA, nil), http.StatusForbidden); !strings.Contains(r["error"].(string), "does not own") {
		t.Fatalf("another account: %v", r)
	}
	if r := do(t, http.MethodPost, "/api/v1/tools/list_pipelines", "", map[string]any{}); r.Status != http.StatusUnauthorized {
		t.Fatalf("no key: %d", r.Status)
	}
	// A tool without arguments takes an empty body too.
	if r := do(t, http.MethodPost, "/api/v1/tools/get_credit_balance", key, nil); r.Status != http.StatusOK {
		t.Fatalf("empty body: %d %s", r.Status, r.Body)
	}
	// tools/list over MCP shows what the mirror lists.
	listed, err := cs.ListTools(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	mirrorList := wantStatus(t, do(t, http.MethodGet, "/api/v1/tools", key, nil), http.StatusOK)["tools"].([]any)
	if len(listed.Tools) != len(mirrorList) {
		t.Fatalf("MCP lists %d tools, the mirror %d", len(listed.Tools), len(mirrorList))
	}
	byName := map[string]any{}
	for _, tool := range mirrorList {
		byName[tool.(map[string]any)["name"].(string)] = tool
	}
	for _, tool := range listed.Tools {
		var viaMCP map[string]any
		b, _ := json.Marshal(tool)
		_ = json.Unmarshal(b, &viaMCP)
		if !jsonEqual(viaMCP, byName[tool.Name]) {
			t.Fatalf("tool %s: MCP lists %s, the mirror %v", tool.Name, b, byName[tool.Name])
		}
	}
}

// Malformed bodies on the mirror are 400s that name what is wrong and
// change nothing: no pipeline, no draft change, no run, no charge, no key.
func TestToolMirrorRefusesBadBodies(t *testing.T) {
	acct, key := env.NewAccount(t)
	id := mirror(t, key, "create_pipeline", map[string]any{"name": "target", "draft": chainGraph("x")}, http.StatusOK)["id"].(string)
	mirror(t, key, "publish_pipeline", map[string]any{"pipelineId": id}, http.StatusOK)
	before := mirror(t, key, "get_pipeline", map[string]any{"pipelineId": id}, http.StatusOK)
	long := strings.Repeat("k", 201)
	cases := []struct {
		tool, body, want string
	}{
		{"create_pipeline", ``, "name"},
		{"create_pipeline", `{`, "one JSON object"},
		{"create_pipeline", `[]`, "one JSON object"},
		{"create_pipeline", `"a"`, "one JSON object"},
		{"create_pipeline", `1`, "one JSON object"},
		{"create_pipeline", `null`, "one JSON object"},
		{"create_pipeline", `{}{}`, "one JSON object"},
		{"create_pipeline", `{}`, "name"},
		{"create_pipeline", `{"name":5}`, "name"},
		{"create_pipeline", `{"name":""}`, "name is required"},
		{"create_pipeline", `{"name":"x","extra":1}`, "extra"},
		{"create_pipeline", `{"name":"a\u0000b"}`, "NUL"},
		{"create_pipeline", "{\"name\":\"\xff\"}", "UTF-8"},
		{"create_pipeline", `{"name":"x","draft":"graph"}`, "draft"},
		{"create_pipeline", `{"name":"x","draft":{"nodes":"no"}}`, "not a pipeline graph"},
		{"create_pipeline", `{"name":"` + strings.Repeat("n", 201) + `"}`, "at most 200"},
		{"update_draft", `{"pipelineId":"` + id + `"}`, "draft"},
		{"update_draft", `{"pipelineId":"` + id + `","draft":{"nodes":[{"id":"x","type":"bogus"}],"edges":[],"extra":1}}`, "not a pipeline graph"},
		{"update_draft", `{"pipelineId":"` + id + `","draft":{"nodes":[]},"name":7}`, "name"},
		{"rollback_pipeline", `{"pipelineId":"` + id + `"}`, "version"},
		{"rollback_pipeline", `{"pipelineId":"` + id + `","version":0}`, "version must be a published version number"},
		{"rollback_pipeline", `{"pipelineId":"` + id + `","version":2147483648}`, "version must be a published version number"},
		{"rollback_pipeline", `{"pipelineId":"` + id + `","version":1.5}`, "version"},
		{"rollback_pipeline", `{"pipelineId":"` + id + `","version":"1"}`, "version"},
		{"rollback_pipeline", `{"pipelineId":"` + id + `","version":1e309}`, "version"},
		{"run_pipeline", `{"pipelineId":"` + id + `"}`, "inputs"},
		{"run_pipeline", `{"pipelineId":"` + id + `","inputs":[]}`, "inputs"},
		{"run_pipeline", `{"pipelineId":"` + id + `","inputs":{}}`, "question"},
		{"run_pipeline", `{"pipelineId":"` + id + `","inputs":{"question":"x"},"waitSeconds":61}`, "waitSeconds"},
		{"run_pipeline", `{"pipelineId":"` + id + `","inputs":{"question":"x"},"waitSeconds":-1}`, "waitSeconds"},
		{"run_pipeline", `{"pipelineId":"` + id + `","inputs":{"question":"x"},"waitSeconds":"5"}`, "waitSeconds"},
		{"run_pipeline", `{"pipelineId":"` + id + `","inputs":{"question":"x"},"idempotencyKey":"` + long + `"}`, "idempotencyKey"},
		{"run_pipeline", `{"pipelineId":"` + id + `","inputs":{"question":"\u0000"}}`, "NUL"},
		{"run_pipeline", `{"pipelineId":7,"inputs":{"question":"x"}}`, "pipelineId"},
		{"list_runs", `{"pipelineId":"` + id + `","limit":0}`, "limit"},
		{"list_runs", `{"pipelineId":"` + id + `","limit":101}`, "limit"},
		{"list_runs", `{"pipelineId":"` + id + `","status":"bogus"}`, "status"},
		{"estimate_run_cost", `{"pipelineId":"` + id + `","inputs":{}}`, "question"},
		{"get_run", `{"runId":["x"]}`, "runId"},
		{"create_api_key", `{"name":"k","permissions":["root"]}`, "root"},
		{"create_api_key", `{"name":"k","permissions":"pipelines:read"}`, "permissions"},
		{"create_api_key", `{"name":"k","walletAddress":"0x12"}`, "walletAddress"},
		{"create_api_key", `{"name":""}`, "name"},
		{"get_credit_balance", `{"x":1}`, "x"},
	}
	for _, c := range cases {
		r := do(t, http.MethodPost, "/api/v1/tools/"+c.tool, key, c.body)
		if r.Status != http.StatusBadRequest {
			t.Errorf("%s %s: %d %s, want 400", c.tool, c.body, r.Status, r.Body)
			continue
		}
		if msg, _ := r.JSON(t)["error"].(string); !strings.Contains(msg, c.want) {
			t.Errorf("%s %s: error %q does not name %q", c.tool, c.body, msg, c.want)
		}
	}
	// Nothing changed.
	if l := mirror(t, key, "list_pipelines", map[string]any{}, http.StatusOK); len(l["pipelines"].([]any)) != 1 {
		t.Fatalf("pipelines: %v", l)
	}
	if after := mirror(t, key, "get_pipeline", map[string]any{"pipelineId": id}, http.StatusOK); !jsonEqual(after, before) {
		t.Fatalf("the pipeline changed: %v, was %v", after, before)
	}
	if runs := mirror(t, key, "list_runs", map[string]any{"pipelineId": id}, http.StatusOK); len(runs["runs"].([]any)) != 0 {
		t.Fatalf("runs: %v", runs)
	}
	if bal, _ := env.Platform.Store.Balance(t.Context(), acct); bal != 5*money.USD {
		t.Fatalf("balance %s", bal)
	}
	if keys := wantStatus(t, do(t, http.MethodGet, "/api/keys", key, nil), http.StatusOK)["keys"].([]any); len(keys) != 1 {
		t.Fatalf("keys: %v", keys)
	}
}

// The media tools answer alike on both surfaces too, and their answers
// validate against the listed schemas. File URLs are fresh per answer.
func TestMediaToolsMirrorMatchesMCP(t *testing.T) {
	_, key := env.NewAccount(t)
	schemas := mirrorSchemas(t, key)
	cs := connectMCP(t, key, nil)
	fresh := func(v map[string]any) any {
		b, _ := json.Marshal(v)
		s := regexp.MustCompile(`"(url|urlExpiresAt|jobId)":"[^"]*"`).ReplaceAllString(string(b), `"$1":"…"`)
		var out any
		_ = json.Unmarshal([]byte(s), &out)
		return normalize(out)
	}
	answer := func(name string, args map[string]any) (map[string]any, map[string]any) {
		t.Helper()
		viaMCP := toolOK(t, cs, name, args)
		viaHTTP := mirror(t, key, name, args, http.StatusOK)
		for _, a := range []map[string]any{viaMCP, viaHTTP} {
			if err := schemas[name].Validate(a); err != nil {
				t.Fatalf("%s: the answer %v does not match its output schema: %v", name, a, err)
			}
		}
		if !jsonEqual(fresh(viaMCP), fresh(viaHTTP)) {
			t.Fatalf("%s: MCP answered %v, the mirror %v", name, viaMCP, viaHTTP)
		}
		return viaMCP, viaHTTP
	}
	id := createPipeline(t, key, narrationGraph("slow ambient pads"))
	publish(t, key, id)
	if run := waitRunLong(t, key, invoke(t, key, id, map[string]any{"line": "Two surfaces, one library."})["statusUrl"].(string)); run["status"] != "success" {
		t.Fatalf("run %v", run)
	}
	list, _ := answer("list_media", map[string]any{})
	items := list["items"].([]any)
	if len(items) != 2 {
		t.Fatalf("library %v", items)
	}
	first := items[0].(map[string]any)["id"].(string)
	answer("get_media", map[string]any{"id": first})
	a, b := answer("edit_media", map[string]any{"item": first, "operation": "volume", "gain": 0.5, "waitSeconds": 120})
	if a["status"] != "success" || b["status"] != "success" || a["id"] == b["id"] {
		t.Fatalf("edits %v %v", a, b)
	}
	answer("get_media_job", map[string]any{"id": a["id"]})
	if l, _ := answer("list_media", map[string]any{"kind": "audio", "limit": 10}); len(l["items"].([]any)) != 4 {
		t.Fatalf("after two edits: %v", l)
	}
	mirror(t, key, "get_media", map[string]any{"id": "med_0000000000000000"}, http.StatusNotFound)
	mirror(t, key, "edit_media", map[string]any{"item": first, "operation": "volume"}, http.StatusBadRequest)
	_, reader := env.NewAccount(t, "pipelines:read")
	if r := mirror(t, reader, "list_media", map[string]any{}, http.StatusForbidden); !strings.Contains(r["error"].(string), "media:read") {
		t.Fatalf("403 body %v", r)
	}
}
