package frontend_test

import (
	"context"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/oauth2"

	"conduit/internal/apikey"
	"conduit/internal/oauth"
)

// A client that asks for every scope the platform has gets at most what
// the human approves: the consent page ticks the tool server's defaults,
// offers keys:manage unticked, says which scopes the tool server does
// not use, and the grant is what was left ticked.
func TestOAuthConsentNarrowsTheGrant(t *testing.T) {
	_, email, password := env.NewLogin(t) // may grant every scope
	ctx := context.Background()
	reg, err := oauthex.RegisterClient(ctx, env.URL+"/oauth/register", &oauthex.ClientRegistrationMetadata{
		RedirectURIs: []string{callback}, ClientName: "Greedy", TokenEndpointAuthMethod: "none",
		Scope: strings.Join(apikey.AllScopes(), " "),
	}, http.DefaultClient)
	if err != nil {
		t.Fatal(err)
	}
	a := &assistant{resource: env.URL + "/api/mcp", clientID: reg.ClientID, cfg: &oauth2.Config{
		ClientID: reg.ClientID, RedirectURL: callback, Scopes: apikey.AllScopes(),
		Endpoint: oauth2.Endpoint{AuthURL: env.URL + "/oauth/authorize", TokenURL: env.URL + "/oauth/token", AuthStyle: oauth2.AuthStyleInParams},
	}}
	b := newBrowser(t, env.URL)

	// Left as the page offers it: the tool server's defaults, no more.
	az := a.start()
	consent := consentPage(t, b, az, email, password)
	if got := consent.ticked(); !slices.Equal(got, oauth.DefaultScopes()) {
		t.Fatalf("ticked at first: %v", got)
	}
	for _, want := range []string{`name="grant" value="keys:manage">`, "which the tool server does not use", "pii:delete", "enclaves:write"} {
		if !strings.Contains(consent.body, want) {
			t.Errorf("the consent page does not show %q", want)
		}
	}
	if strings.Contains(consent.body, `value="pii:delete"`) {
		t.Error("the consent page offers a scope the tool server does not use")
	}
	back := decide(t, b, consent, "approve")
	want := strings.Join(oauth.DefaultScopes(), " ")
	if back.Query().Get("scope") != want || back.Query().Get("iss") != env.URL {
		t.Fatalf("the answer: %s", back)
	}
	tok := a.exchange(t, az, codeFrom(t, az, back))
	if tok.Extra("scope") != want {
		t.Fatalf("token scope %v", tok.Extra("scope"))
	}

	// Narrowed by the human to reading pipelines; a scope forged into the
	// form that was never offered is not granted either.
	az = a.start()
	consent = consentPage(t, b, az, email, password)
	back = decideGranting(t, b, consent, "approve", []string{"pipelines:read", "pii:delete"})
	tok = a.exchange(t, az, codeFrom(t, az, back))
	if tok.Extra("scope") != "pipelines:read" {
		t.Fatalf("narrowed scope %v", tok.Extra("scope"))
	}
	wantStatus(t, do(t, "POST", "/api/v1/tools/list_pipelines", tok.AccessToken, map[string]any{}), http.StatusOK)
	wantStatus(t, do(t, "POST", "/api/v1/tools/create_pipeline", tok.AccessToken, map[string]any{"name": "x", "draft": echoGraph("{{question}}", "local-echo")}), http.StatusForbidden)

	// Widened by the human to keys:manage, which is then held.
	az = a.start()
	consent = consentPage(t, b, az, email, password)
	tok = a.exchange(t, az, codeFrom(t, az, decideGranting(t, b, consent, "approve", append(consent.ticked(), "keys:manage"))))
	if tok.Extra("scope") != "keys:manage "+want {
		t.Fatalf("widened scope %v", tok.Extra("scope"))
	}

	// The token is refused away from the tool server in each route's own
	// shape: chat completions (OpenAI's) and the x402 top-up (which reads
	// a bearer itself) included.
	chat := do(t, "POST", "/api/pipelines/pl_x/chat/completions", tok.AccessToken, map[string]any{"messages": []any{}})
	if e, _ := chat.JSON(t)["error"].(map[string]any); chat.Status != http.StatusUnauthorized || !strings.Contains(e["message"].(string), "issued for the tool server") {
		t.Fatalf("chat completions: %d %s", chat.Status, chat.Body)
	}
	topUp := do(t, "POST", "/api/billing/credits/x402", tok.AccessToken, nil)
	if msg, _ := topUp.JSON(t)["error"].(string); topUp.Status != http.StatusUnauthorized || !strings.Contains(msg, "issued for the tool server") {
		t.Fatalf("top-up: %d %s", topUp.Status, topUp.Body)
	}

	// Nothing left ticked: Allow grants nothing, the client is told so.
	az = a.start()
	back = decideGranting(t, b, consentPage(t, b, az, email, password), "approve", nil)
	if back.Query().Get("error") != "access_denied" || back.Query().Get("code") != "" || back.Query().Get("iss") != env.URL {
		t.Fatalf("approving nothing: %s", back)
	}
}

