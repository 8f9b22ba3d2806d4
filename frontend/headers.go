package frontend

import (
	"strings"

	"github.com/gin-gonic/gin"
)

// apiPolicy is the Content-Security-Policy of every answer but files.
const apiPolicy = "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'"

// securityHeaders sets what a JSON API answers with on every response,
// before the handler runs, so a handler that knows better sets its own
// (an HTML page its Content-Security-Policy, a stream or a file its
// Cache-Control):
//
//   - X-Content-Type-Options: nosniff — a browser never guesses a type, so
//     JSON or a stored file is never run as HTML or script;
//   - Content-Security-Policy: default-src 'none'; style-src
//     'unsafe-inline'; frame-ancestors 'none' — an answer opened as a page
//     may load and run nothing, nor be framed; inline styles are allowed so
//     a server-rendered page without script (the dashboard) still looks
//     right, and they can fetch nothing either. Files get only
//     frame-ancestors 'none', so a browser still plays a clip opened
//     directly;
//   - X-Frame-Options: DENY — the same for browsers without CSP 2;
//   - Referrer-Policy: no-referrer — URLs carrying claim tickets or signed
//     file links never leak to another site through Referer;
//   - Cache-Control: no-store — keys, balances, run records and claim
//     tickets are never kept by a shared or browser cache;
//   - Strict-Transport-Security (a year) when the public URL is https.
func securityHeaders(publicURL string) gin.HandlerFunc {
	hsts := strings.HasPrefix(publicURL, "https://")
	return func(c *gin.Context) {
		h := c.Writer.Header()
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("Cache-Control", "no-store")
		if strings.HasPrefix(c.Request.URL.Path, FilesPath) {
			h.Set("Content-Security-Policy", "frame-ancestors 'none'")
		} else {
			h.Set("Content-Security-Policy", apiPolicy)
		}
		if hsts {
			h.Set("Strict-Transport-Security", "max-age=31536000")
		}
		c.Next()
	}
}
