package frontend

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"conduit/frontend/pages"
	"conduit/internal/errs"
	"conduit/internal/logging"
	"conduit/internal/oauth"
	"conduit/internal/x402"
)

// This file is the one place that knows HTTP's error statuses: handlers,
// middleware and domain services return *errs.Error values (or any error,
// which becomes a 500 saying nothing internal), and the kind of each picks
// its status from one table, statuses. The body's shape is the route
// family's (useShape); a 402 carrying an x402 challenge and a 403 naming a
// missing scope add their headers here too.

// errorShape says how a route group writes errors: the spec fixes a body
// shape per endpoint family.
type errorShape int

const (
	// shapePlain: {"error": "message", "code": "...", ...extra}
	// (invoke, management, balance, pay-per-call).
	shapePlain errorShape = iota
	// shapeOpenAI: {"error": {"message", "type", "code", ...extra}}
	// (chat completions).
	shapeOpenAI
	// shapeOAuth: {"error": "<code>", "error_description": "message"}
	// (RFC 6749 §5.2; the OAuth endpoints and their metadata). Code is the
	// OAuth error code when set, else one derived from the status.
	shapeOAuth
)

const shapeKey = "conduit.errorShape"

// useShape makes every error under a route group use the given body shape.
func useShape(s errorShape) gin.HandlerFunc {
	return func(c *gin.Context) { c.Set(shapeKey, s); c.Next() }
}

// fail writes err as the response and stops the handler chain. Unknown
// errors become a 500 whose body says nothing internal; the cause is logged.
func fail(c *gin.Context, err error) {
	writeError(c, toError(c, err))
}

// classifier says what kind of failure an error from below the domain is,
// or nil when it cannot tell.
type classifier func(error) *errs.Error

const classifierKey = "conduit.classifier"

// classifyWith lets toError classify the failures of the packages under
// the domain without this package importing them: the store's outages
// (PostgreSQL down or restarting) are pgx errors, which only the store
// knows how to read, so the server is handed store.Classify at wiring time
// (server.go). The store's sentinels that reach callers
// (store.ErrNotFound, store.ErrIdempotencyConflict) are errs values
// already and need no classifier.
func classifyWith(f classifier) gin.HandlerFunc {
	return func(c *gin.Context) { c.Set(classifierKey, f); c.Next() }
}

// toError is err in the domain's vocabulary.
func toError(c *gin.Context, err error) *errs.Error {
	log := logging.From(c.Request.Context())
	if e, ok := errs.As(err); ok {
		if e.Kind == errs.Internal {
			log.Error("request failed", "err", err)
		}
		return e
	}
	if v, ok := c.Get(classifierKey); ok {
		if e := v.(classifier)(err); e != nil {
			log.Warn("dependency unavailable", "err", err)
			return e
		}
	}
	log.Error("request failed", "err", err)
	return &errs.Error{Kind: errs.Internal, Msg: "internal error"}
}

// statuses is the HTTP status of each domain error kind: the one table
// that turns the domain's vocabulary into HTTP.
var statuses = map[errs.Kind]int{
	errs.Invalid:          http.StatusBadRequest,
	errs.Unauthorized:     http.StatusUnauthorized,
	errs.PaymentRequired:  http.StatusPaymentRequired,
	errs.Forbidden:        http.StatusForbidden,
	errs.NotFound:         http.StatusNotFound,
	errs.MethodNotAllowed: http.StatusMethodNotAllowed,
	errs.Timeout:          http.StatusRequestTimeout,
	errs.Conflict:         http.StatusConflict,
	errs.Gone:             http.StatusGone,
	errs.TooLarge:         http.StatusRequestEntityTooLarge,
	errs.Unsupported:      http.StatusUnsupportedMediaType,
	errs.Unprocessable:    http.StatusUnprocessableEntity,
	errs.TooManyRequests:  http.StatusTooManyRequests,
	errs.HeadersTooLarge:  http.StatusRequestHeaderFieldsTooLarge,
	errs.Internal:         http.StatusInternalServerError,
	errs.Upstream:         http.StatusBadGateway,
	errs.Unavailable:      http.StatusServiceUnavailable,
}

