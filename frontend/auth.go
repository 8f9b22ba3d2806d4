package frontend

import (
	"strings"

	"github.com/gin-gonic/gin"

	"conduit/internal/accounts"
	"conduit/internal/errs"
	"conduit/internal/logging"
	"conduit/internal/oauth"
)

const principalKey = "conduit.principal"

// The paths whose refusals carry OAuth challenges (errors.go): the tool
// server and its HTTP mirror, whose routes are mounted elsewhere.
var challengedPaths = []string{oauth.ResourcePath, "/api/v1/tools"}

// authenticate resolves the bearer key; every route behind it has a caller.
// Without an Authorization header, the dashboard's session cookie is a
// credential too (session.go), except on the routes that only bearers
// reach (cookieAllowed).
func (s *Server) authenticate(c *gin.Context) {
	if c.GetHeader("Authorization") == "" && s.deps.Humans != nil && cookieAllowed(c) {
		ok, stop := s.sessionPrincipal(c)
		if stop {
			return
		}
		if ok {
			c.Next()
			return
		}
	}
	// An OAuth access token is good only at the resource it was issued for
	// (RFC 8707): the tool server and its mirror say that is where the
	// request is; everywhere else a token is refused, saying why.
	ctx := c.Request.Context()
	if s.deps.OAuth != nil && onToolServer(c.Request.URL.Path) {
		ctx = oauth.AtResource(ctx, s.deps.OAuth.Resource())
	}
	p, err := s.deps.Accounts.Authenticate(ctx, c.GetHeader("Authorization"))
	if err != nil {
		fail(c, err)
		return
	}
	c.Set(principalKey, p)
	log := logging.From(c.Request.Context()).With("account_id", p.AccountID, "key_id", p.KeyID)
	if p.OAuth != nil {
		log = log.With("oauth_client", p.OAuth.ClientID)
	}
	c.Request = c.Request.WithContext(logging.With(c.Request.Context(), log))
	c.Next()
}

// requireScope admits only keys holding scope (403 otherwise).
func requireScope(scope string) gin.HandlerFunc {
	return func(c *gin.Context) {
		if p := principal(c); !p.Has(scope) {
			what := "API key"
			if p.ViaOAuth() {
				what = "access token"
			}
			// Scope: the tool server's challenge names the missing scope.
			e := errs.Forbiddenf("this %s lacks the %s permission", what, scope)
			e.Scope = scope
			writeError(c, e)
			return
		}
		c.Next()
	}
}

func principal(c *gin.Context) accounts.Principal {
	p, _ := c.Get(principalKey)
	pr, _ := p.(accounts.Principal)
	return pr
}

// cookieAllowed: the session cookie authenticates the public API's
// account, key, pipeline, run, media, enclave and billing routes, never
// the tool server and its mirror (OAuth access tokens and keys only: they
// answer any origin) nor chat completions, pipeline or redacting (an
// OpenAI-compatible client's routes). Pay-per-call and x402 top-up routes do not authenticate here.
func cookieAllowed(c *gin.Context) bool {
	return !onToolServer(c.Request.URL.Path) && c.FullPath() != ChatPath && c.FullPath() != RedactChatPath
}

// onToolServer: path is the tool server's or its mirror's.
func onToolServer(path string) bool {
	for _, prefix := range challengedPaths {
		if path == prefix || strings.HasPrefix(path, prefix+"/") {
			return true
		}
	}
	return false
}

// bearerToken is the credential of an Authorization header in the Bearer
// scheme, whose name is case-insensitive (RFC 7235 §2.1: "bearer" and
// "BEARER" are Bearer too), as accounts.Service.Authenticate reads it.
// Every bearer check of this package reads the header through here or
// through Authenticate.
func bearerToken(header string) (string, bool) {
	scheme, token, ok := strings.Cut(strings.TrimSpace(header), " ")
	token = strings.TrimSpace(token)
	if !ok || !strings.EqualFold(scheme, "Bearer") || token == "" {
		return "", false
	}
	return token, true
}
