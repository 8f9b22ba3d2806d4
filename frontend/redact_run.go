package frontend

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"conduit/internal/apikey"
	"conduit/internal/redact"
)

// POST /api/redact/run (docs/redaction.md): thin — detection, policy and
// placeholders live in internal/redact.

// RedactRunPath is the one-shot redaction endpoint.
const RedactRunPath = "/api/redact/run"

func (s *Server) redactRun(c *gin.Context) {
	var req redact.RunRequest
	if err := decodeJSON(c, &req); err != nil {
		fail(c, err)
		return
	}
	p := principal(c)
	out, err := redact.Run(req, redact.Caller{AccountID: p.AccountID, CanReadValues: p.Has(apikey.PIIRead)})
	if err != nil {
		fail(c, err)
		return
	}
	c.JSON(http.StatusOK, out)
}
