package frontend

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"conduit/internal/accounts"
	"conduit/internal/errs"
	"conduit/internal/logging"
	"conduit/internal/store"
	"conduit/internal/x402"
)

// APIError is an error with its HTTP status and the fields the spec puts in
// the body. Handlers return these (or domain errors that fail() maps); this
// file is the one place that turns errors into responses.
type APIError struct {
	Status  int
	Message string
	// Code is the spec's machine-readable code (INSUFFICIENT_CREDITS, …).
	Code string
	// Extra fields that sit beside error/code in the body (balanceUsd, …).
	Extra map[string]any
	// RetryAfter, when set, is sent as the Retry-After header (seconds).
	RetryAfter time.Duration
	// Challenge is the x402 challenge of a 402 (errs.Error.Challenge).
	Challenge *x402.PaymentRequired
	// Scope is the missing scope of a 403 (errs.Error.Scope).
	Scope string
}

// unavailableRetry is what a 503 for a database outage asks callers to
// wait before trying again.
const unavailableRetry = 5 * time.Second

func (e *APIError) Error() string { return e.Message }

// errorf builds an APIError with a formatted message.
func errorf(status int, format string, args ...any) *APIError {
	return &APIError{Status: status, Message: fmt.Sprintf(format, args...)}
}

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
	writeError(c, toAPIError(c, err))
}

// toAPIError maps domain errors to their status and message.
func toAPIError(c *gin.Context, err error) *APIError {
	var apiErr *APIError
	var inputErr *accounts.InputError
	var grantErr *accounts.GrantError
	var domainErr *errs.Error
	switch {
	case errors.As(err, &apiErr):
		return apiErr
	case errors.As(err, &domainErr):
		e := &APIError{Status: statusOf(domainErr.Kind), Message: domainErr.Msg, Code: domainErr.Code, Extra: domainErr.Extra,
			RetryAfter: domainErr.RetryAfter, Scope: domainErr.Scope}
		switch ch := domainErr.Challenge.(type) {
		case x402.PaymentRequired:
			e.Challenge = &ch
		case *x402.PaymentRequired:
			e.Challenge = ch
		}
		if domainErr.Kind == errs.Internal {
			logging.From(c.Request.Context()).Error("request failed", "err", err)
		}
		return e
	case errors.As(err, &inputErr):
		return &APIError{Status: http.StatusBadRequest, Message: inputErr.Msg}
	case errors.As(err, &grantErr):
		return &APIError{Status: http.StatusForbidden, Message: grantErr.Msg, Extra: map[string]any{"missingPermissions": grantErr.Missing}}
	case errors.Is(err, accounts.ErrNoCredentials), errors.Is(err, accounts.ErrUnauthenticated):
		return &APIError{Status: http.StatusUnauthorized, Message: authMessage(err)}
	case errors.Is(err, store.ErrNotFound):
		return &APIError{Status: http.StatusNotFound, Message: "not found"}
	case errors.Is(err, store.ErrIdempotencyConflict):
		return &APIError{Status: http.StatusConflict, Message: err.Error()}
	case store.Unavailable(err):
		// PostgreSQL is down or restarting: nothing the caller sent is
		// wrong, and the same call works once it is back.
		logging.From(c.Request.Context()).Warn("database unavailable", "err", err)
		return &APIError{Status: http.StatusServiceUnavailable, RetryAfter: unavailableRetry,
			Message: "the service is temporarily unavailable (its database cannot be reached); try again shortly"}
	default:
		logging.From(c.Request.Context()).Error("request failed", "err", err)
		return &APIError{Status: http.StatusInternalServerError, Message: "internal error"}
	}
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

// authMessage: the spec's wording for a bad bearer.
func authMessage(err error) string {
	if errors.Is(err, accounts.ErrNoCredentials) {
		return err.Error()
	}
	return "Invalid or expired credentials"
}

func writeError(c *gin.Context, e *APIError) {
	if c.Writer.Written() {
		// Too late to change the status (a stream has begun); the stream's
		// own writer reports the failure in band.
		c.Abort()
		return
	}
	if e.RetryAfter > 0 {
		c.Header("Retry-After", strconv.Itoa(int(e.RetryAfter.Round(time.Second)/time.Second)))
	}
	switch {
	case e.Status == http.StatusUnauthorized:
		bearerChallenge(c, "")
	case e.Scope != "":
		bearerChallenge(c, e.Scope)
	}
	if e.Challenge != nil {
		// x402 (spec §2.1): the challenge travels as the PAYMENT-REQUIRED
		// header and in the body, its error naming why payment is needed.
		ch := *e.Challenge
		ch.Error = e.Message
		h, err := x402.EncodeHeader(ch)
		if err != nil {
			logging.From(c.Request.Context()).Error("encoding an x402 challenge failed", "err", err)
			c.AbortWithStatusJSON(http.StatusInternalServerError, gin.H{"error": "internal error"})
			return
		}
		c.Header(x402.HeaderPaymentRequired, h)
		body := gin.H{"error": e.Message, "x402Version": ch.X402Version, "resource": ch.Resource, "accepts": ch.Accepts}
		for k, v := range e.Extra {
			body[k] = v
		}
		c.AbortWithStatusJSON(e.Status, body) // 402, or 401 for a sign-in refused with a fresh challenge
		return
	}
	shape, _ := c.Get(shapeKey)
	var body gin.H
	switch shape {
	case shapeOAuth:
		code := e.Code
		if code == "" {
			code = oauthCode(e.Status)
		}
		body = gin.H{"error": code, "error_description": e.Message}
	case shapeOpenAI:
		inner := gin.H{"message": e.Message, "type": openAIType(e.Status)}
		if e.Code != "" {
			inner["code"] = e.Code
		}
		for k, v := range e.Extra {
			inner[k] = v
		}
		body = gin.H{"error": inner}
	default:
		body = gin.H{"error": e.Message}
		if e.Code != "" {
			body["code"] = e.Code
		}
		for k, v := range e.Extra {
			body[k] = v
		}
	}
	c.AbortWithStatusJSON(e.Status, body)
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
			meta := ""
			if s.deps.OAuth != nil {
				meta = s.deps.OAuth.ResourceMetadataURL()
			}
			c.Set(challengeKey, meta)
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

// bearerChallenge sets WWW-Authenticate on a challenged request; scope,
// when set, is the scope a 403 found missing.
func bearerChallenge(c *gin.Context, scope string) {
	v, ok := c.Get(challengeKey)
	if !ok {
		return
	}
	var params []string
	switch {
	case scope != "":
		params = append(params, `error="insufficient_scope"`, fmt.Sprintf("scope=%q", scope))
	case c.GetHeader("Authorization") != "":
		params = append(params, `error="invalid_token"`)
	}
	if meta, _ := v.(string); meta != "" {
		params = append(params, fmt.Sprintf("resource_metadata=%q", meta))
	}
	h := "Bearer"
	if len(params) > 0 {
		h += " " + strings.Join(params, ", ")
	}
	c.Header("WWW-Authenticate", h)
}
