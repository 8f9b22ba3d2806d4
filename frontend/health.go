package frontend

import (
	"context"
	"net/http"
	"time"

	"github.com/gin-gonic/gin"

	"conduit/internal/errs"
)

// live answers 200 while the process serves HTTP, whatever its
// dependencies do: the liveness probe. A database outage must take a
// frontend out of rotation (health), not restart it.
func (s *Server) live(c *gin.Context) {
	c.JSON(http.StatusOK, gin.H{"status": "ok"})
}

// health is the readiness probe: it answers 200 only when both Postgres and Temporal answer within two
// seconds; otherwise 503 with which one is down. The pings are given at
// wiring time (server.go).
func (s *Server) health(c *gin.Context) {
	ctx, cancel := context.WithTimeout(c.Request.Context(), 2*time.Second)
	defer cancel()
	pg, tp := "ok", "ok"
	if err := s.pingPostgres(ctx); err != nil {
		pg = "unreachable"
	}
	if err := s.pingTemporal(ctx); err != nil {
		tp = "unreachable"
	}
	status, code := "ok", http.StatusOK
	if pg != "ok" || tp != "ok" {
		// The body is the readiness report, not an error body; its status
		// is an outage's.
		status, code = "unavailable", statusOf(errs.Unavailable)
	}
	c.JSON(code, gin.H{"status": status, "postgres": pg, "temporal": tp})
}
