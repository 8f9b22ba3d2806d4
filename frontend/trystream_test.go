package frontend_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"conduit/frontend"
)

// The dashboard's Try it streams a run at POST /api/pipelines/{id}/stream,
// signed in by the session cookie with its CSRF token: the chat-completions
// stream (tokens, then [DONE]) with the run named in x-svc-run-id. Without
// the token it is refused, and the chat-completions path itself still
// takes no cookie.
func TestDashboardTryItStreamsWithTheSession(t *testing.T) {
	b := newBrowser(t, env.URL)
	s := b.signUp(uniqueEmail(t), "correct horse battery staple")
	csrf := s["csrfToken"].(string)
	st, p := b.api("POST", "/api/pipelines", map[string]any{"name": "streamed", "draft": echoGraph("{{question}}", "local-echo")}, frontend.CSRFHeader, csrf)
	if st != http.StatusCreated {
		t.Fatalf("create: %d %v", st, p)
	}
	id := p["id"].(string)
	if st, body := b.api("POST", "/api/pipelines/"+id+"/publish", nil, frontend.CSRFHeader, csrf); st != http.StatusOK {
		t.Fatalf("publish: %d %v", st, body)
	}
	msg := map[string]any{"stream": true, "messages": []map[string]string{{"role": "user", "content": "Hello, streaming dashboard"}}}

	st, raw, h := b.apiRaw("POST", "/api/pipelines/"+id+"/stream", msg, frontend.CSRFHeader, csrf)
	body := string(raw)
	if st != http.StatusOK || !strings.HasPrefix(h.Get("Content-Type"), "text/event-stream") || h.Get(frontend.HeaderRunID) == "" ||
		!strings.Contains(body, `"content":"Hello`) || !strings.HasSuffix(strings.TrimSpace(body), "data: [DONE]") {
		t.Fatalf("stream: %d %v\n%s", st, h, body)
	}
	if st, run := b.api("GET", "/api/runs/"+url.PathEscape(h.Get(frontend.HeaderRunID)), nil); st != http.StatusOK || run["status"] != "success" ||
		run["outputs"].(map[string]any)["answer"] != "Hello, streaming dashboard" {
		t.Fatalf("the streamed run: %d %v", st, run)
	}

	if st, _, _ := b.apiRaw("POST", "/api/pipelines/"+id+"/stream", msg); st != http.StatusForbidden {
		t.Errorf("without the CSRF token: %d, want 403", st)
	}
	if st, _, _ := b.apiRaw("POST", "/api/pipelines/"+id+"/chat/completions", msg, frontend.CSRFHeader, csrf); st != http.StatusUnauthorized {
		t.Errorf("chat completions with the session cookie: %d, want 401", st)
	}
}
