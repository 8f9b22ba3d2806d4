package frontend_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os/exec"
	"strings"
	"testing"
	"time"

	"conduit/internal/oauth"
)

// The official TypeScript MCP SDK, unmodified, connects with nothing but
// the tool server's URL and its own OAuth client — the SDK's example
// provider, which sends no state (interop/mcp/oauth.mjs). It asks for the
// scopes the 401 names, a human (this test, over HTTP) signs in and
// allows with the consent page's defaults, and the connection works with
// a grant narrowed to the tool server's scopes — keys:manage, pii:…,
// enclaves:… are not in it — whose token is refused outside the tool
// server.
func TestOfficialTypeScriptMCPClientOverOAuth(t *testing.T) {
	officialMCPClient(t)
	_, email, password := env.NewLogin(t) // may grant every scope
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", "oauth.mjs", env.URL+"/api/mcp")
	cmd.Dir = "../interop/mcp"
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	lines := bufio.NewScanner(stdout)
	lines.Buffer(make([]byte, 1<<20), 1<<20)
	next := func(v any) {
		t.Helper()
		if !lines.Scan() {
			t.Fatalf("oauth.mjs ended: %v\n%s", lines.Err(), stderr.Bytes())
		}
		if err := json.Unmarshal(lines.Bytes(), v); err != nil {
			t.Fatalf("oauth.mjs printed %q: %v\n%s", lines.Text(), err, stderr.Bytes())
		}
	}

	var start struct{ Authorize string }
	next(&start)
	u, err := url.Parse(start.Authorize)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	want := strings.Join(oauth.DefaultScopes(), " ")
	if q.Has("state") || q.Get("scope") != want || q.Get("resource") != env.URL+"/api/mcp" || q.Get("code_challenge_method") != "S256" {
		t.Fatalf("the SDK's authorization request: %s", start.Authorize)
	}
	b := newBrowser(t, env.URL)
	consent := consentPage(t, b, authorization{url: start.Authorize}, email, password)
	back := decide(t, b, consent, "approve")
	if back.Query().Has("state") || back.Query().Get("iss") != env.URL || back.Query().Get("scope") != want {
		t.Fatalf("the answer to the SDK: %s", back)
	}
	if _, err := fmt.Fprintln(stdin, back.String()); err != nil {
		t.Fatal(err)
	}

	var res struct {
		Tools     int            `json:"tools"`
		Balance   map[string]any `json:"balance"`
		Pipelines map[string]any `json:"pipelines"`
		CreateKey struct {
			IsError bool   `json:"isError"`
			Text    string `json:"text"`
		} `json:"createKey"`
		Client struct {
			ID    string `json:"id"`
			Scope string `json:"scope"`
		} `json:"client"`
		Tokens struct {
			AccessToken  string `json:"access_token"`
			RefreshToken string `json:"refresh_token"`
			Scope        string `json:"scope"`
		} `json:"tokens"`
	}
	next(&res)
	if res.Tools != 19 || res.Balance["balanceUsd"] == nil || res.Pipelines["pipelines"] == nil {
		t.Fatalf("the SDK's calls: %+v", res)
	}
	// The grant is the tool server's defaults: no keys:manage, so the
	// key-minting tool refuses.
	if res.Tokens.Scope != want || res.Client.Scope != want || res.Tokens.RefreshToken == "" {
		t.Fatalf("the grant: token %q, client %q", res.Tokens.Scope, res.Client.Scope)
	}
	if !res.CreateKey.IsError || !strings.Contains(res.CreateKey.Text, "keys:manage") {
		t.Fatalf("create_api_key with the narrowed grant: %+v", res.CreateKey)
	}
	// Its token works at the tool server only.
	if s := bearerStatus(t, env.URL, toolRoute, res.Tokens.AccessToken); s != http.StatusOK {
		t.Fatalf("the SDK's token on the mirror: %d", s)
	}
	for _, path := range []string{"/api/account/balance", "/api/pipelines", "/api/keys", "/api/enclaves"} {
		r := do(t, "GET", path, res.Tokens.AccessToken, nil)
		if msg, _ := r.JSON(t)["error"].(string); r.Status != http.StatusUnauthorized || !strings.Contains(msg, "issued for the tool server") {
			t.Fatalf("the SDK's token on %s: %d %s", path, r.Status, r.Body)
		}
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("oauth.mjs: %v\n%s", err, stderr.Bytes())
	}
}