// state is optional (PKCE protects the flow): a request without one, or
// with a short one, goes through; the answer carries no state, or the
// one sent.
func TestOAuthStateIsOptional(t *testing.T) {
	_, email, password := env.NewLogin(t)
	a := connect(t, env.URL, "Stateless", "pipelines:read")
	b := newBrowser(t, env.URL)
	for _, state := range []string{"", "ab"} {
		verifier := oauth2.GenerateVerifier()
		az := authorization{url: a.cfg.AuthCodeURL(state, oauth2.S256ChallengeOption(verifier), oauth2.SetAuthURLParam("resource", a.resource)), state: state, verifier: verifier}
		if u, _ := url.Parse(az.url); u.Query().Has("state") != (state != "") {
			t.Fatalf("the request: %s", az.url)
		}
		back := decide(t, b, consentPage(t, b, az, email, password), "approve")
		if back.Query().Has("state") != (state != "") {
			t.Fatalf("state %q: the answer %s", state, back)
		}
		tok := a.exchange(t, az, codeFrom(t, az, back))
		if s := bearerStatus(t, env.URL, toolRoute, tok.AccessToken); s != http.StatusOK {
			t.Fatalf("state %q: the token: %d", state, s)
		}
	}
	// A refusal without state carries none either, and names the issuer.
	back := b.do("GET", a.cfg.AuthCodeURL("", oauth2.SetAuthURLParam("resource", a.resource)), nil).location(t)
	if back.Query().Get("error") != "invalid_request" || back.Query().Has("state") || back.Query().Get("iss") != env.URL {
		t.Fatalf("refused without state: %s", back)
	}
}

// Only response_mode=query is served, as the metadata says: form_post
// (or fragment) is refused with invalid_request, in the query, never as a
// self-posting page. The resource indicator is compared after
// normalising scheme and host case and the default port.
func TestOAuthResponseModeIssAndResource(t *testing.T) {
	_, email, password := env.NewLogin(t)
	a := connect(t, env.URL, "Modes", "pipelines:read")
	b := newBrowser(t, env.URL)
	for _, mode := range []string{"form_post", "fragment", "query.jwt"} {
		p := b.do("GET", a.start(oauth2.SetAuthURLParam("response_mode", mode)).url, nil)
		back := p.location(t)
		if p.status != http.StatusSeeOther || back.Fragment != "" || back.Query().Get("error") != "invalid_request" ||
			!strings.Contains(back.Query().Get("error_description"), "response_mode") || back.Query().Get("iss") != env.URL {
			t.Errorf("response_mode=%s: %d %s %.300s", mode, p.status, back, p.body)
		}
	}
	// response_mode=query is what is served anyway.
	az := a.start(oauth2.SetAuthURLParam("response_mode", "query"))
	codeFrom(t, az, decide(t, b, consentPage(t, b, az, email, password), "approve"))

	meta := env.Do(t, "GET", "/.well-known/oauth-authorization-server", nil).JSON(t)
	if meta["authorization_response_iss_parameter_supported"] != true || strings.Join(toStrings(meta["response_modes_supported"]), ",") != "query" ||
		!slices.Equal(toStrings(meta["scopes_supported"]), oauth.ToolServerScopes()) {
		t.Fatalf("authorization server metadata: %v", meta)
	}
	prm := env.Do(t, "GET", "/.well-known/oauth-protected-resource/api/mcp", nil).JSON(t)
	if !slices.Equal(toStrings(prm["scopes_supported"]), oauth.ToolServerScopes()) {
		t.Fatalf("protected resource metadata: %v", prm)
	}

	// The resource with an upper-case scheme and host is the tool server,
	// at the authorization and the token endpoint.
	shouted := strings.ToUpper(env.URL) + "/api/mcp/"
	az = a.start(oauth2.SetAuthURLParam("resource", shouted))
	code := codeFrom(t, az, decide(t, b, consentPage(t, b, az, email, password), "approve"))
	tok, err := a.cfg.Exchange(context.Background(), code, oauth2.VerifierOption(az.verifier), oauth2.SetAuthURLParam("resource", shouted))
	if err != nil {
		t.Fatalf("exchanging with %s: %v", shouted, err)
	}
	if s := bearerStatus(t, env.URL, toolRoute, tok.AccessToken); s != http.StatusOK {
		t.Fatalf("the token: %d", s)
	}
	// Another path (case-sensitive) is another resource.
	back := b.do("GET", a.start(oauth2.SetAuthURLParam("resource", env.URL+"/API/MCP")).url, nil).location(t)
	if back.Query().Get("error") != "invalid_target" {
		t.Fatalf("another path: %s", back)
	}
}

func toStrings(v any) []string {
	var out []string
	list, _ := v.([]any)
	for _, x := range list {
		s, _ := x.(string)
		out = append(out, s)
	}
	return out
}
