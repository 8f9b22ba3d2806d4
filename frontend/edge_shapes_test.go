package frontend_test

import (
	"bytes"
	"net/http"
	"strings"
	"testing"

	"conduit/app/apptest"
	"conduit/frontend"
)

// wantSecureError checks an answer is an error in the plain shape with
// the API's security headers.
func wantSecureError(t *testing.T, what string, r *apptest.Response, status int, msgPart string) {
	t.Helper()
	body := r.JSON(t)
	msg, _ := body["error"].(string)
	h := r.Header
	if r.Status != status || !strings.Contains(msg, msgPart) || !strings.HasPrefix(h.Get("Content-Type"), "application/json") ||
		h.Get("X-Content-Type-Options") != "nosniff" || h.Get("X-Frame-Options") != "DENY" || h.Get("Cache-Control") != "no-store" ||
		!strings.Contains(h.Get("Content-Security-Policy"), "default-src 'none'") || h.Get("Location") != "" {
		t.Errorf("%s: %d %v %s", what, r.Status, h, r.Body)
	}
}

// A path with a trailing slash is an unknown path: a 404 in the error
// shape, with the security headers, never a bare redirect.
func TestTrailingSlashIsA404InShape(t *testing.T) {
	_, key := env.NewAccount(t)
	for _, c := range []struct{ method, path string }{
		{"GET", "/api/pipelines/"}, {"POST", "/api/pipelines/"}, {"GET", "/api/account/balance/"}, {"POST", "/api/mcp/"},
		{"GET", "/healthz/"}, {"POST", "/oauth/token/"}, {"GET", "/api/v1/tools/"},
	} {
		wantSecureError(t, c.method+" "+c.path, do(t, c.method, c.path, key, map[string]any{}), http.StatusNotFound, "no trailing slash")
	}
}

// A body over the limit on the tool server is a 413 in the endpoint's
// error shape (the one its 401 uses), not the SDK's text/plain; nothing
// runs.
func TestToolServerBodyTooLarge(t *testing.T) {
	_, key := env.NewAccount(t)
	big := `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"pad":"` + strings.Repeat("x", 1<<20) + `"}}`
	r := env.Do(t, "POST", "/api/mcp", big, append(apptest.Bearer(key), "Content-Type", "application/json", "Accept", "application/json, text/event-stream")...)
	wantSecureError(t, "an oversized /api/mcp body", r, http.StatusRequestEntityTooLarge, "exceeds 1048576 bytes")
}

// The dev codec endpoint decrypts only for a page on this machine: a
// caller with no Origin (or a foreign one) is refused.
func TestCodecRefusesACallerWithoutOrigin(t *testing.T) {
	post := func(origin string) *http.Response {
		req, _ := http.NewRequest("POST", env.URL+frontend.CodecPath+"/decode", bytes.NewReader([]byte(`{"payloads":[]}`)))
		req.Header.Set("Content-Type", "application/json")
		if origin != "" {
			req.Header.Set("Origin", origin)
		}
		resp, err := env.HTTP.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	for _, origin := range []string{"", "null", "https://evil.example", "http://127.0.0.1.evil.example"} {
		if resp := post(origin); resp.StatusCode != http.StatusForbidden || resp.Header.Get("Access-Control-Allow-Origin") != "" {
			t.Errorf("origin %q: %d", origin, resp.StatusCode)
		}
	}
	if resp := post("http://localhost:8233"); resp.StatusCode != http.StatusOK {
		t.Errorf("the UI on this machine: %d", resp.StatusCode)
	}
}

// The Bearer scheme's name is case-insensitive (RFC 7235 §2.1) on every
// route that reads one: the operator routes, the API and the tool server.
func TestBearerSchemeIsCaseInsensitive(t *testing.T) {
	_, key := env.NewAccount(t)
	for _, scheme := range []string{"bearer", "BEARER", "Bearer", "bEaReR"} {
		if r := env.Do(t, "GET", "/admin/enclaves/stuck?for=1h", nil, "Authorization", scheme+" "+apptest.AdminToken); r.Status != http.StatusOK {
			t.Errorf("admin with %q: %d %s", scheme, r.Status, r.Body)
		}
		if r := env.Do(t, "GET", "/api/account/balance", nil, "Authorization", scheme+" "+key); r.Status != http.StatusOK {
			t.Errorf("API with %q: %d %s", scheme, r.Status, r.Body)
		}
		if r := env.Do(t, "GET", "/api/v1/tools", nil, "Authorization", scheme+" "+key); r.Status != http.StatusOK {
			t.Errorf("tools with %q: %d %s", scheme, r.Status, r.Body)
		}
		// The tool server (the MCP SDK reads the header a second time).
		initialize := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`
		if r := env.Do(t, "POST", "/api/mcp", initialize, "Authorization", scheme+" "+key, "Content-Type", "application/json", "Accept", "application/json, text/event-stream"); r.Status != http.StatusOK {
			t.Errorf("MCP with %q: %d %s", scheme, r.Status, r.Body)
		}
	}
	// Another scheme, or the token alone, is still refused.
	for _, h := range []string{"Basic " + apptest.AdminToken, apptest.AdminToken, "Bearer", "Bearer wrong"} {
		if r := env.Do(t, "GET", "/admin/enclaves/stuck", nil, "Authorization", h); r.Status != http.StatusUnauthorized {
			t.Errorf("admin with %q: %d", h, r.Status)
		}
	}
}
