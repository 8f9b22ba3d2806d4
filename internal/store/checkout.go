package store

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"conduit/internal/money"
)

// CheckoutSession is a card checkout of a credit pack.
type CheckoutSession struct {
	ID            string
	Provider      string
	AccountID     string
	Pack          string
	Price         money.Micros
	Credit        money.Micros
	Currency      string
	Status        string // open, complete, expired
	PaymentStatus string // unpaid, paid
	URL           string
	SuccessURL    string
	CancelURL     string
	CreatedAt     time.Time
	ExpiresAt     time.Time
	CompletedAt   *time.Time
}

const checkoutCols = `id, provider, account_id, pack, price_micros, credit_micros, currency, status, payment_status, url, success_url, cancel_url, created_at, expires_at, completed_at`

func scanCheckout(row pgx.Row) (CheckoutSession, error) {
	var c CheckoutSession
	err := row.Scan(&c.ID, &c.Provider, &c.AccountID, &c.Pack, &c.Price, &c.Credit, &c.Currency, &c.Status, &c.PaymentStatus,
		&c.URL, &c.SuccessURL, &c.CancelURL, &c.CreatedAt, &c.ExpiresAt, &c.CompletedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return c, ErrNotFound
	}
	return c, err
}

// CreateCheckoutSession records a checkout the buyer is sent to pay.
func (s *Store) CreateCheckoutSession(ctx context.Context, c CheckoutSession) (CheckoutSession, error) {
	out, err := scanCheckout(s.pool.QueryRow(ctx, `
		INSERT INTO checkout_sessions (id, provider, account_id, pack, price_micros, credit_micros, currency, status, payment_status, url, success_url, cancel_url, expires_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, 'open', 'unpaid', $8, $9, $10, $11)
		RETURNING `+checkoutCols, c.ID, c.Provider, c.AccountID, c.Pack, c.Price, c.Credit, c.Currency, c.URL, c.SuccessURL, c.CancelURL, c.ExpiresAt))
	if isForeignKeyViolation(err) {
		return out, ErrNotFound
	}
	return out, err
}

// CheckoutSessionByID reads one checkout.
func (s *Store) CheckoutSessionByID(ctx context.Context, id string) (CheckoutSession, error) {
	return scanCheckout(s.pool.QueryRow(ctx, `SELECT `+checkoutCols+` FROM checkout_sessions WHERE id = $1`, id))
}

// CompleteCheckoutSession marks a checkout paid (again: nothing changes).
func (s *Store) CompleteCheckoutSession(ctx context.Context, id string) error {
	tag, err := s.pool.Exec(ctx, `
		UPDATE checkout_sessions SET status = 'complete', payment_status = 'paid', completed_at = coalesce(completed_at, now())
		WHERE id = $1`, id)
	if err == nil && tag.RowsAffected() == 0 {
		return ErrNotFound
	}
	return err
}

// CheckoutEvent is a verified webhook event as it arrived.
type CheckoutEvent struct {
	ID         string
	SessionID  string
	Type       string
	Payload    []byte
	Signature  string
	ReceivedAt time.Time
}

// RecordCheckoutEvent keeps a verified event once per id; duplicate says
// it was kept before.
func (s *Store) RecordCheckoutEvent(ctx context.Context, e CheckoutEvent) (duplicate bool, err error) {
	tag, err := s.pool.Exec(ctx, `
		INSERT INTO checkout_events (id, session_id, type, payload, signature) VALUES ($1, $2, $3, $4, $5)
		ON CONFLICT (id) DO NOTHING`, e.ID, e.SessionID, e.Type, e.Payload, e.Signature)
	return err == nil && tag.RowsAffected() == 0, err
}

// CheckoutEvents lists the events received for a checkout, oldest first.
func (s *Store) CheckoutEvents(ctx context.Context, sessionID string) ([]CheckoutEvent, error) {
	return queryList(ctx, s, func(row pgx.Row) (CheckoutEvent, error) {
		var e CheckoutEvent
		err := row.Scan(&e.ID, &e.SessionID, &e.Type, &e.Payload, &e.Signature, &e.ReceivedAt)
		return e, err
	}, `SELECT id, session_id, type, payload, signature, received_at FROM checkout_events WHERE session_id = $1 ORDER BY received_at, id`, sessionID)
}
