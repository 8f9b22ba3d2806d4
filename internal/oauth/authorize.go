package oauth

import (
	"context"
	"net/http"
	"net/url"
	"slices"

	"github.com/ory/fosite"

	"conduit/internal/accounts"
	"conduit/internal/apikey"
)

// Request is an authorization request (RFC 6749 §4.1.1) that passed every
// check a client can fail, waiting for a signed-in human to approve or
// deny it on the consent page.
type Request struct {
	ar     fosite.AuthorizeRequester
	client *client
	// ClientID and ClientName identify the client; the name is what it
	// registered (unverified: the redirect host is what is certain).
	ClientID   string
	ClientName string
	// RedirectHost is where the answer goes: the host of the redirect URI.
	RedirectHost string
	// Scopes are the scopes asked for (the client's share of the default
	// scopes when it named none), sorted.
	Scopes []string
	// Params are the request's protocol parameters, for the consent form
	// to carry to the decision.
	Params url.Values
}

// The parameters a consent form carries through: the request itself,
// nothing else a client sent.
var protocolParams = []string{"response_type", "client_id", "redirect_uri", "scope", "state", "code_challenge", "code_challenge_method", "resource"}

// ParseAuthorize reads and checks an authorization request: the client,
// its redirect URI, the response type, the scopes (each one the client
// registered), PKCE with S256 (plain is refused: OAuth 2.1) and the
// resource (RFC 8707: absent, or the tool server). It runs before any
// human is involved, so a bad request is refused at once. On an error the
// Request is still what WriteError needs.
func (p *Provider) ParseAuthorize(ctx context.Context, r *http.Request) (*Request, error) {
	ar, err := p.f.NewAuthorizeRequest(ctx, r)
	req := &Request{ar: ar}
	if err != nil {
		return req, err
	}
	form := ar.GetRequestForm()
	// fosite checks PKCE only when it issues the code, after the human
	// consented; asking first saves them a pointless approval.
	switch form.Get("code_challenge_method") {
	case "S256":
	case "", "plain":
		return req, fosite.ErrInvalidRequest.WithHint("Clients must use PKCE with code_challenge_method=S256; plain is not allowed.")
	default:
		return req, fosite.ErrInvalidRequest.WithHint("The code_challenge_method is not supported, use S256 instead.")
	}
	if form.Get("code_challenge") == "" {
		return req, fosite.ErrInvalidRequest.WithHint("Clients must include a code_challenge (PKCE, S256).")
	}
	if err := p.checkResource(form["resource"]); err != nil {
		return req, err
	}
	c, ok := ar.GetClient().(*client)
	if !ok {
		return req, fosite.ErrInvalidClient
	}
	req.client, req.ClientID, req.ClientName = c, c.ID, c.Name
	req.RedirectHost = ar.GetRedirectURI().Host
	req.Scopes = slices.Sorted(slices.Values(wanted(ar.GetRequestedScopes(), c.Scopes)))
	req.Params = url.Values{}
	for _, k := range protocolParams {
		if v, ok := form[k]; ok {
			req.Params[k] = v
		}
	}
	return req, nil
}

// wanted is what a request asks for: the scopes it names, or — naming
// none — the default scopes of a new API key that the client registered.
func wanted(requested, clientScopes []string) []string {
	if len(requested) > 0 {
		return slices.Compact(slices.Sorted(slices.Values(requested)))
	}
	var out []string
	for _, s := range apikey.DefaultScopes() {
		if slices.Contains(clientScopes, s) {
			out = append(out, s)
		}
	}
	return out
}

// Grantable splits the request's scopes by what the human by may grant:
// at most what their login holds (the keys' rule,
// accounts.Principal.Lacking). Asking for more is not an error; the rest
// is simply not granted, and the consent page says so.
func (req *Request) Grantable(by accounts.Principal) (grant, lacking []string) {
	lacking = by.Lacking(req.Scopes)
	for _, s := range req.Scopes {
		if !slices.Contains(lacking, s) {
			grant = append(grant, s)
		}
	}
	return grant, lacking
}

// WriteError answers a refused authorization request as RFC 6749 §4.1.2.1
// says: back to the client's redirect URI with error (and state) when the
// client and its redirect URI are known, else as a JSON error here.
func (p *Provider) WriteError(ctx context.Context, w http.ResponseWriter, req *Request, err error) {
	p.f.WriteAuthorizeError(ctx, w, req.ar, err)
}

// Deny sends the human's refusal back to the client: error=access_denied.
func (p *Provider) Deny(ctx context.Context, w http.ResponseWriter, req *Request) {
	p.WriteError(ctx, w, req, fosite.ErrAccessDenied.WithHint("The user denied the request."))
}

// Approve issues the authorization code for the human by (signed in with
// login) and redirects to the client with it: the token will be bound to
// the tool server and hold the scopes asked for that by may grant. When
// it may grant none of them, the client gets access_denied.
func (p *Provider) Approve(ctx context.Context, w http.ResponseWriter, req *Request, by accounts.Principal, login string) {
	grant, _ := req.Grantable(by)
	if len(grant) == 0 {
		p.WriteError(ctx, w, req, fosite.ErrAccessDenied.WithHint("This login cannot grant any of the requested scopes."))
		return
	}
	for _, s := range grant {
		req.ar.GrantScope(s)
	}
	req.ar.GrantAudience(p.resource)
	sess := newSession()
	sess.Subject = by.AccountID
	sess.Extra["login"] = login
	resp, err := p.f.NewAuthorizeResponse(ctx, req.ar, sess)
	if err != nil {
		p.WriteError(ctx, w, req, err)
		return
	}
	p.f.WriteAuthorizeResponse(ctx, w, req.ar, resp)
}
