package frontend

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"conduit/internal/errs"
	"conduit/internal/topup"
	"conduit/internal/x402"
)

const notConfigured = topup.NotConfigured

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

// paymentRequired answers 402 with the challenge in PAYMENT-REQUIRED (and
// in the body, for v1-style readers); reason says why.
func (s *Server) paymentRequired(c *gin.Context, challenge x402.PaymentRequired, reason string) {
	fail(c, &errs.Error{Kind: errs.PaymentRequired, Msg: reason, Challenge: challenge})
}
