package frontend

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"conduit/internal/topup"
	"conduit/internal/x402"
)

// topUp: POST /api/billing/credits/x402 (spec §4.5). The rules — the
// bearer checked before anything settles, the payment taken and settled
// once, the grant — are internal/topup's.
func (s *Server) topUp(c *gin.Context) {
	r, err := s.topups.Buy(c.Request.Context(), topup.Request{
		Authorization: c.GetHeader("Authorization"), Payment: c.GetHeader(x402.HeaderPaymentSignature),
	})
	if err != nil {
		fail(c, err)
		return
	}
	if h, err := x402.EncodeHeader(x402.SettleResponse{Success: true, Transaction: r.Transaction, Network: r.Network, Payer: r.Payer}); err == nil {
		c.Header(x402.HeaderPaymentResponse, h)
	}
	c.JSON(http.StatusOK, gin.H{
		"grantedUsd": r.Granted, "duplicate": r.Duplicate, "balanceUsd": r.Balance,
		"network": r.Network, "transaction": r.Transaction, "payer": r.Payer,
	})
}
