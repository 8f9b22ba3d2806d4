package frontend

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"conduit/internal/accounts"
)

// ledger: GET /api/account/ledger?type=&from=&to=&limit=&after=&group= —
// the account's credit movements, newest first (docs/accounts.md,
// "Ledger"; cursor, the older name of after, still accepted:
// docs/paging.md); group=run folds each run's hold, release and charge
// into one line.
func (s *Server) ledger(c *gin.Context) {
	page, err := s.deps.Accounts.Ledger(c.Request.Context(), principal(c).AccountID, accounts.LedgerQuery{
		Types: c.Query("type"), From: c.Query("from"), To: c.Query("to"), Limit: c.Query("limit"),
		After: c.Query("after"), Cursor: c.Query("cursor"), Group: c.Query("group"),
	})
	if err != nil {
		fail(c, err)
		return
	}
	c.JSON(http.StatusOK, page)
}
