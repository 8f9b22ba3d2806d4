package frontend

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"conduit/internal/apikey"
	"conduit/internal/errs"
	"conduit/internal/zkverify"
)

// The zkVerify relay's routes (docs/proofs.md): thin — every rule is in
// internal/zkverify.

// mountZKVerify adds the relay's routes under api (authenticated).
func (s *Server) mountZKVerify(api *gin.RouterGroup) {
	zk := api.Group("/zkverify")
	zk.POST("/register-vk", requireScope(apikey.ProofsWrite), s.registerVK)
	zk.POST("/submit-proof", requireScope(apikey.ProofsWrite), s.submitProof)
	zk.GET("/job-status/:jobId", requireScope(apikey.ProofsRead), s.zkJobStatus)
}

// zkService is the relay, or the refusal of a deployment without it.
func (s *Server) zkService(c *gin.Context) (*zkverify.Service, bool) {
	if s.deps.ZKVerify == nil {
		fail(c, errs.Unavailablef("the zkVerify relay is not available on this deployment"))
		return nil, false
	}
	return s.deps.ZKVerify, true
}

// registerVK: POST /api/zkverify/register-vk {proofType?, proofOptions?, vk}
func (s *Server) registerVK(c *gin.Context) {
	zk, ok := s.zkService(c)
	if !ok {
		return
	}
	var in zkverify.RegisterVK
	if err := decodeJSON(c, &in); err != nil {
		fail(c, err)
		return
	}
	out, err := zk.RegisterVK(c.Request.Context(), principal(c).AccountID, in)
	if err != nil {
		fail(c, err)
		return
	}
	c.JSON(http.StatusOK, out)
}

// submitProof: POST /api/zkverify/submit-proof {proofType?, chainId?,
// verifyOnly?, proof, publicSignals, vk} → {jobId, optimisticVerify}
func (s *Server) submitProof(c *gin.Context) {
	zk, ok := s.zkService(c)
	if !ok {
		return
	}
	var in zkverify.Submit
	if err := decodeJSON(c, &in); err != nil {
		fail(c, err)
		return
	}
	out, err := zk.SubmitProof(c.Request.Context(), principal(c).AccountID, in)
	if err != nil {
		fail(c, err)
		return
	}
	c.JSON(http.StatusOK, out)
}

// zkJobStatus: GET /api/zkverify/job-status/{jobId}
func (s *Server) zkJobStatus(c *gin.Context) {
	zk, ok := s.zkService(c)
	if !ok {
		return
	}
	out, err := zk.JobStatus(c.Request.Context(), principal(c).AccountID, c.Param("jobId"))
	if err != nil {
		fail(c, err)
		return
	}
	c.JSON(http.StatusOK, out)
}
