package frontend_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/modelcontextprotocol/go-sdk/oauthex"

	"conduit/internal/config"
	"conduit/internal/oauth"
)

// tokenLog records what an assistant's HTTP client asks the token
// endpoint for (grant types), and the last access token it sent.
type tokenLog struct {
	mu     sync.Mutex
	grants []string
	bearer string
	// scope is what the last token answer granted.
	scope string
}

func (l *tokenLog) RoundTrip(r *http.Request) (*http.Response, error) {
	if strings.HasSuffix(r.URL.Path, "/oauth/token") && r.Body != nil {
		b, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(strings.NewReader(string(b)))
		v, _ := url.ParseQuery(string(b))
		l.mu.Lock()
		l.grants = append(l.grants, v.Get("grant_type"))
		l.mu.Unlock()
	}
	if h := r.Header.Get("Authorization"); strings.HasPrefix(h, "Bearer ") && strings.HasSuffix(r.URL.Path, "/api/mcp") {
		l.mu.Lock()
		l.bearer = strings.TrimPrefix(h, "Bearer ")
		l.mu.Unlock()
	}
	resp, err := http.DefaultTransport.RoundTrip(r)
	if err == nil && strings.HasSuffix(r.URL.Path, "/oauth/token") {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		resp.Body = io.NopCloser(bytes.NewReader(b))
		var answer struct{ Scope string }
		if json.Unmarshal(b, &answer) == nil && answer.Scope != "" {
			l.mu.Lock()
			l.scope = answer.Scope
			l.mu.Unlock()
		}
	}
	return resp, err
}

func (l *tokenLog) count(grant string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, g := range l.grants {
		if g == grant {
			n++
		}
	}
	return n
}

