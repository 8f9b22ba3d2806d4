package store

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
)

// Mail is one message of the outbox (migration 00023): written in the
// same transaction as what it tells, delivered later by the mail
// workflow, and kept (the dev command's mailbox page lists them).
type Mail struct {
	ID   string
	Kind string
	To   string
	// Subject and Body are plain text; Link is the one link the message
	// is about (a verification link), also in Body.
	Subject   string
	Body      string
	Link      string
	CreatedAt time.Time
	SentAt    *time.Time
	Attempts  int
	LastError string
}

const mailCols = `id, kind, recipient, subject, body, link, created_at, sent_at, attempts, last_error`

func scanMail(row pgx.Row) (Mail, error) {
	var m Mail
	err := row.Scan(&m.ID, &m.Kind, &m.To, &m.Subject, &m.Body, &m.Link, &m.CreatedAt, &m.SentAt, &m.Attempts, &m.LastError)
	if errors.Is(err, pgx.ErrNoRows) {
		return m, ErrNotFound
	}
	return m, err
}

func insertMail(ctx context.Context, tx pgx.Tx, m Mail) error {
	_, err := tx.Exec(ctx, `INSERT INTO outbox (id, kind, recipient, subject, body, link) VALUES ($1, $2, $3, $4, $5, $6)`,
		m.ID, m.Kind, m.To, m.Subject, m.Body, m.Link)
	return err
}

// MailByID reads one message.
func (s *Store) MailByID(ctx context.Context, id string) (Mail, error) {
	return scanMail(s.pool.QueryRow(ctx, `SELECT `+mailCols+` FROM outbox WHERE id = $1`, id))
}

// MarkMailSent records the message delivered (the first time only).
func (s *Store) MarkMailSent(ctx context.Context, id string) error {
	_, err := s.pool.Exec(ctx, `UPDATE outbox SET sent_at = coalesce(sent_at, now()), attempts = attempts + 1, last_error = '' WHERE id = $1`, id)
	return err
}

// MailFailed records a failed delivery attempt and why.
func (s *Store) MailFailed(ctx context.Context, id, why string) error {
	if len(why) > 1000 {
		why = why[:1000]
	}
	_, err := s.pool.Exec(ctx, `UPDATE outbox SET attempts = attempts + 1, last_error = $2 WHERE id = $1 AND sent_at IS NULL`, id, why)
	return err
}

// Mailbox lists the newest messages, newest first (the dev mailbox page).
func (s *Store) Mailbox(ctx context.Context, limit int) ([]Mail, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+mailCols+` FROM outbox ORDER BY created_at DESC, id DESC LIMIT $1`, limit)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []Mail
	for rows.Next() {
		m, err := scanMail(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	return out, rows.Err()
}

// UnsentMail lists undelivered messages written before before, oldest
// first, that have not been tried yet (at most limit): those whose
// delivery was never started.
func (s *Store) UnsentMail(ctx context.Context, before time.Time, limit int) ([]string, error) {
	rows, err := s.pool.Query(ctx, `SELECT id FROM outbox WHERE sent_at IS NULL AND attempts = 0 AND created_at < $1 ORDER BY created_at LIMIT $2`, before, limit)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var ids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		ids = append(ids, id)
	}
	return ids, rows.Err()
}
