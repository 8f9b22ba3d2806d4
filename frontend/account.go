package frontend

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"conduit/internal/pricing"
)

// balance: GET /api/account/balance (spec §2.6). The x402 block appears
// only when agent top-up is enabled on this deployment.
func (s *Server) balance(c *gin.Context) {
	bal, err := s.deps.Store.Balance(c.Request.Context(), principal(c).AccountID)
	if err != nil {
		fail(c, err)
		return
	}
	body := gin.H{
		"balanceUsd":            bal,
		"typicalVideoChargeUsd": pricing.TypicalVideoCharge,
		"topUpUrl":              s.topUpURL(),
	}
	if t := s.deps.Payments; t.Enabled() {
		body["x402"] = gin.H{"url": s.url(t.Path()), "topUpPerCallUsd": t.PerCall(), "network": t.NetworkID()}
	}
	c.JSON(http.StatusOK, body)
}

func (s *Server) topUpURL() string { return s.url(CreditsPagePath) }

func (s *Server) url(path string) string { return s.deps.Config.BaseURL() + path }
