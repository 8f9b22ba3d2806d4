package frontend

import (
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/gin-gonic/gin"

	"conduit/internal/errs"
)

// The connection limits (http.read_header_timeout, read_timeout,
// write_timeout, idle_timeout, max_header_bytes; docs/security.md).
//
// Reading: net/http's ReadHeaderTimeout and ReadTimeout bound the headers
// and the whole request (headers and body, from its first byte). Once a
// handler has read the body to its end, net/http lifts the read deadline
// itself (the read it keeps pending to notice a client that hangs up runs
// without one), so a long answer is not cut by ReadTimeout. A body that
// does not arrive in time is answered 408 (deadlineBody).
//
// Writing: there is no global WriteTimeout: it would cut off every answer
// that streams longer than it (chat completions, the pay-per-call
// keep-alive answers of up to 720 s, long polls with Prefer: wait=N).
// Instead each write and flush of an answer gets write_timeout to reach the
// client, set through http.ResponseController: a client that stops reading
// is cut off, while a stream that keeps writing runs as long as its
// handler does.

// httpServer is the API's http.Server with the configured limits.
func (s *Server) httpServer() *http.Server {
	h := s.deps.Config.HTTP
	return &http.Server{
		Handler:           s.router,
		ReadHeaderTimeout: h.ReadHeaderTimeout,
		ReadTimeout:       h.ReadTimeout,
		IdleTimeout:       h.IdleTimeout,
		MaxHeaderBytes:    h.MaxHeaderBytes,
		// A finished answer's write deadline must not outlive it: a kept-
		// alive connection's next request may be refused by net/http itself
		// (431, 400) before any handler sets a new one.
		ConnState: func(c net.Conn, st http.ConnState) {
			if st == http.StateIdle {
				_ = c.SetWriteDeadline(time.Time{})
			}
		},
	}
}

// connDeadlines gives each write of the answer write_timeout and maps a
// late body to 408, as described above.
func connDeadlines(readTimeout, writeTimeout time.Duration) gin.HandlerFunc {
	return func(c *gin.Context) {
		rc := http.NewResponseController(c.Writer)
		if c.Request.Body != nil && c.Request.Body != http.NoBody {
			c.Request.Body = &deadlineBody{ReadCloser: c.Request.Body, limit: readTimeout}
		}
		w := &deadlineWriter{ResponseWriter: c.Writer, rc: rc, d: writeTimeout}
		w.extend()
		c.Writer = w
		c.Next()
		// net/http flushes what is buffered after the handler returns.
		w.extend()
	}
}

// deadlineBody turns a body that did not arrive within read_timeout into
// a 408 (decodeJSON passes it on) instead of a JSON error quoting sockets.
type deadlineBody struct {
	io.ReadCloser
	limit time.Duration
}

func (b *deadlineBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if errors.Is(err, os.ErrDeadlineExceeded) {
		return n, errs.New(errs.Timeout, "the request did not arrive within %s; send the body without pauses", b.limit)
	}
	return n, err
}

// deadlineWriter gives every write and flush write_timeout to complete.
type deadlineWriter struct {
	gin.ResponseWriter
	rc *http.ResponseController
	d  time.Duration
}

func (w *deadlineWriter) extend() { _ = w.rc.SetWriteDeadline(time.Now().Add(w.d)) }

func (w *deadlineWriter) Write(b []byte) (int, error) {
	w.extend()
	return w.ResponseWriter.Write(b)
}

func (w *deadlineWriter) WriteString(s string) (int, error) {
	w.extend()
	return w.ResponseWriter.WriteString(s)
}

func (w *deadlineWriter) Flush() {
	w.extend()
	w.ResponseWriter.Flush()
}