// statusOf is the HTTP status of a domain error's kind.
func statusOf(k errs.Kind) int {
	if st, ok := statuses[k]; ok {
		return st
	}
	return http.StatusInternalServerError
}

// challengeOf is the x402 challenge a PaymentRequired error carries.
func challengeOf(e *errs.Error) *x402.PaymentRequired {
	switch ch := e.Challenge.(type) {
	case x402.PaymentRequired:
		return &ch
	case *x402.PaymentRequired:
		return ch
	}
	return nil
}

// retryAfter sets the Retry-After header an error asks for.
func retryAfter(c *gin.Context, e *errs.Error) {
	if e.RetryAfter > 0 {
		c.Header("Retry-After", strconv.Itoa(int(e.RetryAfter.Round(time.Second)/time.Second)))
	}
}

// failPage answers a page or form (frontend/pages) that cannot go on
// with the message page: title, then err's sentence, with the status of
// err's kind, as the API would answer it.
func failPage(c *gin.Context, title string, err error) {
	e := toError(c, err)
	retryAfter(c, e)
	renderPage(c, statusOf(e.Kind), pages.Message, pages.MessageView{Title: title, Text: e.Msg})
}

// pageStatus is the status of a page that shows its form again with a
// refusal's sentence (200 when there is none).
func pageStatus(refusal *errs.Error) int {
	if refusal == nil {
		return http.StatusOK
	}
	return statusOf(refusal.Kind)
}

func writeError(c *gin.Context, e *errs.Error) {
	if c.Writer.Written() {
		// Too late to change the status (a stream has begun); the stream's
		// own writer reports the failure in band.
		c.Abort()
		return
	}
	status := statusOf(e.Kind)
	retryAfter(c, e)
	switch {
	case status == http.StatusUnauthorized:
		bearerChallenge(c, "")
	case e.Scope != "":
		bearerChallenge(c, e.Scope)
	}
	if ch := challengeOf(e); ch != nil {
		// x402 (spec §2.1): the challenge travels as the PAYMENT-REQUIRED
		// header and in the body, its error naming why payment is needed.
		ch := *ch
		ch.Error = e.Msg
		h, err := x402.EncodeHeader(ch)
		if err != nil {
			logging.From(c.Request.Context()).Error("encoding an x402 challenge failed", "err", err)
			c.AbortWithStatusJSON(http.StatusInternalServerError, gin.H{"error": "internal error"})
			return
		}
		c.Header(x402.HeaderPaymentRequired, h)
		body := gin.H{"error": e.Msg, "x402Version": ch.X402Version, "resource": ch.Resource, "accepts": ch.Accepts}
		for k, v := range e.Extra {
			body[k] = v
		}
		c.AbortWithStatusJSON(statusOf(e.Kind), body) // 402, or 401 for a sign-in refused with a fresh challenge
		return
	}
	shape, _ := c.Get(shapeKey)
	var body gin.H
	switch shape {
	case shapeOAuth:
		code := e.Code
		if code == "" {
			code = oauthCode(status)
		}
		body = gin.H{"error": code, "error_description": e.Msg}
	case shapeOpenAI:
		inner := gin.H{"message": e.Msg, "type": openAIType(status)}
		if e.Code != "" {
			inner["code"] = e.Code
		}
		for k, v := range e.Extra {
			inner[k] = v
		}
		body = gin.H{"error": inner}
	default:
		body = gin.H{"error": e.Msg}
		if e.Code != "" {
			body["code"] = e.Code
		}
		for k, v := range e.Extra {
			body[k] = v
		}
	}
	c.AbortWithStatusJSON(status, body)
}

