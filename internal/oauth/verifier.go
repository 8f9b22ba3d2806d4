package oauth

import (
	"context"
	"net/http"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"

	"conduit/internal/accounts"
	"conduit/internal/errs"
)

// TokenInfo describes a caller the way the Go MCP SDK's transports
// expect: the account is the user (the SDK refuses a session used by
// another user), with the caller's scopes. An API key has no expiry of
// its own; it gets a minute, re-checked on every request. Extra carries
// the Principal under "principal".
func TokenInfo(p accounts.Principal) *auth.TokenInfo {
	exp := time.Now().Add(time.Minute)
	if p.OAuth != nil {
		exp = p.OAuth.Expires
	}
	return &auth.TokenInfo{Scopes: p.Scopes, Expiration: exp, UserID: p.AccountID, Extra: map[string]any{"principal": p}}
}

// BearerVerifier adapts the service's bearer check (API keys and OAuth
// access tokens alike) to the SDK's auth.TokenVerifier, for a handler
// wrapped in auth.RequireBearerToken that serves the protected resource
// named resource (an access token is accepted only for it).
func BearerVerifier(a *accounts.Service, resource string) auth.TokenVerifier {
	return func(ctx context.Context, token string, _ *http.Request) (*auth.TokenInfo, error) {
		p, err := a.Authenticate(AtResource(ctx, resource), "Bearer "+token)
		if errs.Is(err, errs.Unauthorized) {
			return nil, auth.ErrInvalidToken
		}
		if err != nil {
			return nil, err
		}
		return TokenInfo(p), nil
	}
}
