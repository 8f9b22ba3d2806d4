package frontend

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"conduit/internal/redact"
)

// POST /api/redact/run (docs/redaction.md): thin — detection, policy and
// placeholders live in internal/redact.

// RedactRunPath is the one-shot redaction endpoint.
const RedactRunPath = "/api/redact/run"

// The scopes of the route: redact:run to call it, pii:read as well to
// have original values echoed (includeValues).
const (
	redactRunScope = "redact:run"
	piiReadScope   = "pii:read"
)

func (s *Server) redactRun(c *gin.Context) {
	var req redact.RunRequest
	if err := decodeJSON(c, &req); err != nil {
		fail(c, err)
		return
	}
	p := principal(c)
	out, err := redact.Run(req, redact.Caller{AccountID: p.AccountID, CanReadValues: p.Has(piiReadScope)})
	if err != nil {
		fail(c, err)
		return
	}
	c.JSON(http.StatusOK, out)
}
