package frontend

import (
	"net/http"

	"github.com/gin-gonic/gin"
)

// balance: GET /api/account/balance (spec §2.6). The x402 block appears
// only when agent top-up is enabled on this deployment.
func (s *Server) balance(c *gin.Context) {
	b, err := s.deps.Payments.Balance(c.Request.Context(), s.deps.Store, principal(c).AccountID, s.deps.Config.BaseURL(), s.topUpURL())
	if err != nil {
		fail(c, err)
		return
	}
	c.JSON(http.StatusOK, b)
}

func (s *Server) topUpURL() string { return s.url(CreditsPagePath) }

func (s *Server) url(path string) string { return s.deps.Config.BaseURL() + path }
