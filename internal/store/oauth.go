package store

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// OAuthClient is a dynamically registered OAuth client (internal/oauth).
type OAuthClient struct {
	ID            string
	Name          string
	RedirectURIs  []string
	GrantTypes    []string
	ResponseTypes []string
	Scopes        []string
	// Metadata is the registration answer (RFC 7591 §3.2.1) as JSON.
	Metadata  []byte
	CreatedAt time.Time
}

// OAuthToken is what the authorization server keeps for one code, PKCE
// challenge, access or refresh token, found by the token's signature.
type OAuthToken struct {
	Kind      string // code, pkce, access, refresh
	Signature string
	RequestID string
	ClientID  string
	AccountID string
	// Request is the grant as JSON (internal/oauth's format).
	Request   []byte
	Active    bool
	ExpiresAt time.Time
}

// querier runs statements: the pool, or the transaction an OAuth flow
// began (fosite asks for one around a code exchange and a refresh-token
// rotation, so a half-done rotation never commits).
type querier interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

type oauthTxKey struct{}

func (s *Store) oq(ctx context.Context) querier {
	if tx, ok := ctx.Value(oauthTxKey{}).(pgx.Tx); ok {
		return tx
	}
	return s.pool
}

// OAuthBegin starts a transaction that the OAuth statements made with the
// returned context join, until OAuthCommit or OAuthRollback.
func (s *Store) OAuthBegin(ctx context.Context) (context.Context, error) {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return ctx, err
	}
	return context.WithValue(ctx, oauthTxKey{}, tx), nil
}

var errNoOAuthTx = errors.New("no OAuth transaction in this context")

// OAuthCommit commits the transaction OAuthBegin put in ctx.
func (s *Store) OAuthCommit(ctx context.Context) error {
	tx, ok := ctx.Value(oauthTxKey{}).(pgx.Tx)
	if !ok {
		return errNoOAuthTx
	}
	return tx.Commit(ctx)
}

// OAuthRollback abandons the transaction OAuthBegin put in ctx; after a
// commit (or a rollback) it does nothing.
func (s *Store) OAuthRollback(ctx context.Context) error {
	tx, ok := ctx.Value(oauthTxKey{}).(pgx.Tx)
	if !ok {
		return errNoOAuthTx
	}
	if err := tx.Rollback(context.WithoutCancel(ctx)); err != nil && !errors.Is(err, pgx.ErrTxClosed) {
		return err
	}
	return nil
}

// CreateOAuthClient stores a registered client.
func (s *Store) CreateOAuthClient(ctx context.Context, c OAuthClient) (OAuthClient, error) {
	err := s.oq(ctx).QueryRow(ctx, `
		INSERT INTO oauth_clients (id, name, redirect_uris, grant_types, response_types, scopes, metadata)
		VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING created_at`,
		c.ID, c.Name, c.RedirectURIs, c.GrantTypes, c.ResponseTypes, c.Scopes, c.Metadata).Scan(&c.CreatedAt)
	return c, err
}

// OAuthClient reads one client.
func (s *Store) OAuthClient(ctx context.Context, id string) (OAuthClient, error) {
	var c OAuthClient
	err := s.oq(ctx).QueryRow(ctx, `
		SELECT id, name, redirect_uris, grant_types, response_types, scopes, metadata, created_at
		FROM oauth_clients WHERE id = $1`, id).
		Scan(&c.ID, &c.Name, &c.RedirectURIs, &c.GrantTypes, &c.ResponseTypes, &c.Scopes, &c.Metadata, &c.CreatedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return c, ErrNotFound
	}
	return c, err
}

// CreateOAuthToken stores one token's grant. Creating a code also deletes
// a bounded batch of expired rows, so the table holds about one lifetime
// of grants (used refresh tokens stay until they expire: presenting one
// again must still be recognised as reuse).
func (s *Store) CreateOAuthToken(ctx context.Context, t OAuthToken) error {
	q := s.oq(ctx)
	if t.Kind == "code" {
		if _, err := q.Exec(ctx, `DELETE FROM oauth_tokens WHERE (kind, signature) IN
			(SELECT kind, signature FROM oauth_tokens WHERE expires_at < now() LIMIT 200)`); err != nil {
			return err
		}
	}
	_, err := q.Exec(ctx, `
		INSERT INTO oauth_tokens (kind, signature, request_id, client_id, account_id, request, expires_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7)`,
		t.Kind, t.Signature, t.RequestID, t.ClientID, t.AccountID, t.Request, t.ExpiresAt)
	if isForeignKeyViolation(err) {
		return ErrNotFound
	}
	return err
}

// OAuthToken reads one token's grant, active or not.
func (s *Store) OAuthToken(ctx context.Context, kind, signature string) (OAuthToken, error) {
	t := OAuthToken{Kind: kind, Signature: signature}
	err := s.oq(ctx).QueryRow(ctx, `
		SELECT request_id, client_id, account_id, request, active, expires_at
		FROM oauth_tokens WHERE kind = $1 AND signature = $2`, kind, signature).
		Scan(&t.RequestID, &t.ClientID, &t.AccountID, &t.Request, &t.Active, &t.ExpiresAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return t, ErrNotFound
	}
	return t, err
}

// DeleteOAuthToken removes one token (no error when it is gone).
func (s *Store) DeleteOAuthToken(ctx context.Context, kind, signature string) error {
	_, err := s.oq(ctx).Exec(ctx, `DELETE FROM oauth_tokens WHERE kind = $1 AND signature = $2`, kind, signature)
	return err
}

// DeactivateOAuthToken marks one active token used and reports whether it
// was active. The check and the change are one statement, so of two
// concurrent uses of a code or refresh token only one wins.
func (s *Store) DeactivateOAuthToken(ctx context.Context, kind, signature string) (bool, error) {
	tag, err := s.oq(ctx).Exec(ctx, `UPDATE oauth_tokens SET active = false WHERE kind = $1 AND signature = $2 AND active`, kind, signature)
	return tag.RowsAffected() == 1, err
}

// DeactivateOAuthGrant marks every token of one kind in a grant (a token
// family) used: they stay recognisable but grant nothing.
func (s *Store) DeactivateOAuthGrant(ctx context.Context, kind, requestID string) error {
	_, err := s.oq(ctx).Exec(ctx, `UPDATE oauth_tokens SET active = false WHERE kind = $1 AND request_id = $2 AND active`, kind, requestID)
	return err
}

// DeleteOAuthGrant removes every token of one kind in a grant.
func (s *Store) DeleteOAuthGrant(ctx context.Context, kind, requestID string) error {
	_, err := s.oq(ctx).Exec(ctx, `DELETE FROM oauth_tokens WHERE kind = $1 AND request_id = $2`, kind, requestID)
	return err
}
