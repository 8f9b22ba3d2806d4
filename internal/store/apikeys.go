package store

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
)

// APIKey is a stored key (never its secret).
type APIKey struct {
	ID            string
	AccountID     string
	Name          string
	Prefix        string
	Permissions   []string
	Status        string
	WalletAddress *string
	CreatedAt     time.Time
	UpdatedAt     time.Time
	LastUsedAt    *time.Time
}

// NewAPIKey is what CreateAPIKey stores.
type NewAPIKey struct {
	AccountID     string
	Name          string
	Prefix        string
	Hash          []byte
	Permissions   []string
	WalletAddress *string
}

const keyCols = `id, account_id, name, prefix, permissions, status, wallet_address, created_at, updated_at, last_used_at`

func scanKey(row pgx.Row) (APIKey, error) {
	var k APIKey
	err := row.Scan(&k.ID, &k.AccountID, &k.Name, &k.Prefix, &k.Permissions, &k.Status, &k.WalletAddress, &k.CreatedAt, &k.UpdatedAt, &k.LastUsedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return k, ErrNotFound
	}
	return k, err
}

// CreateAPIKey stores a new active key.
func (s *Store) CreateAPIKey(ctx context.Context, k NewAPIKey) (APIKey, error) {
	return insertAPIKey(ctx, s.pool, k)
}

func insertAPIKey(ctx context.Context, q querier, k NewAPIKey) (APIKey, error) {
	key, err := scanKey(q.QueryRow(ctx, `
		INSERT INTO api_keys (id, account_id, name, prefix, secret_hash, permissions, status, wallet_address)
		VALUES ($1, $2, $3, $4, $5, $6, 'active', $7)
		RETURNING `+keyCols, NewID("key"), k.AccountID, k.Name, k.Prefix, k.Hash, k.Permissions, k.WalletAddress))
	if isForeignKeyViolation(err) {
		return key, ErrNotFound
	}
	return key, err
}

// APIKeys lists the account's keys, oldest first.
func (s *Store) APIKeys(ctx context.Context, account string) ([]APIKey, error) {
	return queryList(ctx, s, scanKey, `SELECT `+keyCols+` FROM api_keys WHERE account_id = $1 AND deleted_at IS NULL ORDER BY created_at, id`, account)
}

// APIKey reads one of the account's keys; another account's key is
// ErrNotFound, exactly like a missing one.
func (s *Store) APIKey(ctx context.Context, account, id string) (APIKey, error) {
	return scanKey(s.pool.QueryRow(ctx, `SELECT `+keyCols+` FROM api_keys WHERE id = $1 AND account_id = $2 AND deleted_at IS NULL`, id, account))
}

// APIKeyPatch lists the fields to change; nil leaves a field as it is.
type APIKeyPatch struct {
	Name        *string
	Permissions []string
	Status      *string
	// Wallet: nil leaves it; a pointer to nil clears it.
	Wallet **string
	// Within, when not nil, applies the patch only to a key whose present
	// permissions all appear in it (ErrKeyOutranks otherwise). The check
	// is part of the UPDATE, so no concurrent change slips between them.
	Within []string
}

// ErrKeyOutranks: a change limited to keys within a set of permissions
// found the key holding one outside it.
var ErrKeyOutranks = errors.New("the key holds permissions outside the allowed set")

// UpdateAPIKey applies patch to one of the account's keys.
func (s *Store) UpdateAPIKey(ctx context.Context, account, id string, p APIKeyPatch) (APIKey, error) {
	setWallet := p.Wallet != nil
	var wallet *string
	if setWallet {
		wallet = *p.Wallet
	}
	k, err := scanKey(s.pool.QueryRow(ctx, `
		UPDATE api_keys SET
			name = coalesce($3, name),
			permissions = coalesce($4, permissions),
			status = coalesce($5, status),
			wallet_address = CASE WHEN $6 THEN $7 ELSE wallet_address END,
			updated_at = now()
		WHERE id = $1 AND account_id = $2 AND deleted_at IS NULL AND ($8::text[] IS NULL OR permissions <@ $8::text[])
		RETURNING `+keyCols, id, account, p.Name, p.Permissions, p.Status, setWallet, wallet, p.Within))
	if errors.Is(err, ErrNotFound) && p.Within != nil {
		return k, s.whyUnchanged(ctx, account, id)
	}
	return k, err
}

// DeleteAPIKey revokes a key for good. within, when not nil, limits it to
// a key whose permissions all appear in it (ErrKeyOutranks otherwise).
func (s *Store) DeleteAPIKey(ctx context.Context, account, id string, within []string) error {
	tag, err := s.pool.Exec(ctx, `UPDATE api_keys SET deleted_at = now(), status = 'inactive'
		WHERE id = $1 AND account_id = $2 AND deleted_at IS NULL AND ($3::text[] IS NULL OR permissions <@ $3::text[])`, id, account, within)
	if err != nil {
		return err
	}
	if tag.RowsAffected() == 0 {
		if within != nil {
			return s.whyUnchanged(ctx, account, id)
		}
		return ErrNotFound
	}
	return nil
}

// whyUnchanged tells a missing key (ErrNotFound) from one that a
// conditional change skipped because it outranks the caller.
func (s *Store) whyUnchanged(ctx context.Context, account, id string) error {
	var exists bool
	if err := s.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM api_keys WHERE id = $1 AND account_id = $2 AND deleted_at IS NULL)`, id, account).Scan(&exists); err != nil {
		return err
	}
	if exists {
		return ErrKeyOutranks
	}
	return ErrNotFound
}

// KeyByPrefix finds a live (not deleted) key and its secret hash for
// authentication.
func (s *Store) KeyByPrefix(ctx context.Context, prefix string) (APIKey, []byte, error) {
	var hash []byte
	var k APIKey
	err := s.pool.QueryRow(ctx, `SELECT `+keyCols+`, secret_hash FROM api_keys WHERE prefix = $1 AND deleted_at IS NULL`, prefix).
		Scan(&k.ID, &k.AccountID, &k.Name, &k.Prefix, &k.Permissions, &k.Status, &k.WalletAddress, &k.CreatedAt, &k.UpdatedAt, &k.LastUsedAt, &hash)
	if errors.Is(err, pgx.ErrNoRows) {
		return k, nil, ErrNotFound
	}
	return k, hash, err
}

// TouchAPIKey records use, at most once a minute per key so a busy key does
// not turn every request into a write.
func (s *Store) TouchAPIKey(ctx context.Context, id string) error {
	_, err := s.pool.Exec(ctx, `UPDATE api_keys SET last_used_at = now() WHERE id = $1 AND (last_used_at IS NULL OR last_used_at < now() - interval '1 minute')`, id)
	return err
}
