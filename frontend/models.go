package frontend

import (
	"net/http"

	"github.com/gin-gonic/gin"
)

// listModels: GET /api/pipelines/{id}/models, OpenAI's models list at the
// path a chat base URL implies.
func (s *Server) listModels(c *gin.Context) {
	ms, err := s.pipes.Models(c.Request.Context(), principal(c).AccountID)
	if err != nil {
		fail(c, err)
		return
	}
	c.JSON(http.StatusOK, gin.H{"object": "list", "data": ms})
}

// getModel: GET /api/pipelines/{id}/models/{model}.
func (s *Server) getModel(c *gin.Context) {
	m, err := s.pipes.Model(c.Request.Context(), principal(c).AccountID, c.Param("model"))
	if err != nil {
		fail(c, err)
		return
	}
	c.JSON(http.StatusOK, m)
}
