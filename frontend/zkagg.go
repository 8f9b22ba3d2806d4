package frontend

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"conduit/internal/errs"
	"conduit/internal/zkagg"
)

// Proof aggregation's route (docs/proofs.md): thin — the rules are in
// internal/zkagg.

// getZKAggregation: GET /api/zkverify/aggregation/{aggregationId}
// ?domainId=&jobId=|statement=
func (s *Server) getZKAggregation(c *gin.Context) {
	if s.deps.ZKAgg == nil {
		fail(c, errs.Unavailablef("proof aggregation is not configured"))
		return
	}
	out, err := s.deps.ZKAgg.Get(c.Request.Context(), zkagg.AggregationArgs{AggregationID: c.Param("aggregationId"),
		DomainID: c.Query("domainId"), JobID: c.Query("jobId"), Statement: c.Query("statement")})
	if err != nil {
		fail(c, err)
		return
	}
	c.JSON(http.StatusOK, out)
}
