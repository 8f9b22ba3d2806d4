package frontend

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"conduit/internal/errs"
	"conduit/internal/zkpassport"
)

// zkPassport's routes (docs/proofs.md): thin — the rules are in
// internal/zkpassport.

func (s *Server) zkpassport(c *gin.Context) (*zkpassport.Service, bool) {
	if s.deps.ZKPassport == nil {
		fail(c, errs.Unavailablef("zkPassport verification is not configured"))
		return nil, false
	}
	return s.deps.ZKPassport, true
}

// createZKPassportRequest: POST /api/zkpassport/request → 201
func (s *Server) createZKPassportRequest(c *gin.Context) {
	svc, ok := s.zkpassport(c)
	if !ok {
		return
	}
	var in zkpassport.CreateArgs
	if err := decodeJSON(c, &in); err != nil {
		fail(c, err)
		return
	}
	out, err := svc.Create(c.Request.Context(), principal(c).AccountID, in)
	if err != nil {
		fail(c, err)
		return
	}
	c.Header("Location", out.StatusURL)
	c.JSON(http.StatusCreated, out)
}

// verifyZKPassport: POST /api/zkpassport/verify
func (s *Server) verifyZKPassport(c *gin.Context) {
	svc, ok := s.zkpassport(c)
	if !ok {
		return
	}
	var in zkpassport.Submission
	if err := decodeJSON(c, &in); err != nil {
		fail(c, err)
		return
	}
	out, err := svc.Verify(c.Request.Context(), principal(c).AccountID, in)
	if err != nil {
		fail(c, err)
		return
	}
	c.JSON(http.StatusOK, out)
}

// zkPassportStatus: GET /api/zkpassport/verify?requestId=
func (s *Server) zkPassportStatus(c *gin.Context) {
	svc, ok := s.zkpassport(c)
	if !ok {
		return
	}
	out, err := svc.Status(c.Request.Context(), principal(c).AccountID, c.Query("requestId"))
	if err != nil {
		fail(c, err)
		return
	}
	c.JSON(http.StatusOK, out)
}

// zkPassportKeys: GET /api/zkpassport/keys, the attestation keys (public).
func (s *Server) zkPassportKeys(c *gin.Context) {
	svc, ok := s.zkpassport(c)
	if !ok {
		return
	}
	c.JSON(http.StatusOK, svc.Signer.Keys())
}
