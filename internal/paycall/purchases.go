package paycall

import (
	"context"
	"errors"
	"net/url"
	"sort"
	"time"

	"conduit/internal/errs"
	"conduit/internal/mediakind"
	"conduit/internal/money"
	"conduit/internal/payments"
	"conduit/internal/siwx"
	"conduit/internal/store"
	"conduit/internal/x402"
)

// Sign-in rules: a challenge is good for 5 minutes, and a proof must have
// been issued within the last 5 (x402 SIWX defaults).
const (
	signInTTL    = 5 * time.Minute
	signInMaxAge = 5 * time.Minute
	// maxPurchases bounds one listing (newest first, per kind of row).
	maxPurchases = 500
)

// Purchases is a wallet's purchases list.
type Purchases struct {
	Body map[string]any
	// delivered are the runs whose files the list hands over first.
	delivered []string
}

// Purchases lists every purchase of the wallet that signed proof (the
// SIGN-IN-WITH-X header): renders with their records and fresh statusUrls,
// and top-ups, newest first. Without a proof: 402 with a Sign-In-With-X
// challenge in extensions["sign-in-with-x"], whose accepts name the
// networks a wallet signs in from at amount 0 (the official
// wrapFetchWithSIWx picks its chain from accepts[0].network; nothing is
// ever settled here). A bad proof: 401 with the reason and a fresh
// challenge.
func (s *Service) Purchases(ctx context.Context, proofHeader string) (Purchases, error) {
	if err := s.selling(); err != nil {
		return Purchases{}, err
	}
	if proofHeader == "" {
		return Purchases{}, s.signInRequired(ctx, errs.PaymentRequired, "SIGN-IN-WITH-X header is required: sign the challenge with the paying wallet")
	}
	proof, err := siwx.ParseHeader(proofHeader)
	if err != nil {
		return Purchases{}, s.signInRequired(ctx, errs.Unauthorized, signInReason(err))
	}
	// The domain is the one the challenge names: the public URL's host,
	// with its port when that is not the scheme's default.
	u, _ := url.Parse(s.BaseURL + PurchasesPath)
	addr, err := siwx.Verify(proof, siwx.Expect{
		Domain: siwx.Host(u), Origin: u.Scheme + "://" + u.Host, Networks: s.Payments.Networks(), MaxAge: signInMaxAge,
	}, time.Now())
	if err != nil {
		return Purchases{}, s.signInRequired(ctx, errs.Unauthorized, signInReason(err))
	}
	switch err := s.Store.UseNonce(ctx, proof.Nonce); {
	case errors.Is(err, store.ErrNotFound):
		return Purchases{}, s.signInRequired(ctx, errs.Unauthorized, "sign-in refused: the nonce was not issued by this server")
	case errors.Is(err, store.ErrNonceUsed):
		return Purchases{}, s.signInRequired(ctx, errs.Unauthorized, "sign-in refused: the nonce was already used; sign the new challenge")
	case errors.Is(err, store.ErrNonceExpired):
		return Purchases{}, s.signInRequired(ctx, errs.Unauthorized, "sign-in refused: the challenge expired; sign the new challenge")
	case err != nil:
		return Purchases{}, err
	}
	return s.list(ctx, proof.ChainID, addr)
}

func signInReason(err error) string {
	var se *siwx.Error
	if errors.As(err, &se) {
		return "sign-in refused: " + se.Reason
	}
	return "sign-in refused: " + err.Error()
}

// signInRequired is a refusal of kind (402 or 401) with reason and a
// fresh challenge, which travels in the PAYMENT-REQUIRED header (as x402
// clients expect) and in the body with its extensions.
func (s *Service) signInRequired(ctx context.Context, kind errs.Kind, reason string) error {
	ch, err := siwx.NewChallenge(s.BaseURL+PurchasesPath, s.Payments.Networks(), "Sign in to list your purchases", time.Now(), signInTTL)
	if err != nil {
		return err
	}
	expires, _ := time.Parse(time.RFC3339Nano, ch.Info.ExpirationTime)
	if err := s.Store.IssueNonce(ctx, ch.Info.Nonce, expires); err != nil {
		return err
	}
	resource := x402.ResourceInfo{URL: s.BaseURL + PurchasesPath, Description: "every purchase of the signing wallet", MimeType: "application/json"}
	pr := x402.Challenge(resource, 0, s.Payments.Offers(), reason)
	pr.Extensions = map[string]any{siwx.ExtensionKey: ch}
	return &errs.Error{Kind: kind, Msg: reason, Challenge: pr, Extra: map[string]any{"extensions": pr.Extensions}}
}

// list is the wallet's renders (each as its run record, with kind) and
// top-ups, newest first, with its balance.
func (s *Service) list(ctx context.Context, network, payer string) (Purchases, error) {
	payer = x402.NormalizeAddress(network, payer)
	runs, err := s.Store.MediaRunsByPayer(ctx, network, payer, maxPurchases)
	if err != nil {
		return Purchases{}, err
	}
	topUps, err := s.Store.PaymentsByPayer(ctx, network, payer, payments.TopUpPath, maxPurchases)
	if err != nil {
		return Purchases{}, err
	}
	type row struct {
		at  time.Time
		rec map[string]any
	}
	var rows []row
	var out Purchases
	for _, r := range runs {
		k, ok := s.kindOf(r.Kind)
		if !ok {
			continue
		}
		rec := s.record(k, r)
		rec["kind"] = r.Kind
		rows = append(rows, row{r.StartedAt, rec})
		if r.Status == "success" && r.DeliveredAt == nil {
			out.delivered = append(out.delivered, r.RunID)
		}
	}
	for _, p := range topUps {
		rows = append(rows, row{*p.SettledAt, map[string]any{
			"kind": "topup", "transaction": p.Transaction, "network": p.Network, "amountUsd": p.Amount,
			"settledAt": p.SettledAt.UTC().Format(time.RFC3339Nano), "accountId": p.AccountID,
		}})
	}
	sort.SliceStable(rows, func(i, j int) bool { return rows[i].at.After(rows[j].at) })
	list := make([]map[string]any, 0, len(rows))
	for _, r := range rows {
		list = append(list, r.rec)
	}
	out.Body = map[string]any{"network": network, "payer": x402.DisplayAddress(network, payer), "purchases": list}
	if acct, err := s.Store.FindWalletAccount(ctx, network, payer); err == nil {
		out.Body["balanceUsd"] = acct.Balance
	} else {
		out.Body["balanceUsd"] = money.Micros(0)
	}
	return out, nil
}

// Listed records, once the list was written, that the files it carried
// reached the wallet's owner.
func (s *Service) Listed(ctx context.Context, p Purchases) {
	for _, id := range p.delivered {
		s.deliveries.record(context.WithoutCancel(ctx), delivery{runID: id})
	}
}

func (s *Service) kindOf(name string) (Kind, bool) {
	if !mediakind.Is(name) {
		return Kind{}, false
	}
	return s.kind(name), true
}
