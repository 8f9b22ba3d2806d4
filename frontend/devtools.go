package frontend

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"conduit/internal/money"
)

// DevMintPath credits play tokens; it is a dev tool (Deps.DevTools).
const DevMintPath = "/dev/x402/mint"

// devMint: POST /dev/x402/mint {address, usd} credits play tokens on the
// embedded networks. The route exists only among the dev tools and with the
// local facilitator: its tokens are worth nothing outside this process, and
// a production deployment must never hand them out.
func (s *Server) devMint(c *gin.Context) {
	var body struct {
		Address string       `json:"address"`
		USD     money.Micros `json:"usd"`
	}
	if err := decodeJSON(c, &body); err != nil {
		fail(c, err)
		return
	}
	if body.USD <= 0 || body.USD > 1_000_000*money.USD {
		fail(c, errorf(http.StatusBadRequest, "usd must be more than 0 and at most 1000000"))
		return
	}
	m, err := s.deps.Payments.Mint(c.Request.Context(), body.Address, body.USD)
	if err != nil {
		fail(c, errorf(http.StatusBadRequest, "%v", err))
		return
	}
	out := gin.H{"address": body.Address, "mintedUsd": body.USD, "network": m.Network, "asset": m.Asset}
	if m.Transaction != "" {
		out["transaction"] = m.Transaction
	}
	c.JSON(http.StatusOK, out)
}
