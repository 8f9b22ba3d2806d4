package store

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"conduit/internal/quota"
)

// KYC proofs (migration 00031, docs/proofs.md).

func init() {
	// An account holds its KYC proofs until they expire.
	quotaCounts[quota.KYCProofs] = `SELECT count(*) FROM kyc_proofs WHERE account_id = $1 AND expires_at > now()`
}

// KYCProof is a KYC proof's row.
type KYCProof struct {
	ID             string
	AccountID      string
	UserID         string
	Commitment     string
	Proof          string
	PublicInputs   []string
	Algorithm      string
	VKHash         string
	Timestamp      time.Time
	Status         string
	CryptoVerified bool
	Note           string
	Digest         string
	ChainTxHash    string
	ChainBlockHash string
	DevicePlatform string
	DeviceVersion  string
	VerifiedAt     *time.Time
	ExpiresAt      time.Time
	CreatedAt      time.Time
}

// CreateKYCProof writes p in the slot; a row with its id already there
// (the step ran before) is kept.
func (sl *Slot) CreateKYCProof(ctx context.Context, p KYCProof) error {
	defer sl.Release(ctx)
	inputs, _ := json.Marshal(p.PublicInputs)
	if _, err := sl.tx.Exec(ctx, `INSERT INTO kyc_proofs (id, account_id, user_id, commitment, proof, public_inputs, algorithm, vk_hash,
		proof_timestamp, status, crypto_verified, note, digest, device_platform, device_version, expires_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16) ON CONFLICT (id) DO NOTHING`,
		p.ID, p.AccountID, p.UserID, p.Commitment, p.Proof, inputs, p.Algorithm, p.VKHash, p.Timestamp, p.Status, p.CryptoVerified,
		p.Note, p.Digest, p.DevicePlatform, p.DeviceVersion, p.ExpiresAt); err != nil {
		return err
	}
	return sl.tx.Commit(ctx)
}

// SetKYCChainTx records the proof's transaction on the embedded chain.
func (s *Store) SetKYCChainTx(ctx context.Context, id, tx string) error {
	_, err := s.pool.Exec(ctx, `UPDATE kyc_proofs SET chain_tx_hash = $2 WHERE id = $1`, id, tx)
	return err
}

// ConfirmKYCProof records the block of the proof's transaction and its
// status once confirmed (verified at verifiedAt when it was verified).
func (s *Store) ConfirmKYCProof(ctx context.Context, id, tx, block, status string, verifiedAt *time.Time) error {
	_, err := s.pool.Exec(ctx, `UPDATE kyc_proofs SET chain_tx_hash = $2, chain_block_hash = $3, status = $4, verified_at = $5 WHERE id = $1`,
		id, tx, block, status, verifiedAt)
	return err
}

// ExpireKYCProof moves a proof to expired.
func (s *Store) ExpireKYCProof(ctx context.Context, id string) error {
	_, err := s.pool.Exec(ctx, `UPDATE kyc_proofs SET status = 'expired' WHERE id = $1`, id)
	return err
}

// KYCProofByID reads proof id.
func (s *Store) KYCProofByID(ctx context.Context, id string) (KYCProof, error) {
	var p KYCProof
	var inputs []byte
	err := s.pool.QueryRow(ctx, `SELECT id, account_id, user_id, commitment, proof, public_inputs, algorithm, vk_hash, proof_timestamp,
		status, crypto_verified, note, digest, chain_tx_hash, chain_block_hash, device_platform, device_version, verified_at, expires_at, created_at
		FROM kyc_proofs WHERE id = $1`, id).Scan(&p.ID, &p.AccountID, &p.UserID, &p.Commitment, &p.Proof, &inputs, &p.Algorithm, &p.VKHash,
		&p.Timestamp, &p.Status, &p.CryptoVerified, &p.Note, &p.Digest, &p.ChainTxHash, &p.ChainBlockHash, &p.DevicePlatform, &p.DeviceVersion,
		&p.VerifiedAt, &p.ExpiresAt, &p.CreatedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return p, ErrNotFound
	}
	if err == nil {
		err = json.Unmarshal(inputs, &p.PublicInputs)
	}
	return p, err
}
