package store

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// Login is a human's email sign-in for an account (never its password).
type Login struct {
	ID          string
	AccountID   string
	Email       string
	Permissions []string
	CreatedAt   time.Time
	UpdatedAt   time.Time
}

// NewLogin is what CreateLogin stores; PasswordHash is already hashed.
type NewLogin struct {
	AccountID    string
	Email        string
	PasswordHash string
	Permissions  []string
}

// ErrEmailTaken: another login already signs in with this email.
var ErrEmailTaken = errors.New("a login with this email already exists")

const loginCols = `id, account_id, email, permissions, created_at, updated_at`

func scanLogin(row pgx.Row, extra ...any) (Login, error) {
	var l Login
	err := row.Scan(append([]any{&l.ID, &l.AccountID, &l.Email, &l.Permissions, &l.CreatedAt, &l.UpdatedAt}, extra...)...)
	if errors.Is(err, pgx.ErrNoRows) {
		return l, ErrNotFound
	}
	return l, err
}

// CreateLogin stores a login; an email in use is ErrEmailTaken, an
// unknown account ErrNotFound.
func (s *Store) CreateLogin(ctx context.Context, n NewLogin) (Login, error) {
	l, err := scanLogin(s.pool.QueryRow(ctx, `
		INSERT INTO logins (id, account_id, email, password_hash, permissions)
		VALUES ($1, $2, $3, $4, $5)
		RETURNING `+loginCols, NewID("login"), n.AccountID, n.Email, n.PasswordHash, n.Permissions))
	switch {
	case isUniqueViolation(err):
		return l, ErrEmailTaken
	case isForeignKeyViolation(err):
		return l, ErrNotFound
	}
	return l, err
}

// LoginByEmail finds a login and its password hash for signing in.
func (s *Store) LoginByEmail(ctx context.Context, email string) (Login, string, error) {
	var hash string
	l, err := scanLogin(s.pool.QueryRow(ctx, `SELECT `+loginCols+`, password_hash FROM logins WHERE email = $1`, email), &hash)
	return l, hash, err
}

// SetLoginPassword replaces a login's password hash and ends every
// session it had: whoever knew the old password is signed out.
func (s *Store) SetLoginPassword(ctx context.Context, id, hash string) error {
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `UPDATE logins SET password_hash = $2, updated_at = now() WHERE id = $1`, id, hash)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return ErrNotFound
		}
		_, err = tx.Exec(ctx, `DELETE FROM login_sessions WHERE login_id = $1`, id)
		return err
	})
}

// CreateLoginSession records a signed-in browser by the hash of its
// cookie secret. Expired sessions are deleted on the way (a bounded
// batch), so the table holds about one lifetime of sign-ins.
func (s *Store) CreateLoginSession(ctx context.Context, tokenHash []byte, loginID string, expires time.Time) error {
	if _, err := s.pool.Exec(ctx, `DELETE FROM login_sessions WHERE token_hash IN
		(SELECT token_hash FROM login_sessions WHERE expires_at < now() LIMIT 100)`); err != nil {
		return err
	}
	_, err := s.pool.Exec(ctx, `INSERT INTO login_sessions (token_hash, login_id, expires_at) VALUES ($1, $2, $3)`, tokenHash, loginID, expires)
	if isForeignKeyViolation(err) {
		return ErrNotFound
	}
	return err
}

// LoginBySession finds the login of an unexpired session.
func (s *Store) LoginBySession(ctx context.Context, tokenHash []byte) (Login, time.Time, error) {
	var expires time.Time
	l, err := scanLogin(s.pool.QueryRow(ctx, `
		SELECT l.id, l.account_id, l.email, l.permissions, l.created_at, l.updated_at, s.expires_at
		FROM login_sessions s JOIN logins l ON l.id = s.login_id
		WHERE s.token_hash = $1 AND s.expires_at > now()`, tokenHash), &expires)
	return l, expires, err
}

// DeleteLoginSession ends a session (no error when there was none).
func (s *Store) DeleteLoginSession(ctx context.Context, tokenHash []byte) error {
	_, err := s.pool.Exec(ctx, `DELETE FROM login_sessions WHERE token_hash = $1`, tokenHash)
	return err
}

func isUniqueViolation(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "23505"
}
