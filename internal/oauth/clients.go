package oauth

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"net"
	"net/url"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"github.com/ory/fosite"

	"conduit/internal/apikey"
	"conduit/internal/errs"
	"conduit/internal/pgtext"
	"conduit/internal/store"
)

// client is a registered client as fosite sees it: public (no secret;
// PKCE proves the code's owner), allowed the code and refresh grants it
// registered, the scopes it registered, and the tool server's resource as
// its only audience.
type client struct {
	*fosite.DefaultClient
	Name string
}

func toClient(c store.OAuthClient, resource string) *client {
	return &client{Name: c.Name, DefaultClient: &fosite.DefaultClient{
		ID: c.ID, RedirectURIs: c.RedirectURIs, GrantTypes: c.GrantTypes, ResponseTypes: c.ResponseTypes,
		Scopes: c.Scopes, Audience: []string{resource}, Public: true,
	}}
}

// A refused registration is an Invalid error whose Code is RFC 7591
// §3.2.2's error (invalid_redirect_uri, invalid_client_metadata).

func badMetadata(format string, args ...any) error {
	return &errs.Error{Kind: errs.Invalid, Code: "invalid_client_metadata", Msg: fmt.Sprintf(format, args...)}
}

func badRedirect(format string, args ...any) error {
	return &errs.Error{Kind: errs.Invalid, Code: "invalid_redirect_uri", Msg: fmt.Sprintf(format, args...)}
}

// Limits of a registration: enough for any real client, small enough that
// an anonymous caller cannot park much in the table.
const (
	maxRedirectURIs   = 10
	maxRedirectURILen = 2000
	maxClientName     = 100
	maxRegistration   = 64 << 10
)

// registration is the part of RFC 7591 client metadata we read; anything
// else a client sends is ignored, as §2 asks.
type registration struct {
	RedirectURIs            []string `json:"redirect_uris"`
	TokenEndpointAuthMethod string   `json:"token_endpoint_auth_method"`
	GrantTypes              []string `json:"grant_types"`
	ResponseTypes           []string `json:"response_types"`
	ClientName              string   `json:"client_name"`
	Scope                   string   `json:"scope"`
}

// Register is Dynamic Client Registration (RFC 7591): it checks the
// metadata, stores a public client and answers what was registered.
//
//   - redirect_uris: 1 to 10 absolute URIs without a fragment or user
//     info: https, or http on a loopback host (RFC 8252 §7.3: a native
//     client on 127.0.0.1 or [::1] may then use any port);
//   - token_endpoint_auth_method: every client is public ("none"); a
//     client asking for a secret gets "none" back (RFC 7591 §3.2.1 lets
//     the server replace a value) and proves its codes with PKCE;
//   - grant_types: authorization_code and refresh_token (the default
//     both); response_types: code;
//   - scope: known scope names (default: the tool server's, the only
//     ones a token can usefully hold; a human still grants at most what
//     they approve and their login may);
//   - client_name: at most 100 characters, shown on the consent page.
func (p *Provider) Register(ctx context.Context, body []byte) (*oauthex.ClientRegistrationResponse, error) {
	if len(body) > maxRegistration {
		return nil, badMetadata("the registration is over %d bytes", maxRegistration)
	}
	if why := pgtext.JSONProblem(body); why != "" {
		return nil, badMetadata("the registration %s", why)
	}
	var r registration
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(&r); err != nil {
		return nil, badMetadata("the registration is not a JSON object of client metadata: %v", err)
	}
	if len(r.RedirectURIs) == 0 {
		return nil, badRedirect("redirect_uris is required")
	}
	if len(r.RedirectURIs) > maxRedirectURIs {
		return nil, badRedirect("at most %d redirect_uris", maxRedirectURIs)
	}
	for _, u := range r.RedirectURIs {
		if err := checkRedirectURI(u); err != nil {
			return nil, err
		}
	}
	grants, err := subset("grant_types", r.GrantTypes, []string{"authorization_code", "refresh_token"})
	if err != nil {
		return nil, err
	}
	if !slices.Contains(grants, "authorization_code") {
		return nil, badMetadata("grant_types must include authorization_code")
	}
	responses, err := subset("response_types", r.ResponseTypes, []string{"code"})
	if err != nil {
		return nil, err
	}
	name := strings.TrimSpace(r.ClientName)
	if utf8.RuneCountInString(name) > maxClientName {
		return nil, badMetadata("client_name must be at most %d characters", maxClientName)
	}
	scopes := ToolServerScopes()
	if strings.TrimSpace(r.Scope) != "" {
		if scopes, err = apikey.NormalizeScopes(strings.Fields(r.Scope)); err != nil {
			return nil, badMetadata("scope: %s", err)
		}
	}
	meta := oauthex.ClientRegistrationMetadata{
		RedirectURIs: r.RedirectURIs, TokenEndpointAuthMethod: "none", GrantTypes: grants, ResponseTypes: responses,
		ClientName: name, Scope: strings.Join(scopes, " "),
	}
	raw, err := json.Marshal(meta)
	if err != nil {
		return nil, err
	}
	c, err := p.store.CreateOAuthClient(ctx, store.OAuthClient{
		ID: "client_" + rand.Text(), Name: name, RedirectURIs: r.RedirectURIs, GrantTypes: grants,
		ResponseTypes: responses, Scopes: scopes, Metadata: raw,
	})
	if err != nil {
		return nil, err
	}
	return &oauthex.ClientRegistrationResponse{ClientRegistrationMetadata: meta, ClientID: c.ID, ClientIDIssuedAt: c.CreatedAt}, nil
}

// subset checks values against allowed; empty means all of allowed.
func subset(field string, values, allowed []string) ([]string, error) {
	if len(values) == 0 {
		return slices.Clone(allowed), nil
	}
	var out []string
	for _, v := range values {
		if !slices.Contains(allowed, v) {
			return nil, badMetadata("%s: %q is not supported (supported: %s)", field, v, strings.Join(allowed, ", "))
		}
		if !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	return out, nil
}

// checkRedirectURI: absolute, no fragment, no user info; https, or http
// to a loopback address or localhost.
func checkRedirectURI(raw string) error {
	if len(raw) > maxRedirectURILen || pgtext.Problem(raw) != "" {
		return badRedirect("a redirect URI must be a URI of at most %d characters", maxRedirectURILen)
	}
	u, err := url.Parse(raw)
	if err != nil || !u.IsAbs() || u.Host == "" || u.Opaque != "" {
		return badRedirect("redirect URI %q is not an absolute URI", raw)
	}
	if u.Fragment != "" || strings.Contains(raw, "#") {
		return badRedirect("redirect URI %q must not have a fragment", raw)
	}
	if u.User != nil {
		return badRedirect("redirect URI %q must not carry user information", raw)
	}
	switch u.Scheme {
	case "https":
		return nil
	case "http":
		if loopback(u.Hostname()) {
			return nil
		}
		return badRedirect("redirect URI %q must use https (http only to a loopback address such as 127.0.0.1)", raw)
	}
	return badRedirect("redirect URI %q must use https (or http to a loopback address)", raw)
}

func loopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
