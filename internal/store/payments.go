package store

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"conduit/internal/money"
)

// Payment is a settled x402 payment.
type Payment struct {
	Network     string
	Transaction string
	Payer       string
	Nonce       string
	Amount      money.Micros
	Resource    string
	AccountID   *string
	SettledAt   time.Time
}

// RecordPayment stores a settled payment once; recording the same
// authorization again returns the stored row.
func (s *Store) RecordPayment(ctx context.Context, p Payment) (Payment, error) {
	var out Payment
	err := s.pool.QueryRow(ctx, `
		INSERT INTO payments (network, transaction, payer, nonce, amount_micros, resource, account_id)
		VALUES ($1, $2, $3, $4, $5, $6, $7)
		ON CONFLICT (network, payer, nonce) DO UPDATE SET network = EXCLUDED.network
		RETURNING network, transaction, payer, nonce, amount_micros, resource, account_id, settled_at`,
		p.Network, p.Transaction, p.Payer, p.Nonce, p.Amount, p.Resource, p.AccountID).
		Scan(&out.Network, &out.Transaction, &out.Payer, &out.Nonce, &out.Amount, &out.Resource, &out.AccountID, &out.SettledAt)
	return out, err
}

// PaymentByAuthorization finds a settled payment by its authorization.
func (s *Store) PaymentByAuthorization(ctx context.Context, network, payer, nonce string) (Payment, error) {
	var out Payment
	err := s.pool.QueryRow(ctx, `
		SELECT network, transaction, payer, nonce, amount_micros, resource, account_id, settled_at
		FROM payments WHERE network = $1 AND payer = $2 AND nonce = $3`, network, payer, nonce).
		Scan(&out.Network, &out.Transaction, &out.Payer, &out.Nonce, &out.Amount, &out.Resource, &out.AccountID, &out.SettledAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return out, ErrNotFound
	}
	return out, err
}
