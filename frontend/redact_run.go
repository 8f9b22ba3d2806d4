package frontend

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"conduit/internal/apikey"
	"conduit/internal/errs"
	"conduit/internal/redact"
)

// POST /api/redact/run (docs/redaction.md): thin — detection, policy and
// placeholders live in internal/redact, the audit entry every call writes
// in internal/redactlog.

// RedactRunPath is the one-shot redaction endpoint.
const RedactRunPath = "/api/redact/run"

func (s *Server) redactRun(c *gin.Context) {
	var req redact.RunRequest
	if err := decodeJSON(c, &req); err != nil {
		fail(c, err)
		return
	}
	if s.deps.Redaction == nil || s.deps.Redaction.Log == nil {
		fail(c, errs.Unavailablef("the redaction audit log is not configured on this deployment"))
		return
	}
	p := principal(c)
	out, err := s.deps.Redaction.Log.Run(c.Request.Context(), req,
		redact.Caller{AccountID: p.AccountID, CanReadValues: p.Has(apikey.PIIRead)}, p.KeyID)
	if err != nil {
		fail(c, err)
		return
	}
	c.JSON(http.StatusOK, out)
}
