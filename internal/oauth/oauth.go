// Package oauth is the authorization server of the tool server (OAuth
// 2.1, built on ory/fosite) and the resource side's token check. Clients
// register themselves (RFC 7591), a signed-in human approves them on the
// consent page, and they get short-lived access tokens bound to the tool
// server (RFC 8707) with rotating refresh tokens. Tokens are opaque HMAC
// values whose signatures alone are stored (internal/store). The frontend
// mounts the endpoints and renders the pages; the rules are here.
package oauth

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"github.com/ory/fosite"
	"github.com/ory/fosite/compose"

	"conduit/internal/accounts"
	"conduit/internal/errs"
	"conduit/internal/store"
)

// The endpoints, relative to the issuer (the service's public URL).
const (
	ServerMetadataPath   = "/.well-known/oauth-authorization-server"
	ResourceMetadataPath = "/.well-known/oauth-protected-resource"
	AuthorizePath        = "/oauth/authorize"
	TokenPath            = "/oauth/token"
	RegisterPath         = "/oauth/register"
	RevokePath           = "/oauth/revoke"
	// ResourcePath is the protected resource: the tool server.
	ResourcePath = "/api/mcp"
)

// Config is what the authorization server needs.
type Config struct {
	// Issuer is the service's public base URL, without a trailing slash.
	Issuer string
	// Secret keys the tokens' HMAC (at least 32 bytes).
	Secret          []byte
	AccessTokenTTL  time.Duration
	RefreshTokenTTL time.Duration
	CodeTTL         time.Duration
}

// Provider is the authorization server and the access-token verifier.
type Provider struct {
	cfg      Config
	store    *store.Store
	f        *fosite.Fosite
	resource string
	// canonical is resource as resource indicators are compared.
	canonical string
	// now is the verifier's clock (time.Now); tests move it past a
	// token's expiry instead of sleeping.
	now func() time.Time
}

// New builds the authorization server on the store.
func New(cfg Config, st *store.Store) (*Provider, error) {
	if len(cfg.Secret) < 32 {
		return nil, errors.New("the OAuth secret must be at least 32 bytes")
	}
	cfg.Issuer = strings.TrimRight(cfg.Issuer, "/")
	p := &Provider{cfg: cfg, store: st, resource: cfg.Issuer + ResourcePath, now: time.Now}
	p.canonical, _ = canonicalResource(p.resource)
	fc := &fosite.Config{
		AccessTokenLifespan:   cfg.AccessTokenTTL,
		RefreshTokenLifespan:  cfg.RefreshTokenTTL,
		AuthorizeCodeLifespan: cfg.CodeTTL,
		GlobalSecret:          cfg.Secret,
		AccessTokenIssuer:     cfg.Issuer,
		TokenURL:              cfg.Issuer + TokenPath,
		// Scopes and audiences are compared as whole strings.
		ScopeStrategy:            fosite.ExactScopeStrategy,
		AudienceMatchingStrategy: fosite.ExactAudienceMatchingStrategy,
		// PKCE with S256 on every authorization; "plain" is refused.
		EnforcePKCE:                    true,
		EnablePKCEPlainChallengeMethod: false,
		// https redirects, or http to the loopback interface; no custom
		// schemes.
		RedirectSecureChecker: fosite.IsRedirectURISecureStrict,
		// Every grant with the refresh_token grant type gets a refresh
		// token (fosite's default wants an "offline" scope).
		RefreshTokenScopes: []string{},
		// The resource side accepts access tokens only, never a refresh
		// token presented as a bearer.
		DisableRefreshTokenValidation: true,
	}
	strategy := compose.NewOAuth2HMACStrategy(fc)
	provider := compose.Compose(fc, &storage{st: st, resource: p.resource}, strategy,
		compose.OAuth2AuthorizeExplicitFactory,
		compose.OAuth2PKCEFactory,
		compose.OAuth2RefreshTokenGrantFactory,
		compose.OAuth2TokenIntrospectionFactory,
		compose.OAuth2TokenRevocationFactory,
	)
	f, ok := provider.(*fosite.Fosite)
	if !ok {
		return nil, fmt.Errorf("fosite returned %T", provider)
	}
	p.f = f
	return p, nil
}

// Issuer is the authorization server's identifier (the public base URL).
func (p *Provider) Issuer() string { return p.cfg.Issuer }

// WithClock makes the access-token check read the time from now (tests
// advance it past a token's expiry). fosite checks expiry on the wall
// clock as well; this check is the one a moved clock can trigger early.
func (p *Provider) WithClock(now func() time.Time) *Provider {
	p.now = now
	return p
}

// Resource is the protected resource every token is bound to: the tool
// server's URL.
func (p *Provider) Resource() string { return p.resource }

