package oauth

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"slices"

	"github.com/ory/fosite"

	"conduit/internal/accounts"
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
// its redirect URI, the response type and mode (code, in the query), the
// scopes (each one the client registered), PKCE with S256 (plain is
// refused: OAuth 2.1) and the resource (RFC 8707: absent, or the tool
// server). It runs before any human is involved, so a bad request is
// refused at once. On an error the Request is still what WriteError needs.
func (p *Provider) ParseAuthorize(ctx context.Context, r *http.Request) (*Request, error) {
	// Only response_mode=query is served (and advertised). fosite would
	// answer a form_post request, its errors too, with a page that posts
	// itself to the client; the parameter is taken out before fosite
	// reads the form and refused after, so the refusal goes back in the
	// query like any other.
	mode := ""
	if r.ParseForm() == nil {
		mode = r.Form.Get("response_mode")
		r.Form.Del("response_mode")
	}
	ar, err := p.f.NewAuthorizeRequest(ctx, r)
	// state is optional (OAuth 2.1 with PKCE, which is enforced below; the
	// TypeScript MCP SDK sends none unless its provider makes one). fosite
	// demands 8 characters of it whatever its config says (0 means its
	// default), as the last check of a request it has otherwise parsed
	// whole; that one refusal is overruled.
	if errors.Is(err, fosite.ErrInvalidState) {
		err = nil
	}
	req := &Request{ar: ar}
	if err != nil {
		return req, err
	}
	if mode != "" && mode != string(fosite.ResponseModeQuery) {
		return req, fosite.ErrInvalidRequest.WithHintf("response_mode %q is not supported; the answer comes in the redirect's query (response_mode=query).", mode)
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
// none — the tool server's default scopes that the client registered.
func wanted(requested, clientScopes []string) []string {
	if len(requested) > 0 {
		return slices.Compact(slices.Sorted(slices.Values(requested)))
	}
	var out []string
	for _, s := range DefaultScopes() {
		if slices.Contains(clientScopes, s) {
			out = append(out, s)
		}
	}
	return out
}

// Grantable splits the request's scopes by what the human by may grant:
// at most what their login holds (the keys' rule,
// accounts.Principal.Lacking), and only scopes the tool server uses (a
// token works nowhere else). Asking for more is not an error; the rest is
// simply not granted, and the consent page says so: lacking are the tool
// server scopes the login does not hold, unused the scopes the tool
// server has no use for.
func (req *Request) Grantable(by accounts.Principal) (grant, lacking, unused []string) {
	for _, s := range req.Scopes {
		if !slices.Contains(ToolServerScopes(), s) {
			unused = append(unused, s)
		}
	}
	lacking = by.Lacking(without(req.Scopes, unused))
	grant = without(without(req.Scopes, unused), lacking)
	return grant, lacking, unused
}

// Ticked says whether the consent page ticks a grantable scope at first:
// the tool server's default scopes are; anything else the human ticks.
func Ticked(scope string) bool { return slices.Contains(DefaultScopes(), scope) }

// without is a minus b, in a's order.
func without(a, b []string) []string {
	var out []string
	for _, s := range a {
		if !slices.Contains(b, s) {
			out = append(out, s)
		}
	}
	return out
}

// WriteError answers a refused authorization request as RFC 6749 §4.1.2.1
// says: back to the client's redirect URI with error (and state) when the
// client and its redirect URI are known, else as a JSON error here.
func (p *Provider) WriteError(ctx context.Context, w http.ResponseWriter, req *Request, err error) {
	p.f.WriteAuthorizeError(ctx, p.toClient(w), req.ar, err)
}

// Deny sends the human's refusal back to the client: error=access_denied.
func (p *Provider) Deny(ctx context.Context, w http.ResponseWriter, req *Request) {
	p.WriteError(ctx, w, req, fosite.ErrAccessDenied.WithHint("The user denied the request."))
}

// Approve issues the authorization code for the human by (signed in with
// login) and redirects to the client with it: the token will be bound to
// the tool server and hold the scopes the human approved (the boxes they
// left ticked) among those by may grant. When that leaves none, the
// client gets access_denied.
func (p *Provider) Approve(ctx context.Context, w http.ResponseWriter, req *Request, by accounts.Principal, login string, approved []string) {
	grantable, _, _ := req.Grantable(by)
	var grant []string
	for _, s := range grantable {
		if slices.Contains(approved, s) {
			grant = append(grant, s)
		}
	}
	if len(grant) == 0 {
		hint := "This login cannot grant any of the requested scopes."
		if len(grantable) > 0 {
			hint = "The user approved none of the requested scopes."
		}
		p.WriteError(ctx, w, req, fosite.ErrAccessDenied.WithHint(hint))
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
	p.f.WriteAuthorizeResponse(ctx, p.toClient(w), req.ar, resp)
}

// toClient wraps the writer of an answer that may redirect to the client:
// the redirect names the issuer (RFC 9207 iss, so a client talking to
// several servers knows which one answered) and leaves out a state the
// client did not send (fosite writes an empty one).
func (p *Provider) toClient(w http.ResponseWriter) http.ResponseWriter {
	return &redirectWriter{ResponseWriter: w, iss: p.cfg.Issuer}
}

type redirectWriter struct {
	http.ResponseWriter
	iss string
}

func (w *redirectWriter) WriteHeader(code int) {
	if loc := w.Header().Get("Location"); loc != "" && code >= 300 && code < 400 {
		if u, err := url.Parse(loc); err == nil {
			q := u.Query()
			if q.Get("state") == "" {
				q.Del("state")
			}
			q.Set("iss", w.iss)
			u.RawQuery = q.Encode()
			w.Header().Set("Location", u.String())
		}
	}
	w.ResponseWriter.WriteHeader(code)
}
