package frontend

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"conduit/internal/apikey"
	"conduit/internal/errs"
	"conduit/internal/kyc"
)

// KYC proofs' routes (docs/proofs.md): thin — every rule is in
// internal/kyc. Submitting needs a key (proofs:write): it bounds what a
// caller creates. Reading is public, as a verifier reads a proof it was
// handed; includePrivate=true needs the owning account's key.

// mountKYC adds the routes: the submission under api (authenticated), the
// reads on edge.
func (s *Server) mountKYC(edge, api *gin.RouterGroup) {
	api.POST("/kyc/proof", requireScope(apikey.ProofsWrite), s.submitKYCProof)
	edge.GET("/api/kyc/proof/:id", s.privateNeedsKey, s.getKYCProof)
	edge.GET("/api/kyc/proof/:id/verify", s.verifyKYCProof)
}

// privateNeedsKey authenticates the caller when includePrivate=true asks
// for the private fields (401 without a key); otherwise anyone reads.
func (s *Server) privateNeedsKey(c *gin.Context) {
	if c.Query("includePrivate") == "true" {
		s.authenticate(c)
		return
	}
	c.Next()
}

func (s *Server) kycService(c *gin.Context) (*kyc.Service, bool) {
	if s.deps.KYC == nil {
		fail(c, errs.Unavailablef("KYC proofs are not available on this deployment"))
		return nil, false
	}
	return s.deps.KYC, true
}

// submitKYCProof: POST /api/kyc/proof {userId?, proof: {commitment, proof,
// publicInputs, timestamp, algorithm, vkHash?}, deviceInfo?} → 201
func (s *Server) submitKYCProof(c *gin.Context) {
	k, ok := s.kycService(c)
	if !ok {
		return
	}
	var in kyc.Submission
	if err := decodeJSON(c, &in); err != nil {
		fail(c, err)
		return
	}
	out, err := k.Submit(c.Request.Context(), principal(c).AccountID, in)
	if err != nil {
		fail(c, err)
		return
	}
	c.JSON(http.StatusCreated, out)
}

// getKYCProof: GET /api/kyc/proof/{id}?includePrivate=true
func (s *Server) getKYCProof(c *gin.Context) {
	k, ok := s.kycService(c)
	if !ok {
		return
	}
	p := principal(c)
	out, err := k.Get(c.Request.Context(), c.Param("id"), c.Query("includePrivate") == "true",
		kyc.Caller{AccountID: p.AccountID, CanRead: p.Has(apikey.ProofsRead)})
	if err != nil {
		fail(c, err)
		return
	}
	c.JSON(http.StatusOK, out)
}

// verifyKYCProof: GET /api/kyc/proof/{id}/verify
func (s *Server) verifyKYCProof(c *gin.Context) {
	k, ok := s.kycService(c)
	if !ok {
		return
	}
	out, err := k.Verify(c.Request.Context(), c.Param("id"))
	if err != nil {
		fail(c, err)
		return
	}
	c.JSON(http.StatusOK, out)
}