// connectWithOAuth connects the official Go MCP client to base's tool
// server with nothing but its URL: the client meets the 401, discovers the
// authorization server, registers itself, and sends the human's browser
// through sign-in and consent (PKCE S256, the resource bound). The client
// asks for the scopes the 401 names plus extra; the human leaves the
// consent page's defaults ticked and ticks extra too.
func connectWithOAuth(t *testing.T, base, email, password string, log *tokenLog, extra ...string) *mcp.ClientSession {
	t.Helper()
	b := newBrowser(t, base)
	httpClient := &http.Client{Transport: log, Timeout: 60 * time.Second}
	h, err := auth.NewAuthorizationCodeHandler(&auth.AuthorizationCodeHandlerConfig{
		DynamicClientRegistrationConfig: &auth.DynamicClientRegistrationConfig{Metadata: &oauthex.ClientRegistrationMetadata{
			RedirectURIs: []string{callback}, ClientName: "Desk Assistant", TokenEndpointAuthMethod: "none",
			GrantTypes: []string{"authorization_code", "refresh_token"}, ResponseTypes: []string{"code"},
		}},
		RedirectURL:         callback,
		RequestRefreshToken: true,
		ScopeFilter:         func(discovered []string) []string { return append(discovered, extra...) },
		Client:              httpClient,
		AuthorizationCodeFetcher: func(_ context.Context, args *auth.AuthorizationArgs) (*auth.AuthorizationResult, error) {
			u, err := url.Parse(args.URL)
			if err != nil {
				return nil, err
			}
			q := u.Query()
			// The client asks for what the 401 named (and extra), not for
			// every scope the authorization server knows.
			asked := strings.Fields(q.Get("scope"))
			slices.Sort(asked)
			want := slices.Sorted(slices.Values(append(oauth.DefaultScopes(), extra...)))
			if q.Get("code_challenge_method") != "S256" || q.Get("resource") != base+"/api/mcp" || !slices.Equal(asked, want) {
				t.Errorf("the client's authorization request: %s", args.URL)
			}
			consent := consentPage(t, b, authorization{url: args.URL}, email, password)
			if !strings.Contains(consent.body, "Desk Assistant") {
				t.Errorf("the consent page does not name the client: %.600s", consent.body)
			}
			back := decideGranting(t, b, consent, "approve", append(consent.ticked(), extra...))
			if back.Query().Get("iss") != base {
				t.Errorf("the answer does not name its issuer (RFC 9207): %s", back)
			}
			return &auth.AuthorizationResult{Code: back.Query().Get("code"), State: back.Query().Get("state"), Iss: back.Query().Get("iss")}, nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "desk-assistant", Version: "1"}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: base + "/api/mcp", OAuthHandler: h, HTTPClient: httpClient}, nil)
	if err != nil {
		t.Fatalf("connecting with OAuth: %v", err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

// #16: an assistant connects to the tool server knowing only its URL, with
// the official Go MCP client's own OAuth support — discovery, dynamic
// registration, PKCE authorization by a signed-in human, token, refresh —
// then authors, publishes, runs, inspects, rolls back, estimates, reads
// the balance and mints a key. Access tokens live two seconds here (an
// expires_in of 1 or 2: the client refreshes ahead of expiry, so every
// call after the first refreshes, rotating refresh tokens; a 1 s lifetime
// could round to expires_in 0, which clients read as "no expiry").
func TestMCPOverOAuthWithTheOfficialClient(t *testing.T) {
	clock := &testClock{}
	base := startOAuthServerAt(t, func(c *config.Config) { c.OAuth.AccessTokenTTL = 2 * time.Second }, clock.Now)
	_, email, password := env.NewLogin(t, "pipelines:read", "pipelines:write", "pipelines:run", "keys:manage", "media:read", "media:write")
	log := &tokenLog{}
	// The human ticks keys:manage as well (create_api_key below needs it).
	cs := connectWithOAuth(t, base, email, password, log, "keys:manage")
	if log.count("authorization_code") != 1 {
		t.Fatalf("token requests: %v", log.grants)
	}

	p := toolOK(t, cs, "create_pipeline", map[string]any{"name": "over oauth", "draft": echoGraph("{{question}}", "local-echo")})
	id := p["id"].(string)
	if p := toolOK(t, cs, "publish_pipeline", map[string]any{"pipelineId": id}); p["servingVersion"] != float64(1) {
		t.Fatalf("publish: %v", p)
	}
	run := toolOK(t, cs, "run_pipeline", map[string]any{"pipelineId": id, "inputs": map[string]any{"question": "through OAuth"}, "waitSeconds": 30})
	if run["status"] != "success" || run["outputs"].(map[string]any)["answer"] != "through OAuth" {
		t.Fatalf("run: %v", run)
	}
	if r := toolOK(t, cs, "get_run", map[string]any{"runId": run["runId"]}); r["status"] != "success" || len(r["nodes"].([]any)) == 0 {
		t.Fatalf("get_run: %v", r)
	}
	toolOK(t, cs, "update_draft", map[string]any{"pipelineId": id, "draft": echoGraph("Q: {{question}}", "local-echo")})
	toolOK(t, cs, "publish_pipeline", map[string]any{"pipelineId": id})
	if p := toolOK(t, cs, "rollback_pipeline", map[string]any{"pipelineId": id, "version": 1}); p["servingVersion"] != float64(1) {
		t.Fatalf("rollback: %v", p)
	}
	if e := toolOK(t, cs, "estimate_run_cost", map[string]any{"pipelineId": id, "inputs": map[string]any{"question": "how much?"}}); usd(e["maxUsd"]) <= 0 {
		t.Fatalf("estimate: %v", e)
	}
	if b := toolOK(t, cs, "get_credit_balance", map[string]any{}); usd(b["balanceUsd"]) <= 0 {
		t.Fatalf("balance: %v", b)
	}
	// Media: a pipeline whose speech and music nodes fill the library, and
	// the two generated items assembled (music under the narration) into a
	// file ffprobe reads as one audio stream as long as the narration.
	gen := toolOK(t, cs, "create_pipeline", map[string]any{"name": "narrated", "draft": narrationGraph("calm piano at 80 bpm")})
	toolOK(t, cs, "publish_pipeline", map[string]any{"pipelineId": gen["id"]})
	made := toolOK(t, cs, "run_pipeline", map[string]any{"pipelineId": gen["id"], "inputs": map[string]any{"line": "Thanks for flying with us."}, "waitSeconds": 60})
	if made["status"] != "success" {
		t.Fatalf("generation run: %v", made)
	}
	items := toolOK(t, cs, "list_media", map[string]any{})["items"].([]any)
	if len(items) != 2 {
		t.Fatalf("library: %v", items)
	}
	byNode := map[string]string{}
	for _, it := range items {
		m := it.(map[string]any)
		byNode[m["origin"].(map[string]any)["nodeId"].(string)] = m["id"].(string)
	}
	narration := toolOK(t, cs, "get_media", map[string]any{"id": byNode["say"]})
	job := toolOK(t, cs, "assemble_media", map[string]any{"operation": "music_under", "items": []string{byNode["say"], byNode["bed"]}, "waitSeconds": 120})
	if job["status"] != "success" || job["item"] == nil {
		t.Fatalf("assemble_media: %v", job)
	}
	mixed := job["item"].(map[string]any)
	info := probeURL(t, mixed["url"].(string), mixed["contentType"].(string))
	if info.audio != 1 || info.video != 0 {
		t.Fatalf("the assembly's streams: %+v", info)
	}
	near(t, "the assembly's length", info.duration, narration["durationSeconds"].(float64), 0.5)
	if o := mixed["origin"].(map[string]any); o["operation"] != "music_under" || len(o["items"].([]any)) != 2 {
		t.Fatalf("the assembly's provenance: %v", o)
	}

	// An OAuth connection mints a key for its account, at most with the
	// token's scopes; the key works at once as a plain Bearer key.
	k := toolOK(t, cs, "create_api_key", map[string]any{"name": "from the assistant", "permissions": []string{"pipelines:read"}})
	secret, _ := k["key"].(string)
	if !strings.HasPrefix(secret, "cnd_") {
		t.Fatalf("create_api_key: %v", k)
	}
	if l := toolOK(t, connectMCP(t, secret, nil), "list_pipelines", map[string]any{}); len(l["pipelines"].([]any)) != 2 {
		t.Fatalf("the minted key's list: %v", l)
	}
	toolErr(t, cs, "create_api_key", map[string]any{"name": "wider", "permissions": []string{"enclaves:write"}}, "enclaves:write")

	// Short-lived tokens: the client refreshed (rotating) along the way.
	if log.count("refresh_token") == 0 {
		t.Fatalf("no refresh in: %v", log.grants)
	}
	// The last access token it used, once expired, is refused with the
	// challenge that points the client back to discovery.
	clock.Advance(3 * time.Second)
	req, _ := http.NewRequest("POST", base+"/api/mcp", strings.NewReader(`{}`))
	req.Header.Set("Authorization", "Bearer "+log.bearer)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(resp.Header.Get("WWW-Authenticate"), `resource_metadata="`+base+`/.well-known/oauth-protected-resource/api/mcp"`) ||
		!strings.Contains(resp.Header.Get("WWW-Authenticate"), `error="invalid_token"`) {
		t.Fatalf("an expired token on /api/mcp: %d %q", resp.StatusCode, resp.Header.Get("WWW-Authenticate"))
	}
}

// A human who may only read grants only that: the assistant's run is a
// tool error naming the missing scope, and nothing runs.
func TestMCPOverOAuthMissingScopeIsAToolError(t *testing.T) {
	_, email, password := env.NewLogin(t, "pipelines:read")
	log := &tokenLog{}
	cs := connectWithOAuth(t, env.URL, email, password, log)
	// The token works at the tool server only.
	if s := bearerStatus(t, env.URL, "/api/account/balance", log.bearer); s != http.StatusUnauthorized {
		t.Fatalf("the token outside the tool server: %d", s)
	}
	if s := bearerStatus(t, env.URL, toolRoute, log.bearer); s != http.StatusOK {
		t.Fatalf("the token on the tool server's mirror: %d", s)
	}
	toolErr(t, cs, "run_pipeline", map[string]any{"pipelineId": "pl_unknown", "inputs": map[string]any{"q": "x"}}, "pipelines:run")
	if l := toolOK(t, cs, "list_pipelines", map[string]any{}); len(l["pipelines"].([]any)) != 0 {
		t.Fatalf("list: %v", l)
	}
}

// A browser-based MCP client (the MCP Inspector's direct mode) can reach
// the tool server cross-origin: the preflight is answered without a
// credential, and answers (401 challenges too) are readable with the
// headers a client needs.
func TestToolServerAnswersBrowsers(t *testing.T) {
	req, _ := http.NewRequest(http.MethodOptions, env.URL+"/api/mcp", nil)
	req.Header.Set("Origin", "http://localhost:6274")
	req.Header.Set("Access-Control-Request-Method", "POST")
	req.Header.Set("Access-Control-Request-Headers", "authorization, content-type, mcp-protocol-version")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent || resp.Header.Get("Access-Control-Allow-Origin") != "*" ||
		!strings.Contains(resp.Header.Get("Access-Control-Allow-Headers"), "Authorization") || !strings.Contains(resp.Header.Get("Access-Control-Allow-Methods"), "POST") {
		t.Fatalf("preflight: %d %v", resp.StatusCode, resp.Header)
	}
	r := do(t, http.MethodPost, "/api/mcp", "", map[string]any{}, "Origin", "http://localhost:6274")
	if r.Status != http.StatusUnauthorized || r.Header.Get("Access-Control-Allow-Origin") != "*" ||
		!strings.Contains(r.Header.Get("Access-Control-Expose-Headers"), "WWW-Authenticate") || r.Header.Get("WWW-Authenticate") == "" {
		t.Fatalf("401 to a browser: %d %v", r.Status, r.Header)
	}
}

// The official Go MCP client, knowing only the URL, asks for what the 401
// names; with the consent page left as it is, a human who could grant
// every scope grants the tool server's defaults only, and the token works
// at the tool server only.
func TestMCPOverOAuthGrantIsTheToolServers(t *testing.T) {
	_, email, password := env.NewLogin(t)
	log := &tokenLog{}
	cs := connectWithOAuth(t, env.URL, email, password, log)
	if log.scope != strings.Join(oauth.DefaultScopes(), " ") {
		t.Fatalf("granted %q", log.scope)
	}
	toolErr(t, cs, "create_api_key", map[string]any{"name": "not granted"}, "keys:manage")
	if s := bearerStatus(t, env.URL, "/api/enclaves", log.bearer); s != http.StatusUnauthorized {
		t.Fatalf("the token outside the tool server: %d", s)
	}
}
