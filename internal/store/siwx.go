package store

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
)

// ErrNonceUsed: a sign-in nonce was presented a second time.
var ErrNonceUsed = errors.New("nonce already used")

// ErrNonceExpired: a sign-in nonce outlived its challenge.
var ErrNonceExpired = errors.New("nonce expired")

// IssueNonce records a sign-in challenge's nonce until expires, and
// forgets every nonce that has expired: anyone can ask for challenges, so
// the table holds at most the challenges of one lifetime (5 minutes),
// which the per-address rate limit bounds. A proof naming a forgotten
// nonce is refused like one never issued; its signed issuedAt is past the
// 5-minute sign-in window anyway.
func (s *Store) IssueNonce(ctx context.Context, nonce string, expires time.Time) error {
	if _, err := s.pool.Exec(ctx, `DELETE FROM siwx_nonces WHERE expires_at < now()`); err != nil {
		return err
	}
	_, err := s.pool.Exec(ctx, `INSERT INTO siwx_nonces (nonce, expires_at) VALUES ($1, $2)`, nonce, expires)
	return err
}

// UseNonce spends a nonce once: ErrNotFound for one never issued (or long
// forgotten), ErrNonceUsed for a second use, ErrNonceExpired after expiry.
func (s *Store) UseNonce(ctx context.Context, nonce string) error {
	tag, err := s.pool.Exec(ctx, `UPDATE siwx_nonces SET used_at = now() WHERE nonce = $1 AND used_at IS NULL AND expires_at > now()`, nonce)
	if err != nil || tag.RowsAffected() == 1 {
		return err
	}
	var used *time.Time
	err = s.pool.QueryRow(ctx, `SELECT used_at FROM siwx_nonces WHERE nonce = $1`, nonce).Scan(&used)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return ErrNotFound
	case err != nil:
		return err
	case used != nil:
		return ErrNonceUsed
	}
	return ErrNonceExpired
}

// PaymentsByPayer lists a wallet's settled payments for resource (the
// top-ups), newest first. EVM addresses compare case-insensitively.
func (s *Store) PaymentsByPayer(ctx context.Context, network, payer, resource string, limit int) ([]Payment, error) {
	return queryList(ctx, s, scanPayment, `SELECT `+paymentCols+` FROM payments
		WHERE network = $1 AND (payer = $2 OR (network LIKE 'eip155:%' AND lower(payer) = lower($2))) AND resource = $3 AND status = 'settled'
		ORDER BY settled_at DESC LIMIT $4`, network, payer, resource, limit)
}
