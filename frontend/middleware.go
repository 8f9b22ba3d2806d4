package frontend

import (
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"net/http"
	"regexp"
	"runtime/debug"
	"time"

	"github.com/gin-gonic/gin"

	"conduit/internal/errs"
	"conduit/internal/logging"
	"conduit/internal/telemetry"
)

// RequestIDHeader carries the request id in both directions.
const RequestIDHeader = "X-Request-Id"

var validRequestID = regexp.MustCompile(`^[A-Za-z0-9._-]{1,64}$`)

// requestContext gives every request an id (the caller's, when sane) and a
// logger that carries it and the request's trace id, and writes one access-log line when it ends. The
// query string is never logged: claim tickets travel there.
func requestContext(base *slog.Logger) gin.HandlerFunc {
	return func(c *gin.Context) {
		start := time.Now()
		id := c.GetHeader(RequestIDHeader)
		if !validRequestID.MatchString(id) {
			id = newRequestID()
		}
		c.Header(RequestIDHeader, id)
		log := base.With("request_id", id, "trace_id", telemetry.TraceID(c.Request.Context()))
		c.Request = c.Request.WithContext(logging.With(c.Request.Context(), log))

		c.Next()

		level := slog.LevelInfo
		if c.Writer.Status() >= 500 {
			level = slog.LevelError
		}
		log.Log(c.Request.Context(), level, "http request",
			"method", c.Request.Method,
			"path", c.Request.URL.Path,
			"route", c.FullPath(),
			"status", c.Writer.Status(),
			"bytes", c.Writer.Size(),
			"duration_ms", time.Since(start).Milliseconds(),
			"client_ip", c.ClientIP(),
		)
	}
}

// recovery turns a panic into the spec's 500 body for the route's family.
func recovery() gin.HandlerFunc {
	return func(c *gin.Context) {
		defer func() {
			if r := recover(); r != nil {
				if r == http.ErrAbortHandler {
					panic(r)
				}
				logging.From(c.Request.Context()).Error("panic in handler", "panic", r, "stack", string(debug.Stack()))
				writeError(c, &errs.Error{Kind: errs.Internal, Msg: "internal error"})
			}
		}()
		c.Next()
	}
}

func newRequestID() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
