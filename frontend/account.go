package frontend

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"conduit/internal/quota"
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

// usage: GET /api/account/usage (docs/accounts.md, "Quotas"): each
// bounded resource's use and limit (null: no limit) for the caller's
// account.
func (s *Server) usage(c *gin.Context) {
	u, err := s.usageService().Usage(c.Request.Context(), principal(c).AccountID)
	if err != nil {
		fail(c, err)
		return
	}
	c.JSON(http.StatusOK, u)
}

// usageService counts what the store holds, then the other sources.
func (s *Server) usageService() *quota.Service {
	q := s.deps.Config.Quota
	counted := quota.Counted{Counter: s.deps.Store, Limits: quota.Limits{Enclaves: q.Enclaves, Tasks: q.Tasks, APIKeys: q.APIKeys, Pipelines: q.Pipelines}}
	return &quota.Service{Sources: append([]quota.Source{counted}, s.deps.Usage...)}
}

func (s *Server) topUpURL() string { return s.url(CreditsPagePath) }

func (s *Server) url(path string) string { return s.deps.Config.BaseURL() + path }