// inBandError is an error reported inside a chat-completions stream that
// has begun (too late for a status): the last event, as OpenAI's API sends
// it.
func inBandError(e *errs.Error) gin.H {
	return gin.H{"error": gin.H{"message": e.Msg, "type": openAIType(statusOf(e.Kind))}}
}

// openAIType names the error class the way OpenAI-compatible clients
// expect: any other 4xx is the caller's request (a body over the limit, a
// body that came too slowly, …), any 5xx the server's.
func openAIType(status int) string {
	switch status {
	case http.StatusUnauthorized:
		return "authentication_error"
	case http.StatusPaymentRequired:
		return "insufficient_quota"
	case http.StatusForbidden:
		return "permission_error"
	case http.StatusTooManyRequests:
		return "rate_limit_error"
	case http.StatusBadGateway:
		return "upstream_error"
	}
	if status >= 400 && status < 500 {
		return "invalid_request_error"
	}
	return "server_error"
}

// oauthCode names an OAuth error (RFC 6749 §5.2) for a status.
func oauthCode(status int) string {
	switch {
	case status == http.StatusTooManyRequests, status == http.StatusServiceUnavailable:
		return "temporarily_unavailable"
	case status >= 500:
		return "server_error"
	}
	return "invalid_request"
}

const challengeKey = "conduit.bearerChallenge"

// challenged marks the requests whose refusals carry an OAuth challenge:
// the tool server (/api/mcp) and its HTTP mirror (/api/v1/tools). A 401
// there says, per RFC 9728 §5.1 and the MCP authorization spec, where the
// Protected Resource Metadata is (resource_metadata), with
// error="invalid_token" when a credential was sent; a scope refusal says
// error="insufficient_scope" and the scope (RFC 6750 §3.1). An assistant
// that knows only the server's URL starts its OAuth flow from there.
func (s *Server) challenged(c *gin.Context) {
	for _, prefix := range challengedPaths {
		if p := c.Request.URL.Path; p == prefix || strings.HasPrefix(p, prefix+"/") {
			var ch toolChallenge
			if s.deps.OAuth != nil {
				ch = toolChallenge{meta: s.deps.OAuth.ResourceMetadataURL(), scope: strings.Join(oauth.DefaultScopes(), " ")}
			}
			c.Set(challengeKey, ch)
			// Browser-based MCP clients (the MCP Inspector's direct mode)
			// call these routes cross-origin. They authenticate with a
			// bearer header, never cookies, so any origin may read the
			// answers; the headers a client needs are exposed.
			c.Header("Access-Control-Allow-Origin", "*")
			c.Header("Access-Control-Expose-Headers", "Mcp-Session-Id, MCP-Protocol-Version, WWW-Authenticate")
			break
		}
	}
	c.Next()
}

// toolChallenge is what a challenge on the tool server names: where its
// Protected Resource Metadata is, and the scopes it asks for on a 401 (the
// MCP authorization spec: a client asks for those, not every scope the
// authorization server knows). Both empty without OAuth.
type toolChallenge struct{ meta, scope string }

// bearerChallenge sets WWW-Authenticate on a challenged request; scope,
// when set, is the scope a 403 found missing.
func bearerChallenge(c *gin.Context, scope string) {
	v, ok := c.Get(challengeKey)
	if !ok {
		return
	}
	ch, _ := v.(toolChallenge)
	var params []string
	switch {
	case scope != "":
		params = append(params, `error="insufficient_scope"`, fmt.Sprintf("scope=%q", scope))
	case c.GetHeader("Authorization") != "":
		params = append(params, `error="invalid_token"`)
	}
	if scope == "" && ch.scope != "" {
		params = append(params, fmt.Sprintf("scope=%q", ch.scope))
	}
	if ch.meta != "" {
		params = append(params, fmt.Sprintf("resource_metadata=%q", ch.meta))
	}
	h := "Bearer"
	if len(params) > 0 {
		h += " " + strings.Join(params, ", ")
	}
	c.Header("WWW-Authenticate", h)
}