// ResourceMetadataURL is where the tool server's Protected Resource
// Metadata is (RFC 9728 §3.1: the well-known prefix before the resource's
// path); 401 answers point at it.
func (p *Provider) ResourceMetadataURL() string {
	return p.cfg.Issuer + ResourceMetadataPath + ResourcePath
}

// ScopesSupported lists the scopes a token can hold: the tool server's
// (its tokens work nowhere else). Registration still takes any of the
// platform's scope names; the consent page grants none but these.
func ScopesSupported() []string { return ToolServerScopes() }

// ServerMetadata is Authorization Server Metadata (RFC 8414). Its own
// type rather than oauthex.AuthServerMeta, which would send an empty
// jwks_uri (there are no signing keys: tokens are opaque).
type ServerMetadata struct {
	Issuer                                 string   `json:"issuer"`
	AuthorizationEndpoint                  string   `json:"authorization_endpoint"`
	TokenEndpoint                          string   `json:"token_endpoint"`
	RegistrationEndpoint                   string   `json:"registration_endpoint"`
	RevocationEndpoint                     string   `json:"revocation_endpoint"`
	ScopesSupported                        []string `json:"scopes_supported"`
	ResponseTypesSupported                 []string `json:"response_types_supported"`
	ResponseModesSupported                 []string `json:"response_modes_supported"`
	GrantTypesSupported                    []string `json:"grant_types_supported"`
	TokenEndpointAuthMethodsSupported      []string `json:"token_endpoint_auth_methods_supported"`
	RevocationEndpointAuthMethodsSupported []string `json:"revocation_endpoint_auth_methods_supported"`
	CodeChallengeMethodsSupported          []string `json:"code_challenge_methods_supported"`
	// AuthorizationResponseIssParameterSupported: every redirect back to
	// the client carries iss (RFC 9207).
	AuthorizationResponseIssParameterSupported bool   `json:"authorization_response_iss_parameter_supported"`
	ServiceDocumentation                       string `json:"service_documentation,omitempty"`
}

// ServerMetadata describes this authorization server.
func (p *Provider) ServerMetadata() ServerMetadata {
	i := p.cfg.Issuer
	return ServerMetadata{
		Issuer: i, AuthorizationEndpoint: i + AuthorizePath, TokenEndpoint: i + TokenPath,
		RegistrationEndpoint: i + RegisterPath, RevocationEndpoint: i + RevokePath,
		ScopesSupported: ScopesSupported(), ResponseTypesSupported: []string{"code"}, ResponseModesSupported: []string{"query"},
		GrantTypesSupported:                        []string{"authorization_code", "refresh_token"},
		TokenEndpointAuthMethodsSupported:          []string{"none"},
		RevocationEndpointAuthMethodsSupported:     []string{"none"},
		CodeChallengeMethodsSupported:              []string{"S256"},
		AuthorizationResponseIssParameterSupported: true,
	}
}

// ResourceMetadata is the tool server's Protected Resource Metadata (RFC
// 9728): this server issues its tokens, sent in the Authorization header.
func (p *Provider) ResourceMetadata() *oauthex.ProtectedResourceMetadata {
	return &oauthex.ProtectedResourceMetadata{
		Resource: p.resource, AuthorizationServers: []string{p.cfg.Issuer},
		ScopesSupported: ScopesSupported(), BearerMethodsSupported: []string{"header"},
		ResourceName: "Conduit tool server",
	}
}

// errInvalidTarget is RFC 8707 §2's refusal of a resource this server
// does not issue tokens for.
func errInvalidTarget(resource string) error {
	return &fosite.RFC6749Error{ErrorField: "invalid_target", CodeField: http.StatusBadRequest,
		DescriptionField: fmt.Sprintf("The resource %q is not served here; tokens are issued for %s only.", resource, "the tool server")}
}

// checkResource applies RFC 8707: every resource parameter must name the
// tool server (absent means the tool server), compared as canonicalResource
// writes them.
func (p *Provider) checkResource(values []string) error {
	for _, v := range values {
		if c, ok := canonicalResource(v); !ok || c != p.canonical {
			return errInvalidTarget(v)
		}
	}
	return nil
}

// canonicalResource is a resource indicator in the form two of them are
// compared in: scheme and host in lower case (they are case-insensitive),
// no default port, no trailing slash; the path as it is (case-sensitive).
// An indicator that is not an absolute URI, or has a fragment or user
// information (RFC 8707 §2 forbids the first), is not one.
func canonicalResource(raw string) (string, bool) {
	u, err := url.Parse(raw)
	if err != nil || !u.IsAbs() || u.Host == "" || u.Opaque != "" || u.User != nil || strings.Contains(raw, "#") {
		return "", false
	}
	scheme, host, port := strings.ToLower(u.Scheme), strings.ToLower(u.Hostname()), u.Port()
	if (scheme == "https" && port == "443") || (scheme == "http" && port == "80") {
		port = ""
	}
	if port != "" {
		host = net.JoinHostPort(host, port)
	} else if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	out := scheme + "://" + host + strings.TrimSuffix(u.EscapedPath(), "/")
	if u.RawQuery != "" || u.ForceQuery {
		out += "?" + u.RawQuery
	}
	return out, true
}

