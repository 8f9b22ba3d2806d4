package store

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
)

// EnclaveRawKey is an enclave's deprecated raw-key signer: the sealed
// keys and their public halves.
type EnclaveRawKey struct {
	Sealed          []byte
	EVMAddress      string
	SolanaPublicKey string
	CreatedAt       time.Time
}

// SetEnclaveRawKey configures (or replaces) an enclave's raw-key signer.
func (s *Store) SetEnclaveRawKey(ctx context.Context, id string, k EnclaveRawKey) error {
	_, err := s.pool.Exec(ctx, `
		INSERT INTO enclave_raw_keys (enclave_id, sealed, evm_address, solana_public_key) VALUES ($1, $2, $3, $4)
		ON CONFLICT (enclave_id) DO UPDATE SET sealed = $2, evm_address = $3, solana_public_key = $4, created_at = now()`,
		id, k.Sealed, k.EVMAddress, k.SolanaPublicKey)
	return err
}

// EnclaveRawKey reads an enclave's raw-key signer; ErrNotFound when none
// is configured.
func (s *Store) EnclaveRawKey(ctx context.Context, id string) (EnclaveRawKey, error) {
	var k EnclaveRawKey
	err := s.pool.QueryRow(ctx, `SELECT sealed, evm_address, solana_public_key, created_at FROM enclave_raw_keys WHERE enclave_id = $1`, id).
		Scan(&k.Sealed, &k.EVMAddress, &k.SolanaPublicKey, &k.CreatedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return k, ErrNotFound
	}
	return k, err
}

// DeleteEnclaveRawKey removes an enclave's raw-key signer; it answers
// whether there was one.
func (s *Store) DeleteEnclaveRawKey(ctx context.Context, id string) (bool, error) {
	tag, err := s.pool.Exec(ctx, `DELETE FROM enclave_raw_keys WHERE enclave_id = $1`, id)
	return tag.RowsAffected() > 0, err
}
