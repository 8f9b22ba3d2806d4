package store

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"conduit/internal/money"
)

// Payment states: recorded before settlement, handed to the facilitator,
// settled on chain.
const (
	PaymentPending   = "pending"
	PaymentSubmitted = "submitted"
	PaymentSettled   = "settled"
)

// PaymentIntent is a verified payment and the one purchase it is for.
type PaymentIntent struct {
	Network string
	Payer   string // NormalizeAddress form
	Nonce   string // the payment's id on its network
	Amount  money.Micros
	Asset   string
	PayTo   string
	// Resource is the endpoint bought from; Purpose is the purchase itself
	// (render/<runId>, topup/<accountId> or topup/wallet).
	Resource string
	Purpose  string
}

// Payment is a row of payments.
type Payment struct {
	PaymentIntent
	Status      string
	Transaction string
	AccountID   *string
	SettledAt   *time.Time
}

// Answers says whether this recorded payment may answer the intent: the
// same terms (amount, asset, payee, network, resource) and the same
// purchase. Anything else is the payment presented again for something it
// did not pay for.
func (p Payment) Answers(in PaymentIntent) bool {
	return p.Network == in.Network && p.Amount == in.Amount && p.Asset == in.Asset && p.PayTo == in.PayTo &&
		p.Resource == in.Resource && p.Purpose == in.Purpose
}

const paymentCols = `network, payer, nonce, amount_micros, asset, pay_to, resource, purpose, status, coalesce(transaction, ''), account_id, settled_at`

func scanPayment(row pgx.Row) (Payment, error) {
	var p Payment
	err := row.Scan(&p.Network, &p.Payer, &p.Nonce, &p.Amount, &p.Asset, &p.PayTo, &p.Resource, &p.Purpose,
		&p.Status, &p.Transaction, &p.AccountID, &p.SettledAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return p, ErrNotFound
	}
	return p, err
}

// ClaimPayment records the intent before anything is settled, once per
// authorization: the first claim inserts it as pending; every later claim
// — concurrent or not, same purchase or another — gets the recorded row,
// which the caller compares with Answers.
func (s *Store) ClaimPayment(ctx context.Context, in PaymentIntent) (Payment, error) {
	p, err := scanPayment(s.pool.QueryRow(ctx, `
		INSERT INTO payments (network, payer, nonce, amount_micros, asset, pay_to, resource, purpose, status)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, 'pending')
		ON CONFLICT (network, payer, nonce) DO NOTHING
		RETURNING `+paymentCols,
		in.Network, in.Payer, in.Nonce, in.Amount, in.Asset, in.PayTo, in.Resource, in.Purpose))
	if errors.Is(err, ErrNotFound) {
		return s.PaymentByAuthorization(ctx, in.Network, in.Payer, in.Nonce)
	}
	return p, err
}

// MarkPaymentSubmitted notes that the payment is about to reach the
// facilitator: from here on, a lost answer is reconciled with the chain.
func (s *Store) MarkPaymentSubmitted(ctx context.Context, network, payer, nonce string) error {
	_, err := s.pool.Exec(ctx, `UPDATE payments SET status = 'submitted' WHERE network = $1 AND payer = $2 AND nonce = $3 AND status = 'pending'`,
		network, payer, nonce)
	return err
}

// SettlePayment completes a claimed payment with its transaction. Doing it
// again with the same transaction returns the row unchanged.
func (s *Store) SettlePayment(ctx context.Context, network, payer, nonce, transaction string) (Payment, error) {
	p, err := scanPayment(s.pool.QueryRow(ctx, `
		UPDATE payments SET status = 'settled', transaction = $4, settled_at = coalesce(settled_at, now())
		WHERE network = $1 AND payer = $2 AND nonce = $3 AND (status <> 'settled' OR transaction = $4)
		RETURNING `+paymentCols, network, payer, nonce, transaction))
	if errors.Is(err, ErrNotFound) {
		return p, errors.New("the payment was settled with another transaction")
	}
	return p, err
}

// DropPaymentIntent forgets an unsettled claim whose settlement the
// facilitator refused: the refusal may depend on chain state (an unfunded
// wallet), so the same payment may be presented again later.
func (s *Store) DropPaymentIntent(ctx context.Context, network, payer, nonce, purpose string) error {
	_, err := s.pool.Exec(ctx, `DELETE FROM payments WHERE network = $1 AND payer = $2 AND nonce = $3 AND purpose = $4 AND status <> 'settled'`,
		network, payer, nonce, purpose)
	return err
}

// PaymentByAuthorization finds a recorded payment by its authorization.
func (s *Store) PaymentByAuthorization(ctx context.Context, network, payer, nonce string) (Payment, error) {
	return scanPayment(s.pool.QueryRow(ctx, `SELECT `+paymentCols+` FROM payments WHERE network = $1 AND payer = $2 AND nonce = $3`, network, payer, nonce))
}
