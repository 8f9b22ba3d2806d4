package frontend

import (
	"context"
	"net/http"
	"time"

	"github.com/gin-gonic/gin"
	"go.temporal.io/sdk/client"
)

// health answers 200 only when both Postgres and Temporal answer within two
// seconds; otherwise 503 with which one is down.
func (s *Server) health(c *gin.Context) {
	ctx, cancel := context.WithTimeout(c.Request.Context(), 2*time.Second)
	defer cancel()
	pg, tp := "ok", "ok"
	if err := s.deps.Store.Ping(ctx); err != nil {
		pg = "unreachable"
	}
	if _, err := s.deps.Temporal.CheckHealth(ctx, &client.CheckHealthRequest{}); err != nil {
		tp = "unreachable"
	}
	status, code := "ok", http.StatusOK
	if pg != "ok" || tp != "ok" {
		status, code = "unavailable", http.StatusServiceUnavailable
	}
	c.JSON(code, gin.H{"status": status, "postgres": pg, "temporal": tp})
}
