package frontend_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"conduit/frontend"
)

// rawDo sends a request whose path and query go out exactly as written
// (percent-escapes included), with the key as bearer, and decodes the
// answer.
func rawDo(t *testing.T, method, rawPath, key, body string, headers ...string) (int, map[string]any, string) {
	t.Helper()
	path, query, _ := strings.Cut(rawPath, "?")
	if key != "" {
		headers = append(headers, "Authorization", "Bearer "+key)
	}
	status, raw := sendRaw(t, method, path, query, body, headers...)
	m := map[string]any{}
	_ = json.Unmarshal([]byte(raw), &m)
	return status, m, raw
}

// Malformed ids, query values, names and version numbers are refused at
// the edge in the route's error shape: PostgreSQL rejects NUL bytes and
// invalid UTF-8 in text and numbers beyond int4, so before this they were
// 500s. Nothing is written.
func TestMalformedInputIsRefusedNot500(t *testing.T) {
	_, key := env.NewAccount(t)
	id, _ := chatPipeline(t, key, "local-echo")
	keyID := wantStatus(t, do(t, "POST", "/api/keys", key, map[string]any{"name": "edge"}), http.StatusCreated)["id"].(string)
	pipe := "/api/pipelines/" + id

	plain := []struct {
		method, path, body string
		headers            []string
	}{
		{"GET", "/api/pipelines/pl_%00x", "", nil},
		{"GET", "/api/pipelines/%FF%FE", "", nil},
		{"PUT", "/api/pipelines/pl_%00/draft", `{"draft":{"nodes":[],"edges":[]}}`, nil},
		{"POST", "/api/pipelines/pl_%00/invoke", `{"inputs":{}}`, nil},
		{"GET", "/api/keys/key_%00", "", nil},
		{"PATCH", "/api/keys/key_%00", `{"name":"x"}`, nil},
		{"DELETE", "/api/keys/key_%00", "", nil},
		{"GET", "/api/keys/%C3%28", "", nil},
		{"GET", pipe + "/invoke?runId=2026-01-01T00:00:00.000Z%2300%00aaaa", "", nil},
		{"GET", pipe + "/invoke?runId=%FF%23abc", "", nil},
		{"GET", pipe + "/runs?after=%00", "", nil},
		{"GET", pipe + "/runs?after=%FF", "", nil},
		{"GET", pipe + "/runs?status=%00", "", nil},
		{"GET", pipe + "/versions/2147483648", "", nil},
		{"GET", pipe + "/versions/99999999999999999999", "", nil},
		{"GET", pipe + "/versions/-1", "", nil},
		{"POST", pipe + "/rollback", `{"version":2147483648}`, nil},
		{"POST", pipe + "/rollback", `{"version":9007199254740993}`, nil},
		{"POST", "/api/pipelines", `{"name":"a\u0000b"}`, nil},
		{"POST", "/api/pipelines", `{"name":"ok","draft":{"nodes":[{"id":"q\u0000","type":"input","key":"q"}],"edges":[]}}`, nil},
		{"POST", "/api/pipelines", "{\"name\":\"bad utf-8 \xff\xfe\"}", nil},
		{"POST", "/api/pipelines", `{"name":"lone surrogate","draft":{"nodes":[{"id":"q","type":"input","key":"q","description":"\ud800"}],"edges":[]}}`, nil},
		{"PUT", pipe + "/draft", `{"draft":{"nodes":[{"id":"q","type":"input","key":"q","description":"x\udc00"}],"edges":[]}}`, nil},
		{"PUT", pipe + "/draft", `{"name":"n\u0000","draft":{"nodes":[],"edges":[]}}`, nil},
		{"POST", "/api/keys", `{"name":"k\u0000"}`, nil},
		{"PATCH", "/api/keys/" + keyID, `{"name":"k\u0000"}`, nil},
		{"POST", pipe + "/invoke", `{"inputs":{"question":"nul \u0000 here"}}`, nil},
		{"POST", pipe + "/invoke", `{"inputs":{"question":"hi"}}`, []string{"Idempotency-Key", "bad\xffkey"}},
	}
	for _, c := range plain {
		t.Run(c.method+" "+c.path, func(t *testing.T) {
			status, body, raw := rawDo(t, c.method, c.path, key, c.body, c.headers...)
			if status != http.StatusBadRequest && status != http.StatusNotFound {
				t.Fatalf("status %d, want 400 or 404: %s", status, raw)
			}
			if msg, ok := body["error"].(string); !ok || msg == "" {
				t.Fatalf("not the plain error shape: %s", raw)
			}
		})
	}

	chat := []struct{ path, body string }{
		{"/api/pipelines/pl_%00/chat/completions", `{"messages":[{"role":"user","content":"hi"}]}`},
		{"/api/pipelines/%FF/chat/completions", `{"messages":[{"role":"user","content":"hi"}]}`},
		{pipe + "/chat/completions", `{"messages":[{"role":"user","content":"nul \u0000"}]}`},
		{pipe + "/chat/completions", `{"stream":true,"messages":[{"role":"user","content":"nul \u0000"}]}`},
		{pipe + "/chat/completions", "{\"messages\":[{\"role\":\"user\",\"content\":\"\xff\"}]}"},
	}
	for _, c := range chat {
		t.Run("chat "+c.path+" "+c.body, func(t *testing.T) {
			status, body, raw := rawDo(t, "POST", c.path, key, c.body)
			if status != http.StatusBadRequest && status != http.StatusNotFound {
				t.Fatalf("status %d, want 400 or 404: %s", status, raw)
			}
			e, ok := body["error"].(map[string]any)
			if !ok || e["message"] == "" || e["type"] != "invalid_request_error" {
				t.Fatalf("not the OpenAI error shape: %s", raw)
			}
		})
	}

	// Pay-per-call: a NUL in the prompt is refused before the payment is
	// even looked at (PostgreSQL could not have stored the paid request).
	for _, c := range []struct{ path, body string }{
		{frontend.VideoPath, `{"prompt":"a cat\u0000"}`},
		{frontend.SpeechPath, `{"text":"hello\u0000"}`},
		{frontend.VideoPath + "?runId=%00&token=x", ""},
	} {
		method := "POST"
		if c.body == "" {
			method = "GET"
		}
		status, body, raw := rawDo(t, method, c.path, "", c.body)
		if status != http.StatusBadRequest || body["error"] == nil {
			t.Fatalf("%s %s: %d %s", method, c.path, status, raw)
		}
	}

	// Nothing was written: the account still has its one pipeline and two keys.
	if ps := wantStatus(t, do(t, "GET", "/api/pipelines", key, nil), http.StatusOK)["pipelines"].([]any); len(ps) != 1 {
		t.Fatalf("pipelines %v", ps)
	}
	if ks := wantStatus(t, do(t, "GET", "/api/keys", key, nil), http.StatusOK)["keys"].([]any); len(ks) != 2 {
		t.Fatalf("keys %v", ks)
	}
	if runs := wantStatus(t, do(t, "GET", pipe+"/runs", key, nil), http.StatusOK)["runs"].([]any); len(runs) != 0 {
		t.Fatalf("runs %v", runs)
	}
}
