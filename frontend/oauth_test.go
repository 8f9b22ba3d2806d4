package frontend_test

import (
	"context"
	"encoding/json"
	"errors"
	"html"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/oauth2"

	"conduit/app"
	"conduit/frontend"
	"conduit/internal/config"
)

// The tool server's OAuth flow, end to end on the real stack, with a real
// OAuth client (golang.org/x/oauth2 with PKCE S256 and the resource
// parameter) and the Go MCP SDK's discovery and registration: metadata →
// registration → authorize (a human signs in through the real form and
// consents) → code → token → a protected route → refresh (rotation, reuse
// revokes the family) → revocation.

const callback = "http://127.0.0.1:9/callback"

// browser is a person's browser: it keeps cookies, follows no redirect by
// itself (the test looks at each), and says its form posts are
// same-origin, as a browser's Sec-Fetch-Site does.
type browser struct {
	t    *testing.T
	base string
	c    *http.Client
}

func newBrowser(t *testing.T, base string) *browser {
	jar, _ := cookiejar.New(nil)
	return &browser{t: t, base: base, c: &http.Client{Jar: jar, Timeout: 30 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

type page struct {
	status int
	header http.Header
	body   string
}

func (b *browser) do(method, target string, form url.Values, headers ...string) page {
	b.t.Helper()
	if strings.HasPrefix(target, "/") {
		target = b.base + target
	}
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequest(method, target, body)
	if err != nil {
		b.t.Fatal(err)
	}
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Sec-Fetch-Site", "same-origin")
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := b.c.Do(req)
	if err != nil {
		b.t.Fatalf("%s %s: %v", method, target, err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	return page{status: resp.StatusCode, header: resp.Header, body: string(raw)}
}

var hiddenField = regexp.MustCompile(`<input type="hidden" name="([^"]+)" value="([^"]*)">`)

// fields are a page's hidden form fields.
func (p page) fields() url.Values {
	v := url.Values{}
	for _, m := range hiddenField.FindAllStringSubmatch(p.body, -1) {
		v.Add(html.UnescapeString(m[1]), html.UnescapeString(m[2]))
	}
	return v
}

func (p page) location(t *testing.T) *url.URL {
	t.Helper()
	if p.status != http.StatusSeeOther && p.status != http.StatusFound {
		t.Fatalf("want a redirect, got %d: %.600s", p.status, p.body)
	}
	u, err := url.Parse(p.header.Get("Location"))
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// signIn goes through the real sign-in form.
func (b *browser) signIn(email, password, next string) page {
	b.t.Helper()
	form := b.do("GET", frontend.SignInPath+"?next="+url.QueryEscape(next), nil)
	if form.status != http.StatusOK {
		b.t.Fatalf("sign-in page: %d %s", form.status, form.body)
	}
	v := form.fields()
	v.Set("email", email)
	v.Set("password", password)
	return b.do("POST", frontend.SignInPath, v)
}

// assistant is an OAuth client that discovered the server and registered.
type assistant struct {
	cfg      *oauth2.Config
	resource string
	clientID string
}

// connect discovers the tool server's authorization server through its
// metadata (with the SDK's checks) and registers a client dynamically.
func connect(t *testing.T, base, name string, scopes ...string) *assistant {
	t.Helper()
	ctx := context.Background()
	resource := base + "/api/mcp"
	prm, err := oauthex.GetProtectedResourceMetadata(ctx, base+"/.well-known/oauth-protected-resource/api/mcp", resource, http.DefaultClient)
	if err != nil {
		t.Fatal(err)
	}
	if len(prm.AuthorizationServers) != 1 || prm.AuthorizationServers[0] != base || strings.Join(prm.BearerMethodsSupported, ",") != "header" ||
		!strings.Contains(strings.Join(prm.ScopesSupported, " "), "pipelines:run") {
		t.Fatalf("protected resource metadata: %+v", prm)
	}
	asm, err := oauthex.GetAuthServerMeta(ctx, base+"/.well-known/oauth-authorization-server", base, http.DefaultClient)
	if err != nil || asm == nil {
		t.Fatalf("authorization server metadata: %v", err)
	}
	if strings.Join(asm.CodeChallengeMethodsSupported, ",") != "S256" || asm.RegistrationEndpoint != base+"/oauth/register" ||
		asm.RevocationEndpoint != base+"/oauth/revoke" || strings.Join(asm.TokenEndpointAuthMethodsSupported, ",") != "none" {
		t.Fatalf("authorization server metadata: %+v", asm)
	}
	reg, err := oauthex.RegisterClient(ctx, asm.RegistrationEndpoint, &oauthex.ClientRegistrationMetadata{
		RedirectURIs: []string{callback}, ClientName: name, TokenEndpointAuthMethod: "none",
		GrantTypes: []string{"authorization_code", "refresh_token"}, ResponseTypes: []string{"code"},
	}, http.DefaultClient)
	if err != nil {
		t.Fatal(err)
	}
	if reg.ClientSecret != "" || reg.TokenEndpointAuthMethod != "none" {
		t.Fatalf("registration: %+v", reg)
	}
	return &assistant{resource: resource, clientID: reg.ClientID, cfg: &oauth2.Config{
		ClientID: reg.ClientID, RedirectURL: callback, Scopes: scopes,
		Endpoint: oauth2.Endpoint{AuthURL: asm.AuthorizationEndpoint, TokenURL: asm.TokenEndpoint, AuthStyle: oauth2.AuthStyleInParams},
	}}
}

// authorization is one authorization request of the assistant's.
type authorization struct {
	url, state, verifier string
}

func (a *assistant) start(extra ...oauth2.AuthCodeOption) authorization {
	verifier := oauth2.GenerateVerifier()
	state := "state-" + oauth2.GenerateVerifier()[:12]
	opts := append([]oauth2.AuthCodeOption{oauth2.S256ChallengeOption(verifier), oauth2.SetAuthURLParam("resource", a.resource)}, extra...)
	return authorization{url: a.cfg.AuthCodeURL(state, opts...), state: state, verifier: verifier}
}

// consentPage signs the human in (when needed) on the way to the consent
// page of the authorization.
func consentPage(t *testing.T, b *browser, az authorization, email, password string) page {
	t.Helper()
	p := b.do("GET", az.url, nil)
	if p.status == http.StatusSeeOther {
		loc := p.location(t)
		if loc.Path != frontend.SignInPath {
			t.Fatalf("authorize redirected to %s, want the sign-in page", loc)
		}
		next := loc.Query().Get("next")
		if after := b.signIn(email, password, next); after.location(t).String() != next {
			t.Fatalf("after signing in: %s, want %s", after.location(t), next)
		}
		p = b.do("GET", next, nil)
	}
	if p.status != http.StatusOK || !strings.Contains(p.body, "<form") {
		t.Fatalf("consent page: %d %.800s", p.status, p.body)
	}
	return p
}

var checkedBox = regexp.MustCompile(`<input type="checkbox" name="grant" value="([^"]+)" checked>`)

// ticked are the scopes a consent page ticks.
func (p page) ticked() []string {
	var out []string
	for _, m := range checkedBox.FindAllStringSubmatch(p.body, -1) {
		out = append(out, html.UnescapeString(m[1]))
	}
	return out
}

// decide answers the consent page as a browser would, leaving its boxes
// as they are; it returns where the browser is sent.
func decide(t *testing.T, b *browser, consent page, decision string) *url.URL {
	t.Helper()
	return decideGranting(t, b, consent, decision, consent.ticked())
}

// decideGranting answers the consent page with exactly the boxes of grant
// ticked.
func decideGranting(t *testing.T, b *browser, consent page, decision string, grant []string) *url.URL {
	t.Helper()
	v := consent.fields()
	v.Set("decision", decision)
	v["grant"] = grant
	return b.do("POST", "/oauth/authorize", v).location(t)
}

// codeFrom checks the redirect back to the client and takes the code.
func codeFrom(t *testing.T, az authorization, back *url.URL) string {
	t.Helper()
	q := back.Query()
	if back.Scheme+"://"+back.Host+back.Path != callback || q.Get("state") != az.state || q.Get("code") == "" {
		t.Fatalf("redirect back to the client: %s", back)
	}
	return q.Get("code")
}

func (a *assistant) exchange(t *testing.T, az authorization, code string) *oauth2.Token {
	t.Helper()
	tok, err := a.cfg.Exchange(context.Background(), code, oauth2.VerifierOption(az.verifier), oauth2.SetAuthURLParam("resource", a.resource))
	if err != nil {
		t.Fatalf("exchanging the code: %v", err)
	}
	return tok
}

// authorize runs the whole flow for a human who approves.
func (a *assistant) authorize(t *testing.T, b *browser, email, password string) *oauth2.Token {
	t.Helper()
	az := a.start()
	return a.exchange(t, az, codeFrom(t, az, decide(t, b, consentPage(t, b, az, email, password), "approve")))
}

// refresh exchanges a refresh token (x/oauth2 does it for an expired token).
func (a *assistant) refresh(refreshToken string) (*oauth2.Token, error) {
	return a.cfg.TokenSource(context.Background(), &oauth2.Token{RefreshToken: refreshToken, Expiry: time.Now().Add(-time.Hour)}).Token()
}

func oauthErrorCode(err error) string {
	var re *oauth2.RetrieveError
	if errors.As(err, &re) {
		return re.ErrorCode
	}
	return ""
}

// toolRoute is a route of the tool server's mirror: where an access token
// works (GET lists the tools for any valid credential).
const toolRoute = "/api/v1/tools"

// bearerStatus is the status of GET path with the token.
func bearerStatus(t *testing.T, base, path, token string) int {
	t.Helper()
	req, _ := http.NewRequest("GET", base+path, nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

func TestOAuthFullFlow(t *testing.T) {
	account, email, password := env.NewLogin(t)
	a := connect(t, env.URL, "Test Assistant", "pipelines:read", "pipelines:run")
	b := newBrowser(t, env.URL)

	az := a.start()
	consent := consentPage(t, b, az, email, password)
	for _, want := range []string{"Test Assistant", "127.0.0.1:9", "run your pipelines", "list your pipelines", email, a.clientID} {
		if !strings.Contains(consent.body, html.EscapeString(want)) {
			t.Errorf("the consent page does not show %q:\n%s", want, consent.body)
		}
	}
	if !strings.Contains(consent.header.Get("Content-Security-Policy"), "form-action 'self'") {
		t.Errorf("consent page CSP: %q", consent.header.Get("Content-Security-Policy"))
	}
	back := decide(t, b, consent, "approve")
	if back.Query().Get("scope") != "pipelines:read pipelines:run" {
		t.Errorf("granted scope %q", back.Query().Get("scope"))
	}
	code := codeFrom(t, az, back)
	tok := a.exchange(t, az, code)
	if !strings.HasPrefix(tok.AccessToken, "ory_at_") || tok.RefreshToken == "" || time.Until(tok.Expiry) > time.Hour || time.Until(tok.Expiry) < 50*time.Minute {
		t.Fatalf("token: %+v", tok)
	}
	if tok.Extra("scope") != "pipelines:read pipelines:run" {
		t.Errorf("token scope %v", tok.Extra("scope"))
	}

	// The access token is a bearer for its account at the tool server
	// (here its HTTP mirror), within its scopes…
	body := wantStatus(t, do(t, "POST", "/api/v1/tools/get_credit_balance", tok.AccessToken, map[string]any{}), http.StatusOK)
	if body["balanceUsd"] != 5.0 {
		t.Fatalf("balance: %v", body)
	}
	wantStatus(t, do(t, "POST", "/api/v1/tools/list_pipelines", tok.AccessToken, map[string]any{}), http.StatusOK)
	refused := wantStatus(t, do(t, "POST", "/api/v1/tools/create_api_key", tok.AccessToken, map[string]any{"name": "x"}), http.StatusForbidden)
	if !strings.Contains(refused["error"].(string), "keys:manage") {
		t.Fatalf("%v", refused)
	}
	// …and nowhere else (RFC 8707: it was issued for the tool server).
	for _, path := range []string{"/api/account/balance", "/api/pipelines", "/api/keys"} {
		r := wantStatus(t, do(t, "GET", path, tok.AccessToken, nil), http.StatusUnauthorized)
		if msg, _ := r["error"].(string); !strings.Contains(msg, "issued for the tool server ("+env.URL+"/api/mcp)") {
			t.Fatalf("the token on %s: %v", path, r)
		}
	}
	logs := env.Logs()
	if !regexp.MustCompile(`"msg":"signed in"[^\n]*"account_id":"` + account + `"`).MatchString(logs) {
		t.Error("the sign-in is not logged with its account")
	}
	for _, secret := range []string{tok.AccessToken, tok.RefreshToken, code, password} {
		if strings.Contains(logs, secret) {
			t.Fatalf("a secret is in the logs: %.12s…", secret)
		}
	}

	// Refresh: a new pair; the old access token stops working.
	tok2, err := a.refresh(tok.RefreshToken)
	if err != nil {
		t.Fatal(err)
	}
	if tok2.RefreshToken == tok.RefreshToken || tok2.AccessToken == tok.AccessToken {
		t.Fatal("refresh did not rotate the tokens")
	}
	if s := bearerStatus(t, env.URL, toolRoute, tok.AccessToken); s != http.StatusUnauthorized {
		t.Fatalf("old access token after refresh: %d", s)
	}
	if s := bearerStatus(t, env.URL, toolRoute, tok2.AccessToken); s != http.StatusOK {
		t.Fatalf("new access token: %d", s)
	}
	// The old refresh token again is reuse: refused, and the whole family
	// is revoked with it.
	if _, err := a.refresh(tok.RefreshToken); oauthErrorCode(err) != "invalid_grant" {
		t.Fatalf("reused refresh token: %v", err)
	}
	if s := bearerStatus(t, env.URL, toolRoute, tok2.AccessToken); s != http.StatusUnauthorized {
		t.Fatalf("access token of a family whose refresh token was reused: %d", s)
	}
	if _, err := a.refresh(tok2.RefreshToken); oauthErrorCode(err) != "invalid_grant" {
		t.Fatalf("refresh token of a revoked family: %v", err)
	}

	// A new connection (the human is still signed in), then revocation.
	tok3 := a.authorize(t, b, email, password)
	if s := bearerStatus(t, env.URL, toolRoute, tok3.AccessToken); s != http.StatusOK {
		t.Fatalf("second connection: %d", s)
	}
	resp, err := http.PostForm(env.URL+"/oauth/revoke", url.Values{"token": {tok3.RefreshToken}, "client_id": {a.clientID}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("revoke: %d", resp.StatusCode)
	}
	if s := bearerStatus(t, env.URL, toolRoute, tok3.AccessToken); s != http.StatusUnauthorized {
		t.Fatalf("access token after its grant was revoked: %d", s)
	}
	if _, err := a.refresh(tok3.RefreshToken); oauthErrorCode(err) != "invalid_grant" {
		t.Fatalf("revoked refresh token: %v", err)
	}
	// Revoking an access token ends it (and its grant) too.
	tok4 := a.authorize(t, b, email, password)
	resp, _ = http.PostForm(env.URL+"/oauth/revoke", url.Values{"token": {tok4.AccessToken}, "token_type_hint": {"access_token"}, "client_id": {a.clientID}})
	resp.Body.Close()
	if s := bearerStatus(t, env.URL, toolRoute, tok4.AccessToken); resp.StatusCode != http.StatusOK || s != http.StatusUnauthorized {
		t.Fatalf("revoked access token: revoke %d, then %d", resp.StatusCode, s)
	}
	// A refresh token is no bearer.
	if s := bearerStatus(t, env.URL, toolRoute, tok4.RefreshToken); s != http.StatusUnauthorized {
		t.Fatalf("refresh token as a bearer: %d", s)
	}

	// Sign out: the next authorization asks to sign in again.
	signedIn := b.do("GET", frontend.SignInPath, nil)
	out := b.do("POST", frontend.SignOutPath, signedIn.fields())
	if out.location(t).Path != frontend.SignInPath {
		t.Fatalf("sign out: %d", out.status)
	}
	if loc := b.do("GET", a.start().url, nil).location(t); loc.Path != frontend.SignInPath {
		t.Fatalf("after signing out, authorize went to %s", loc)
	}
}

func TestOAuthConsentDenyAndScopeLimits(t *testing.T) {
	// This login may grant pipelines:read only.
	_, email, password := env.NewLogin(t, "pipelines:read")
	a := connect(t, env.URL, "Limited", "pipelines:read", "pipelines:write")
	b := newBrowser(t, env.URL)

	// Deny: back to the client with access_denied and its state.
	az := a.start()
	back := decide(t, b, consentPage(t, b, az, email, password), "deny")
	if back.Query().Get("error") != "access_denied" || back.Query().Get("state") != az.state || back.Query().Get("code") != "" {
		t.Fatalf("deny: %s", back)
	}

	// The consent page says what cannot be granted; the token holds the rest.
	az = a.start()
	consent := consentPage(t, b, az, email, password)
	if !strings.Contains(consent.body, "which your login cannot grant") || !strings.Contains(consent.body, "pipelines:write") {
		t.Fatalf("consent page does not say pipelines:write cannot be granted:\n%s", consent.body)
	}
	tok := a.exchange(t, az, codeFrom(t, az, decide(t, b, consent, "approve")))
	if tok.Extra("scope") != "pipelines:read" {
		t.Fatalf("scope %v", tok.Extra("scope"))
	}
	r := do(t, "POST", "/api/v1/tools/create_pipeline", tok.AccessToken, map[string]any{"name": "x", "draft": echoGraph("{{question}}", "local-echo")})
	wantStatus(t, r, http.StatusForbidden)

	// A client that names no scope gets the tool server's defaults, here
	// cut to what the login holds.
	plain := connect(t, env.URL, "No scopes")
	az = plain.start()
	tok = plain.exchange(t, az, codeFrom(t, az, decide(t, b, consentPage(t, b, az, email, password), "approve")))
	if tok.Extra("scope") != "pipelines:read" {
		t.Fatalf("default scope %v", tok.Extra("scope"))
	}
	// A login that can grant none of what is asked: nothing to allow.
	only := connect(t, env.URL, "Writer", "pipelines:write")
	az = only.start()
	consent = consentPage(t, b, az, email, password)
	if strings.Contains(consent.body, `value="approve"`) {
		t.Fatal("the consent page offers to allow what cannot be granted")
	}
	v := consent.fields()
	v.Set("decision", "approve")
	if back := b.do("POST", "/oauth/authorize", v).location(t); back.Query().Get("error") != "access_denied" {
		t.Fatalf("approving nothing grantable: %s", back)
	}
}

func TestOAuthAnotherAccountsDataIsNotVisible(t *testing.T) {
	_, keyB := env.NewAccount(t)
	theirs := createPipeline(t, keyB, echoGraph("{{question}}", "local-echo"))
	_, email, password := env.NewLogin(t)
	a := connect(t, env.URL, "Nosy", "pipelines:read", "pipelines:run")
	tok := a.authorize(t, newBrowser(t, env.URL), email, password)
	list := wantStatus(t, do(t, "POST", "/api/v1/tools/list_pipelines", tok.AccessToken, map[string]any{}), http.StatusOK)
	if strings.Contains(string(mustJSON(t, list)), theirs) {
		t.Fatal("another account's pipeline is listed")
	}
	if r := do(t, "POST", "/api/v1/tools/get_pipeline", tok.AccessToken, map[string]any{"pipelineId": theirs}); r.Status != http.StatusForbidden && r.Status != http.StatusNotFound {
		t.Fatalf("another account's pipeline: %d %s", r.Status, r.Body)
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Bad authorization requests are refused before anyone signs in, back to
// the client when its redirect URI is known; bad token requests are
// refused and use nothing up.
func TestOAuthRefusals(t *testing.T) {
	_, email, password := env.NewLogin(t)
	a := connect(t, env.URL, "Careless", "pipelines:read")
	b := newBrowser(t, env.URL)

	refusedBack := func(name, authURL, wantErr string) {
		t.Helper()
		back := b.do("GET", authURL, nil).location(t)
		if back.Host != "127.0.0.1:9" || back.Query().Get("error") != wantErr || back.Query().Get("code") != "" {
			t.Errorf("%s: redirected to %s, want error=%s at the client", name, back, wantErr)
		}
	}
	// PKCE plain is refused, and so is no PKCE.
	plainURL := a.cfg.AuthCodeURL("state-plain-1", oauth2.SetAuthURLParam("code_challenge", oauth2.GenerateVerifier()),
		oauth2.SetAuthURLParam("code_challenge_method", "plain"), oauth2.SetAuthURLParam("resource", a.resource))
	refusedBack("PKCE plain", plainURL, "invalid_request")
	refusedBack("no PKCE", a.cfg.AuthCodeURL("state-none-1"), "invalid_request")
	// A resource other than the tool server.
	refusedBack("another resource", a.start(oauth2.SetAuthURLParam("resource", "https://elsewhere.example/api/mcp")).url, "invalid_target")
	// A scope that does not exist (so the client cannot have registered it).
	refusedBack("unknown scope", a.start(oauth2.SetAuthURLParam("scope", "root")).url, "invalid_scope")
	// An unknown client or an unregistered redirect URI: answered here.
	for name, u := range map[string]string{
		"unknown client":          strings.Replace(a.start().url, "client_id="+a.clientID, "client_id=client_nobody", 1),
		"unregistered redirect":   strings.Replace(a.start().url, url.QueryEscape(callback), url.QueryEscape("https://evil.example/cb"), 1),
		"hostile client id (NUL)": strings.Replace(a.start().url, "client_id="+a.clientID, "client_id=a%00b", 1),
	} {
		p := b.do("GET", u, nil)
		if p.status < 400 || p.status >= 500 || p.header.Get("Location") != "" {
			t.Errorf("%s: %d %s %s", name, p.status, p.header.Get("Location"), p.body)
		}
	}

	// The token endpoint refuses another resource without using the code.
	az := a.start()
	code := codeFrom(t, az, decide(t, b, consentPage(t, b, az, email, password), "approve"))
	_, err := a.cfg.Exchange(context.Background(), code, oauth2.VerifierOption(az.verifier), oauth2.SetAuthURLParam("resource", "https://elsewhere.example/"))
	if oauthErrorCode(err) != "invalid_target" {
		t.Fatalf("token for another resource: %v", err)
	}
	// That refusal changed nothing: the code still works.
	a.exchange(t, az, code)
	// A wrong verifier is refused (and uses the code up).
	az = a.start()
	code = codeFrom(t, az, decide(t, b, consentPage(t, b, az, email, password), "approve"))
	if _, err := a.cfg.Exchange(context.Background(), code, oauth2.VerifierOption(oauth2.GenerateVerifier())); oauthErrorCode(err) != "invalid_grant" {
		t.Fatalf("wrong PKCE verifier: %v", err)
	}
	// A code works once; presented again, it also revokes what it got.
	az = a.start()
	code = codeFrom(t, az, decide(t, b, consentPage(t, b, az, email, password), "approve"))
	tok := a.exchange(t, az, code)
	if _, err := a.cfg.Exchange(context.Background(), code, oauth2.VerifierOption(az.verifier)); oauthErrorCode(err) != "invalid_grant" {
		t.Fatalf("second exchange of a code: %v", err)
	}
	if s := bearerStatus(t, env.URL, toolRoute, tok.AccessToken); s != http.StatusUnauthorized {
		t.Fatalf("token of a code exchanged twice: %d", s)
	}

	// Registration refuses what it must, in RFC 7591's terms.
	for name, c := range map[string]struct {
		body, code string
	}{
		"no redirect":      {`{"client_name":"x"}`, "invalid_redirect_uri"},
		"plain http":       {`{"redirect_uris":["http://evil.example/cb"]}`, "invalid_redirect_uri"},
		"fragment":         {`{"redirect_uris":["https://ok.example/cb#x"]}`, "invalid_redirect_uri"},
		"custom scheme":    {`{"redirect_uris":["myapp://cb"]}`, "invalid_redirect_uri"},
		"user info":        {`{"redirect_uris":["https://a:b@ok.example/cb"]}`, "invalid_redirect_uri"},
		"implicit grant":   {`{"redirect_uris":["https://ok.example/cb"],"grant_types":["implicit"]}`, "invalid_client_metadata"},
		"unknown scope":    {`{"redirect_uris":["https://ok.example/cb"],"scope":"root"}`, "invalid_client_metadata"},
		"not JSON":         {`redirect_uris=x`, "invalid_client_metadata"},
		"NUL in the name":  {`{"redirect_uris":["https://ok.example/cb"],"client_name":"a\u0000"}`, "invalid_request"},
		"too long a name":  {`{"redirect_uris":["https://ok.example/cb"],"client_name":"` + strings.Repeat("n", 101) + `"}`, "invalid_client_metadata"},
		"eleven redirects": {`{"redirect_uris":[` + strings.Repeat(`"https://ok.example/cb",`, 10) + `"https://ok.example/cb"]}`, "invalid_redirect_uri"},
	} {
		r := env.Do(t, "POST", "/oauth/register", c.body, "Content-Type", "application/json")
		body := r.JSON(t)
		if r.Status != http.StatusBadRequest || body["error"] != c.code || body["error_description"] == "" {
			t.Errorf("%s: %d %s", name, r.Status, r.Body)
		}
	}
	// Loopback http and https register; so does a client asking for a
	// secret, which is told it is public.
	r := env.Do(t, "POST", "/oauth/register", `{"redirect_uris":["http://[::1]/cb","http://localhost:7/cb","https://ok.example/cb"],"token_endpoint_auth_method":"client_secret_basic","unknown_field":1}`,
		"Content-Type", "application/json")
	if body := r.JSON(t); r.Status != http.StatusCreated || body["token_endpoint_auth_method"] != "none" || body["client_secret"] != nil || body["client_id"] == "" {
		t.Fatalf("registration: %d %s", r.Status, r.Body)
	}
}

// The sign-in form and the consent form refuse posts without their CSRF
// token or from another site; wrong passwords are refused and
// rate-limited per address and per email.
func TestSignInForms(t *testing.T) {
	_, email, password := env.NewLogin(t)
	b := newBrowser(t, env.URL)

	// No token: refused, not signed in.
	p := b.do("POST", frontend.SignInPath, url.Values{"email": {email}, "password": {password}})
	if p.status != http.StatusForbidden || strings.Contains(strings.Join(p.header.Values("Set-Cookie"), ";"), "conduit_session=") {
		t.Fatalf("sign-in without a CSRF token: %d", p.status)
	}
	// From another site: refused even with the token.
	form := b.do("GET", frontend.SignInPath, nil)
	v := form.fields()
	v.Set("email", email)
	v.Set("password", password)
	if p := b.do("POST", frontend.SignInPath, v, "Sec-Fetch-Site", "cross-site"); p.status != http.StatusForbidden {
		t.Fatalf("cross-site sign-in: %d", p.status)
	}
	// A wrong password (and an unknown email) is one answer.
	v.Set("password", "not the password at all")
	wrong := b.do("POST", frontend.SignInPath, v)
	// (each answer is a fresh form, with a fresh token)
	v = wrong.fields()
	v.Set("email", "nobody@test.conduit.local")
	v.Set("password", password)
	unknown := b.do("POST", frontend.SignInPath, v)
	if wrong.status != http.StatusUnauthorized || unknown.status != http.StatusUnauthorized ||
		!strings.Contains(wrong.body, "The email or the password is wrong.") || !strings.Contains(unknown.body, "The email or the password is wrong.") {
		t.Fatalf("wrong password %d, unknown email %d", wrong.status, unknown.status)
	}
	// The right one signs in, with a session cookie as it should be.
	p = b.signIn(email, password, "")
	cookie := strings.Join(p.header.Values("Set-Cookie"), "\n")
	if p.location(t).Path != frontend.SignInPath || !strings.Contains(cookie, "conduit_session=") || !strings.Contains(cookie, "HttpOnly") || !strings.Contains(cookie, "SameSite=Lax") {
		t.Fatalf("sign-in: %d %q", p.status, cookie)
	}
	if who := b.do("GET", frontend.SignInPath, nil); !strings.Contains(who.body, email) {
		t.Fatalf("signed-in page: %s", who.body)
	}

	// The consent form needs the session's CSRF token.
	a := connect(t, env.URL, "Forged", "pipelines:read")
	az := a.start()
	consent := consentPage(t, b, az, email, password)
	forged := consent.fields()
	forged.Del("csrf")
	forged.Set("decision", "approve")
	if p := b.do("POST", "/oauth/authorize", forged); p.status != http.StatusForbidden || p.header.Get("Location") != "" {
		t.Fatalf("consent without its CSRF token: %d %s", p.status, p.header.Get("Location"))
	}
	forged.Set("csrf", "guessed")
	if p := b.do("POST", "/oauth/authorize", forged); p.status != http.StatusForbidden {
		t.Fatalf("consent with a wrong CSRF token: %d", p.status)
	}
	v = consent.fields()
	v.Set("decision", "approve")
	if p := b.do("POST", "/oauth/authorize", v, "Sec-Fetch-Site", "cross-site"); p.status != http.StatusForbidden {
		t.Fatalf("cross-site consent: %d", p.status)
	}
	// Another browser (no session) cannot use this page's form.
	if p := newBrowser(t, env.URL).do("POST", "/oauth/authorize", v); p.status != http.StatusUnauthorized {
		t.Fatalf("consent without a session: %d", p.status)
	}
	// Nothing above issued a code: the real answer still works, once.
	codeFrom(t, az, decide(t, b, consent, "approve"))
}

// A second server (as another deployment would be: its own public URL)
// on the same database and secret, whose access tokens live one second.
func startOAuthServer(t *testing.T, change func(*config.Config)) string {
	t.Helper()
	return startOAuthServerAt(t, change, time.Now)
}

// testClock is the wall clock moved forward by Advance: a test passes a
// token's expiry without sleeping through it.
type testClock struct{ offset atomic.Int64 }

func (c *testClock) Now() time.Time          { return time.Now().Add(time.Duration(c.offset.Load())) }
func (c *testClock) Advance(d time.Duration) { c.offset.Add(int64(d)) }
func (c *testClock) Reset()                  { c.offset.Store(0) }

// startOAuthServerAt is startOAuthServer whose token check reads now.
func startOAuthServerAt(t *testing.T, change func(*config.Config), now func() time.Time) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cfg := *env.Config
	cfg.HTTP.PublicURL = "http://" + ln.Addr().String()
	change(&cfg)
	prov, err := app.NewOAuth(&cfg, env.Platform.Store)
	if err != nil {
		t.Fatal(err)
	}
	prov.WithClock(now)
	deps := env.Platform.FrontendDeps()
	deps.Config, deps.OAuth = &cfg, prov
	deps.Accounts.Tokens = prov
	srv := &http.Server{Handler: frontend.New(deps).Handler()}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return cfg.HTTP.PublicURL
}

func TestOAuthExpiredAndForeignTokens(t *testing.T) {
	clock := &testClock{}
	other := startOAuthServerAt(t, func(c *config.Config) { c.OAuth.AccessTokenTTL = time.Second }, clock.Now)
	_, email, password := env.NewLogin(t)
	a := connect(t, other, "Elsewhere", "pipelines:read")
	tok := a.authorize(t, newBrowser(t, other), email, password)
	if s := bearerStatus(t, other, toolRoute, tok.AccessToken); s != http.StatusOK {
		t.Fatalf("fresh token on its own server: %d", s)
	}
	// Same database, same secret, but issued for another resource: refused.
	if s := bearerStatus(t, env.URL, toolRoute, tok.AccessToken); s != http.StatusUnauthorized {
		t.Fatalf("token for another resource: %d", s)
	}
	// Expired: refused where it was valid.
	clock.Advance(2 * time.Second)
	if s := bearerStatus(t, other, toolRoute, tok.AccessToken); s != http.StatusUnauthorized {
		t.Fatalf("expired token: %d", s)
	}
	// Its refresh token still gets a new one (issued on the wall clock, so
	// the check reads it again).
	clock.Reset()
	fresh, err := a.refresh(tok.RefreshToken)
	if err != nil || bearerStatus(t, other, toolRoute, fresh.AccessToken) != http.StatusOK {
		t.Fatalf("refresh after expiry: %v", err)
	}
}

func TestSignInRateLimit(t *testing.T) {
	base := startOAuthServer(t, func(c *config.Config) { c.SignIn.RateLimit = "3-M" })
	_, email, password := env.NewLogin(t)
	b := newBrowser(t, base)
	for i := range 3 {
		if p := b.signIn(email, "wrong password number "+string(rune('a'+i)), ""); p.status != http.StatusUnauthorized {
			t.Fatalf("attempt %d: %d", i, p.status)
		}
	}
	// Spent: even the right password waits, and the page says how long.
	p := b.signIn(email, password, "")
	if p.status != http.StatusTooManyRequests || p.header.Get("Retry-After") == "" || strings.Contains(strings.Join(p.header.Values("Set-Cookie"), ";"), "conduit_session=") {
		t.Fatalf("after the limit: %d %q", p.status, p.header.Get("Retry-After"))
	}
}

// The metadata documents are public (CORS for browser-based clients) and
// agree with each other.
func TestOAuthMetadata(t *testing.T) {
	for _, path := range []string{"/.well-known/oauth-protected-resource", "/.well-known/oauth-protected-resource/api/mcp"} {
		r := env.Do(t, "GET", path, nil, "Origin", "https://inspector.example")
		body := r.JSON(t)
		if r.Status != http.StatusOK || body["resource"] != env.URL+"/api/mcp" || r.Header.Get("Access-Control-Allow-Origin") != "*" {
			t.Fatalf("%s: %d %s", path, r.Status, r.Body)
		}
	}
	r := env.Do(t, "OPTIONS", "/oauth/token", nil, "Origin", "https://inspector.example", "Access-Control-Request-Method", "POST")
	if r.Status != http.StatusNoContent || !strings.Contains(r.Header.Get("Access-Control-Allow-Methods"), "POST") {
		t.Fatalf("preflight: %d %v", r.Status, r.Header)
	}
	body := env.Do(t, "GET", "/.well-known/oauth-authorization-server", nil).JSON(t)
	if body["issuer"] != env.URL || body["token_endpoint"] != env.URL+"/oauth/token" || body["jwks_uri"] != nil {
		t.Fatalf("%v", body)
	}
	// OAuth errors are in OAuth's shape.
	r = env.Do(t, "POST", "/oauth/token", "grant_type=password&username=a&password=b", "Content-Type", "application/x-www-form-urlencoded")
	if e := r.JSON(t); r.Status/100 != 4 || e["error"] == nil || e["error_description"] == nil {
		t.Fatalf("token endpoint error: %d %s", r.Status, r.Body)
	}
}