type resourceKey struct{}

// AtResource marks ctx as serving a request to the protected resource
// named resource. VerifyAccessToken accepts only tokens issued for the
// resource of the request (RFC 8707), so a route that does not say so —
// anything but the tool server — takes no access token at all.
func AtResource(ctx context.Context, resource string) context.Context {
	return context.WithValue(ctx, resourceKey{}, resource)
}

// errOtherResource refuses a valid token presented away from the tool
// server.
func (p *Provider) errOtherResource() error {
	return errs.Unauthorizedf("this OAuth access token was issued for the tool server (%s) and works only there and on its HTTP mirror (%s); use an API key for this route", p.resource, "/api/v1/tools")
}

// Token is the token endpoint (RFC 6749 §3.2): codes and refresh tokens
// for access tokens, in OAuth's JSON and error format.
func (p *Provider) Token(ctx context.Context, w http.ResponseWriter, r *http.Request) {
	sess := newSession()
	// The resource is checked before fosite looks at the grant, so a
	// refused request uses up no code.
	if err := r.ParseForm(); err == nil {
		if err := p.checkResource(r.PostForm["resource"]); err != nil {
			p.f.WriteAccessError(ctx, w, fosite.NewAccessRequest(sess), err)
			return
		}
	}
	ar, err := p.f.NewAccessRequest(ctx, r, sess)
	if err != nil {
		p.f.WriteAccessError(ctx, w, ar, err)
		return
	}
	resp, err := p.f.NewAccessResponse(ctx, ar)
	if err != nil {
		p.f.WriteAccessError(ctx, w, ar, err)
		return
	}
	p.f.WriteAccessResponse(ctx, w, ar, resp)
}

// Revoke is token revocation (RFC 7009): a client revokes its access or
// refresh token, and with it the whole grant. An unknown token is a 200.
func (p *Provider) Revoke(ctx context.Context, w http.ResponseWriter, r *http.Request) {
	p.f.WriteRevocationResponse(ctx, w, p.f.NewRevocationRequest(ctx, r))
}

// VerifyAccessToken is the resource side (accounts.TokenVerifier): a
// valid, unexpired, unrevoked access token whose audience is the tool
// server, presented at the tool server (AtResource), is its account,
// holding the token's scopes. Presented elsewhere it is an Unauthorized
// error saying so; anything else is accounts.ErrUnauthenticated; a
// database outage is returned as it is.
func (p *Provider) VerifyAccessToken(ctx context.Context, token string) (accounts.Principal, error) {
	if len(token) > 512 || !strings.HasPrefix(token, "ory_at_") {
		return accounts.Principal{}, accounts.ErrUnauthenticated
	}
	sess := newSession()
	use, ar, err := p.f.IntrospectToken(ctx, token, fosite.AccessToken, sess)
	if err != nil {
		if store.Unavailable(err) {
			return accounts.Principal{}, err
		}
		return accounts.Principal{}, accounts.ErrUnauthenticated
	}
	if use != fosite.AccessToken || !slices.Contains(ar.GetGrantedAudience(), p.resource) || sess.Subject == "" {
		return accounts.Principal{}, accounts.ErrUnauthenticated
	}
	if exp := sess.GetExpiresAt(fosite.AccessToken); !exp.IsZero() && !p.now().Before(exp) {
		return accounts.Principal{}, accounts.ErrUnauthenticated
	}
	// Valid, and for the tool server: refused unless that is where it was
	// presented (told apart from an invalid token, so the caller knows
	// which credential to use instead).
	if target, _ := ctx.Value(resourceKey{}).(string); target == "" {
		return accounts.Principal{}, p.errOtherResource()
	} else if c, ok := canonicalResource(target); !ok || c != p.canonical {
		return accounts.Principal{}, p.errOtherResource()
	}
	login, _ := sess.Extra["login"].(string)
	scopes := slices.Clone([]string(ar.GetGrantedScopes()))
	slices.Sort(scopes)
	return accounts.Principal{AccountID: sess.Subject, Scopes: scopes, OAuth: &accounts.OAuthGrant{
		ClientID: ar.GetClient().GetID(), GrantID: ar.GetID(), LoginID: login, Expires: sess.GetExpiresAt(fosite.AccessToken),
	}}, nil
}
