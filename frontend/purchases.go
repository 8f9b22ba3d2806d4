package frontend

import (
	"net/http"

	"github.com/gin-gonic/gin"
)

// HeaderSignInWithX carries the wallet's Sign-In-With-X proof.
const HeaderSignInWithX = "SIGN-IN-WITH-X"

// purchases: GET /api/x402/purchases with the SIGN-IN-WITH-X proof of the
// paying wallet (internal/paycall has the sign-in rules and the list).
func (s *Server) purchases(c *gin.Context) {
	p, err := s.payPerCall.Purchases(c.Request.Context(), c.GetHeader(HeaderSignInWithX))
	if err != nil {
		fail(c, err)
		return
	}
	c.Header("Cache-Control", "no-store")
	c.JSON(http.StatusOK, p.Body)
	s.payPerCall.Listed(c.Request.Context(), p)
}
