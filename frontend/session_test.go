package frontend_test

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"conduit/frontend"
	"conduit/internal/config"
)

// The dashboard's session API and session-cookie authentication, on the
// real stack, as the single-page dashboard uses them: JSON with the
// browser's cookie jar, Sec-Fetch-Site as a browser sends it.

// api sends a JSON request from the browser (its cookies, same-origin).
func (b *browser) api(method, path string, body any, headers ...string) (int, map[string]any) {
	b.t.Helper()
	status, raw, _ := b.apiRaw(method, path, body, headers...)
	var m map[string]any
	if len(raw) > 0 {
		if err := json.Unmarshal(raw, &m); err != nil {
			b.t.Fatalf("%s %s: not JSON (%v): %s", method, path, err, raw)
		}
	}
	return status, m
}

func (b *browser) apiRaw(method, path string, body any, headers ...string) (int, []byte, http.Header) {
	b.t.Helper()
	var rd io.Reader
	if body != nil {
		buf, err := json.Marshal(body)
		if err != nil {
			b.t.Fatal(err)
		}
		rd = bytes.NewReader(buf)
	}
	req, err := http.NewRequest(method, b.base+path, rd)
	if err != nil {
		b.t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Sec-Fetch-Site", "same-origin")
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := b.c.Do(req)
	if err != nil {
		b.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, raw, resp.Header
}

// signUp signs up through the dashboard's sign-up, which answers "check
// your email" without signing in, follows the verification link the dev
// mailbox shows, and signs in: the session (email, accountId, csrfToken,
// expiresAt).
func (b *browser) signUp(email, password string) map[string]any {
	b.t.Helper()
	st, s := b.api("POST", frontend.SignUpPath, map[string]string{"email": email, "password": password})
	if st != http.StatusAccepted || s["status"] != "verification_sent" {
		b.t.Fatalf("sign-up: %d %v", st, s)
	}
	if p := b.do("GET", verifyLink(b.t, b.base, strings.ToLower(email)), nil); p.status != http.StatusOK || !strings.Contains(p.body, "confirmed") {
		b.t.Fatalf("verification link: %d %s", p.status, p.body)
	}
	st, in := b.api("POST", frontend.SessionPath, map[string]string{"email": email, "password": password})
	if st != http.StatusOK {
		b.t.Fatalf("sign-in after sign-up: %d %v", st, in)
	}
	return in
}

func uniqueEmail(t *testing.T) string {
	return strings.ToLower(strings.NewReplacer("/", "-", "_", "-").Replace(t.Name())) + "-" + randomHex(4) + "@test.conduit.local"
}

func TestDashboardSessionSignUpAndCSRF(t *testing.T) {
	b := newBrowser(t, env.URL)
	if st, body := b.api("GET", frontend.SessionPath, nil); st != http.StatusUnauthorized || body["error"] == nil {
		t.Fatalf("no session: %d %v", st, body)
	}
	email := uniqueEmail(t)
	const password = "correct horse battery staple"

	// Bad fields are named and create nothing.
	for _, c := range []struct{ email, password, field string }{
		{email, "short", "password"},
		{"not an email", password, "email"},
		{"", password, "email"},
	} {
		st, body := b.api("POST", frontend.SignUpPath, map[string]string{"email": c.email, "password": c.password})
		if st != http.StatusBadRequest || body["field"] != c.field || !strings.Contains(body["error"].(string), c.field) {
			t.Fatalf("sign-up %q/%q: %d %v", c.email, c.password, st, body)
		}
	}
	if st, body := b.api("GET", frontend.SessionPath, nil); st != http.StatusUnauthorized {
		t.Fatalf("refused sign-ups signed in: %d %v", st, body)
	}
	// Not JSON, or sent by another site: refused.
	if st, _, _ := b.apiRaw("POST", frontend.SignUpPath, nil, "Content-Type", "application/x-www-form-urlencoded"); st != http.StatusUnsupportedMediaType {
		t.Fatalf("form sign-up: %d", st)
	}
	if st, _ := b.api("POST", frontend.SignUpPath, map[string]string{"email": email, "password": password}, "Sec-Fetch-Site", "cross-site"); st != http.StatusForbidden {
		t.Fatalf("cross-site sign-up: %d", st)
	}

	s := b.signUp(strings.ToUpper(email), password)
	if s["email"] != email || !strings.HasPrefix(s["accountId"].(string), "acct_") || s["csrfToken"] == "" || s["expiresAt"] == nil {
		t.Fatalf("sign-up answer: %v", s)
	}
	csrf := s["csrfToken"].(string)
	if st, again := b.api("GET", frontend.SessionPath, nil); st != http.StatusOK || again["csrfToken"] != csrf || again["accountId"] != s["accountId"] {
		t.Fatalf("session: %d %v", st, again)
	}
	// The email is taken now, whatever its case: the same answer as a new
	// one (signup_test.go), and nothing changes for this account.
	if st, body := newBrowser(t, env.URL).api("POST", frontend.SignUpPath, map[string]string{"email": email, "password": password + "!"}); st != http.StatusAccepted || body["status"] != "verification_sent" {
		t.Fatalf("second sign-up: %d %v", st, body)
	}

	// The cookie authenticates the API: reads as they are…
	if st, bal := b.api("GET", "/api/account/balance", nil); st != http.StatusOK || bal["balanceUsd"] != 5.0 {
		t.Fatalf("balance by cookie: %d %v", st, bal)
	}
	// …changes only with the session's CSRF token.
	for _, h := range [][]string{nil, {frontend.CSRFHeader, "wrong"}, {frontend.CSRFHeader, csrf, "Sec-Fetch-Site", "cross-site"}} {
		if st, body := b.api("POST", "/api/keys", map[string]any{"name": "from the dashboard"}, h...); st != http.StatusForbidden {
			t.Fatalf("key creation with %v: %d %v", h, st, body)
		}
	}
	if st, keys := b.api("GET", "/api/keys", nil); st != http.StatusOK || len(keys["keys"].([]any)) != 0 {
		t.Fatalf("refused creations made keys: %d %v", st, keys)
	}
	st, key := b.api("POST", "/api/keys", map[string]any{"name": "from the dashboard"}, frontend.CSRFHeader, csrf)
	if st != http.StatusCreated || key["key"] == nil {
		t.Fatalf("key creation with the token: %d %v", st, key)
	}
	// A bearer wins over the cookie: a bad one is refused, not helped.
	if st, _ := b.api("GET", "/api/account/balance", nil, "Authorization", "Bearer cnd_000000000000_nope"); st != http.StatusUnauthorized {
		t.Fatalf("bad bearer with a cookie: %d", st)
	}
	// The key works on its own, for the same account.
	if r := env.Do(t, "GET", "/api/account/balance", nil, "Authorization", "Bearer "+key["key"].(string)); r.Status != http.StatusOK {
		t.Fatalf("the new key: %d", r.Status)
	}
	// The tool server and its mirror take bearers only.
	if st, _ := b.api("GET", "/api/v1/tools", nil); st != http.StatusUnauthorized {
		t.Fatalf("tool mirror by cookie: %d", st)
	}

	// Sign out: CSRF first, then the session is gone for every route.
	if st, _ := b.api("DELETE", frontend.SessionPath, nil); st != http.StatusForbidden {
		t.Fatalf("sign-out without the token: %d", st)
	}
	if st, _ := b.api("DELETE", frontend.SessionPath, nil, frontend.CSRFHeader, csrf); st != http.StatusNoContent {
		t.Fatalf("sign-out: %d", st)
	}
	if st, _ := b.api("GET", "/api/account/balance", nil); st != http.StatusUnauthorized {
		t.Fatalf("balance after sign-out: %d", st)
	}

	// Sign in again with JSON.
	if st, body := b.api("POST", frontend.SessionPath, map[string]string{"email": email, "password": "wrong password here"}); st != http.StatusUnauthorized || body["error"] == nil {
		t.Fatalf("wrong password: %d %v", st, body)
	}
	st, in := b.api("POST", frontend.SessionPath, map[string]string{"email": email, "password": password})
	if st != http.StatusOK || in["accountId"] != s["accountId"] || in["csrfToken"] == csrf {
		t.Fatalf("sign-in: %d %v", st, in)
	}
	if st, _ := b.api("GET", "/api/account/balance", nil); st != http.StatusOK {
		t.Fatalf("balance after signing in again: %d", st)
	}
}

func TestDashboardSessionRateLimit(t *testing.T) {
	base := startOAuthServer(t, func(c *config.Config) { c.SignIn.RateLimit = "3-M" })
	_, email, password := env.NewLogin(t)
	b := newBrowser(t, base)
	for i := range 3 {
		if st, _ := b.api("POST", frontend.SessionPath, map[string]string{"email": email, "password": "wrong password " + string(rune('a'+i))}); st != http.StatusUnauthorized {
			t.Fatalf("attempt %d: %d", i, st)
		}
	}
	st, raw, h := b.apiRaw("POST", frontend.SessionPath, map[string]string{"email": email, "password": password})
	if st != http.StatusTooManyRequests || h.Get("Retry-After") == "" || len(h.Values("Set-Cookie")) != 0 {
		t.Fatalf("after the limit: %d %s %v", st, raw, h)
	}
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
