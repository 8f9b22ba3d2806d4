package store

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"conduit/internal/errs"
	"conduit/internal/quota"
)

// ZKPassportRequest is a zkPassport verification request (internal/zkpassport).
type ZKPassportRequest struct {
	ID        string
	AccountID string
	Domain    string
	Scope     string
	Name      string
	Logo      string
	Purpose   string
	Mode      string
	Query     json.RawMessage
	Status    string
	Attempts  int
	CreatedAt time.Time
	ExpiresAt time.Time
	ClosedAt  *time.Time
	Result    json.RawMessage
}

// OpenZKPassportRequest writes a request unless its account already holds
// maxOpen open ones (TooManyRequests). Writing the same id again (a
// retry) answers what is there.
func (s *Store) OpenZKPassportRequest(ctx context.Context, r ZKPassportRequest, maxOpen int) error {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return err
	}
	defer tx.Rollback(ctx) //nolint:errcheck
	var exists bool
	if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM zkpassport_requests WHERE id = $1)`, r.ID).Scan(&exists); err != nil {
		return err
	}
	if exists {
		return nil
	}
	// Serialize an account's admissions so two cannot both see room.
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtext('zkpassport:' || $1))`, r.AccountID); err != nil {
		return err
	}
	open, err := count(ctx, tx, r.AccountID, quota.ZKPassportRequests)
	if err != nil {
		return err
	}
	if open >= int64(maxOpen) {
		return quota.Exceeded(quota.ZKPassportRequests, open, int64(maxOpen))
	}
	if _, err := tx.Exec(ctx, `
		INSERT INTO zkpassport_requests (id, account_id, domain, scope, name, logo, purpose, mode, query, created_at, expires_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)`,
		r.ID, r.AccountID, r.Domain, r.Scope, r.Name, r.Logo, r.Purpose, r.Mode, r.Query, r.CreatedAt, r.ExpiresAt); err != nil {
		return err
	}
	return tx.Commit(ctx)
}

// ZKPassportRequest reads an account's request; ErrNotFound for another
// account's or none.
func (s *Store) ZKPassportRequest(ctx context.Context, accountID, id string) (ZKPassportRequest, error) {
	var r ZKPassportRequest
	err := s.pool.QueryRow(ctx, `
		SELECT id, account_id, domain, scope, name, logo, purpose, mode, query, status, attempts, created_at, expires_at, closed_at, result
		FROM zkpassport_requests WHERE id = $1 AND account_id = $2`, id, accountID).
		Scan(&r.ID, &r.AccountID, &r.Domain, &r.Scope, &r.Name, &r.Logo, &r.Purpose, &r.Mode, &r.Query, &r.Status, &r.Attempts,
			&r.CreatedAt, &r.ExpiresAt, &r.ClosedAt, &r.Result)
	if errors.Is(err, pgx.ErrNoRows) {
		return r, ErrNotFound
	}
	return r, err
}

// RecordZKPassportAttempt stores a verification's outcome while the
// request is open and before its expiry (at): a closing status closes
// it; "failed" closes it only at the last allowed attempt, otherwise it
// counts the attempt and leaves it open. It answers the status now
// recorded, or Gone/Conflict when the request was no longer open.
func (s *Store) RecordZKPassportAttempt(ctx context.Context, accountID, id, status string, result json.RawMessage, maxAttempts int, at time.Time) (string, error) {
	var got string
	err := s.pool.QueryRow(ctx, `
		UPDATE zkpassport_requests SET attempts = attempts + 1,
			status = CASE WHEN $3 <> 'failed' OR attempts + 1 >= $5 THEN $3 ELSE status END,
			closed_at = CASE WHEN $3 <> 'failed' OR attempts + 1 >= $5 THEN $6 ELSE closed_at END,
			result = $4
		WHERE id = $1 AND account_id = $2 AND status = 'open' AND expires_at > $6
		RETURNING status`, id, accountID, status, result, maxAttempts, at).Scan(&got)
	if errors.Is(err, pgx.ErrNoRows) {
		r, rerr := s.ZKPassportRequest(ctx, accountID, id)
		if rerr != nil {
			return "", rerr
		}
		if r.Status == "expired" || (r.Status == "open" && !at.Before(r.ExpiresAt)) {
			return "", errs.New(errs.Gone, "request %s expired at %s", id, r.ExpiresAt.UTC().Format(time.RFC3339))
		}
		return "", errs.Conflictf("request %s was already verified (status %s)", id, r.Status)
	}
	return got, err
}

// ExpireZKPassportRequest closes a request still open at its expiry.
func (s *Store) ExpireZKPassportRequest(ctx context.Context, id string, at time.Time) error {
	_, err := s.pool.Exec(ctx, `UPDATE zkpassport_requests SET status = 'expired', closed_at = $2 WHERE id = $1 AND status = 'open'`, id, at)
	return err
}

// SaveZKPassportResult replaces a request's last result (with its
// attestation, signed once the recorded status is known).
func (s *Store) SaveZKPassportResult(ctx context.Context, accountID, id string, result json.RawMessage) error {
	_, err := s.pool.Exec(ctx, `UPDATE zkpassport_requests SET result = $3 WHERE id = $1 AND account_id = $2`, id, accountID, result)
	return err
}
