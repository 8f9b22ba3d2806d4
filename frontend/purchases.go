package frontend

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"sort"
	"time"

	"github.com/gin-gonic/gin"

	"conduit/internal/logging"
	"conduit/internal/money"
	"conduit/internal/payments"
	"conduit/internal/siwx"
	"conduit/internal/store"
	"conduit/internal/x402"
)

// PurchasesPath lists a wallet's purchases (spec §4.13).
const PurchasesPath = "/api/x402/purchases"

// Sign-in rules: a challenge is good for 5 minutes, and a proof must have
// been issued within the last 5 (x402 SIWX defaults).
const (
	signInTTL    = 5 * time.Minute
	signInMaxAge = 5 * time.Minute
	// maxPurchases bounds one listing (newest first, per kind of row).
	maxPurchases = 500
)

// HeaderSignInWithX carries the wallet's Sign-In-With-X proof.
const HeaderSignInWithX = "SIGN-IN-WITH-X"

// purchases: GET /api/x402/purchases. Without a proof: 402 with a
// Sign-In-With-X challenge in extensions["sign-in-with-x"], whose accepts
// name the networks a wallet signs in from at amount 0 (the official
// wrapFetchWithSIWx picks its chain from accepts[0].network; nothing is
// ever settled here). With a valid proof: every
// purchase of the signing wallet on that network — renders with their
// records and fresh statusUrls, and top-ups. A bad proof: 401 with the
// reason and a fresh challenge.
func (s *Server) purchases(c *gin.Context) {
	if !s.payPerCallReady(c) {
		return
	}
	header := c.GetHeader(HeaderSignInWithX)
	if header == "" {
		s.signInRequired(c, http.StatusPaymentRequired, "SIGN-IN-WITH-X header is required: sign the challenge with the paying wallet")
		return
	}
	proof, err := siwx.ParseHeader(header)
	if err != nil {
		s.signInRequired(c, http.StatusUnauthorized, signInReason(err))
		return
	}
	// The domain is the one the challenge names: the public URL's host,
	// with its port when that is not the scheme's default.
	u, _ := url.Parse(s.url(PurchasesPath))
	addr, err := siwx.Verify(proof, siwx.Expect{
		Domain: siwx.Host(u), Origin: u.Scheme + "://" + u.Host, Networks: s.deps.Payments.Networks(), MaxAge: signInMaxAge,
	}, time.Now())
	if err != nil {
		s.signInRequired(c, http.StatusUnauthorized, signInReason(err))
		return
	}
	ctx := c.Request.Context()
	switch err := s.deps.Store.UseNonce(ctx, proof.Nonce); {
	case errors.Is(err, store.ErrNotFound):
		s.signInRequired(c, http.StatusUnauthorized, "sign-in refused: the nonce was not issued by this server")
		return
	case errors.Is(err, store.ErrNonceUsed):
		s.signInRequired(c, http.StatusUnauthorized, "sign-in refused: the nonce was already used; sign the new challenge")
		return
	case errors.Is(err, store.ErrNonceExpired):
		s.signInRequired(c, http.StatusUnauthorized, "sign-in refused: the challenge expired; sign the new challenge")
		return
	case err != nil:
		fail(c, err)
		return
	}
	s.listPurchases(c, proof.ChainID, addr)
}

func signInReason(err error) string {
	var se *siwx.Error
	if errors.As(err, &se) {
		return "sign-in refused: " + se.Reason
	}
	return "sign-in refused: " + err.Error()
}

// signInRequired answers status with reason and a fresh challenge, in the
// PAYMENT-REQUIRED header (as x402 clients expect) and in the body.
func (s *Server) signInRequired(c *gin.Context, status int, reason string) {
	ch, err := siwx.NewChallenge(s.url(PurchasesPath), s.deps.Payments.Networks(), "Sign in to list your purchases", time.Now(), signInTTL)
	if err != nil {
		fail(c, err)
		return
	}
	expires, _ := time.Parse(time.RFC3339Nano, ch.Info.ExpirationTime)
	if err := s.deps.Store.IssueNonce(c.Request.Context(), ch.Info.Nonce, expires); err != nil {
		fail(c, err)
		return
	}
	resource := x402.ResourceInfo{URL: s.url(PurchasesPath), Description: "every purchase of the signing wallet", MimeType: "application/json"}
	pr := x402.Challenge(resource, 0, s.deps.Payments.Offers(), reason)
	pr.Extensions = map[string]any{siwx.ExtensionKey: ch}
	h, err := x402.EncodeHeader(pr)
	if err != nil {
		fail(c, err)
		return
	}
	c.Header(x402.HeaderPaymentRequired, h)
	c.AbortWithStatusJSON(status, gin.H{"error": reason, "x402Version": 2, "resource": pr.Resource, "accepts": pr.Accepts, "extensions": pr.Extensions})
}

// listPurchases answers the wallet's renders (each as its run record, with
// kind) and top-ups, newest first. The file URLs in it reach the wallet's
// owner, so listed files count as delivered.
func (s *Server) listPurchases(c *gin.Context, network, payer string) {
	ctx := c.Request.Context()
	payer = x402.NormalizeAddress(network, payer)
	runs, err := s.deps.Store.MediaRunsByPayer(ctx, network, payer, maxPurchases)
	if err != nil {
		fail(c, err)
		return
	}
	topUps, err := s.deps.Store.PaymentsByPayer(ctx, network, payer, payments.TopUpPath, maxPurchases)
	if err != nil {
		fail(c, err)
		return
	}
	kinds := map[string]mediaKind{}
	for _, k := range s.mediaKinds() {
		kinds[k.name] = k
	}
	type row struct {
		at  time.Time
		rec gin.H
	}
	var rows []row
	var delivered []string
	for _, r := range runs {
		k, ok := kinds[r.Kind]
		if !ok {
			continue
		}
		rec := s.record(k, r)
		rec["kind"] = r.Kind
		rows = append(rows, row{r.StartedAt, rec})
		if r.Status == "success" && r.DeliveredAt == nil {
			delivered = append(delivered, r.RunID)
		}
	}
	for _, p := range topUps {
		rows = append(rows, row{*p.SettledAt, gin.H{
			"kind": "topup", "transaction": p.Transaction, "network": p.Network, "amountUsd": p.Amount,
			"settledAt": p.SettledAt.UTC().Format(time.RFC3339Nano), "accountId": p.AccountID,
		}})
	}
	sort.SliceStable(rows, func(i, j int) bool { return rows[i].at.After(rows[j].at) })
	list := make([]gin.H, 0, len(rows))
	for _, r := range rows {
		list = append(list, r.rec)
	}
	body := gin.H{"network": network, "payer": x402.DisplayAddress(network, payer), "purchases": list}
	if acct, err := s.deps.Store.FindWalletAccount(ctx, network, payer); err == nil {
		body["balanceUsd"] = acct.Balance
	} else {
		body["balanceUsd"] = money.Micros(0)
	}
	c.Header("Cache-Control", "no-store")
	c.JSON(http.StatusOK, body)
	for _, id := range delivered {
		if err := s.deps.Store.MarkMediaDelivered(context.WithoutCancel(ctx), id); err != nil {
			logging.From(ctx).Error("recording a delivery failed", "run", id, "err", err)
		}
	}
}
