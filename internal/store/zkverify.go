package store

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"conduit/internal/quota"
)

// The zkVerify relay's keys and jobs (migration 00030, docs/proofs.md).

func init() {
	// What an account holds: the keys it registered first, and its jobs
	// still open (a closed job holds nothing).
	quotaCounts[quota.ZKKeys] = `SELECT count(*) FROM zk_verification_keys WHERE account_id = $1`
	quotaCounts[quota.ZKJobs] = `SELECT count(*) FROM zk_jobs WHERE account_id = $1 AND closed_at IS NULL`
	// zkPassport requests neither verified nor expired.
	quotaCounts[quota.ZKPassportRequests] = `SELECT count(*) FROM zkpassport_requests WHERE account_id = $1 AND status = 'open' AND expires_at > now()`
}

// ZKKey is a registered verification key.
type ZKKey struct {
	Hash      string
	ProofType string
	VK        json.RawMessage
	AccountID string
	CreatedAt time.Time
}

// ZKKey reads the key registered under hash.
func (s *Store) ZKKey(ctx context.Context, hash string) (ZKKey, error) {
	var k ZKKey
	err := s.pool.QueryRow(ctx, `SELECT vk_hash, proof_type, vk, account_id, created_at FROM zk_verification_keys WHERE vk_hash = $1`, hash).
		Scan(&k.Hash, &k.ProofType, &k.VK, &k.AccountID, &k.CreatedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return k, ErrNotFound
	}
	return k, err
}

// CreateZKKey registers k in the slot, unless its hash is registered
// already (then nothing is written and existing is true).
func (sl *Slot) CreateZKKey(ctx context.Context, k ZKKey) (existing bool, err error) {
	defer sl.Release(ctx)
	tag, err := sl.tx.Exec(ctx, `INSERT INTO zk_verification_keys (vk_hash, proof_type, vk, account_id) VALUES ($1, $2, $3, $4)
		ON CONFLICT (vk_hash) DO NOTHING`, k.Hash, k.ProofType, k.VK, k.AccountID)
	if err != nil {
		return false, err
	}
	return tag.RowsAffected() == 0, sl.tx.Commit(ctx)
}

// NewZKJob is a job's row as its workflow opens it.
type NewZKJob struct {
	ID        string
	AccountID string
	ProofType string
	ChainID   *int64
	VKHash    string
	Status    string
}

// OpenZKJob writes job's row in the slot. A row already there with the
// same id (the step ran before and its answer was lost) is kept.
func (sl *Slot) OpenZKJob(ctx context.Context, j NewZKJob) error {
	defer sl.Release(ctx)
	if _, err := sl.tx.Exec(ctx, `INSERT INTO zk_jobs (id, account_id, proof_type, chain_id, vk_hash, status) VALUES ($1, $2, $3, $4, $5, $6)
		ON CONFLICT (id) DO NOTHING`, j.ID, j.AccountID, j.ProofType, j.ChainID, j.VKHash, j.Status); err != nil {
		return err
	}
	return sl.tx.Commit(ctx)
}

// ZKJobExists says whether job id's row was written.
func (s *Store) ZKJobExists(ctx context.Context, id string) (bool, error) {
	var ok bool
	err := s.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM zk_jobs WHERE id = $1)`, id).Scan(&ok)
	return ok, err
}

// CloseZKJob writes a job's final state.
func (s *Store) CloseZKJob(ctx context.Context, id, status, reason string, state json.RawMessage) error {
	_, err := s.pool.Exec(ctx, `UPDATE zk_jobs SET status = $2, reason = $3, state = $4, updated_at = now(), closed_at = coalesce(closed_at, now()) WHERE id = $1`,
		id, status, reason, state)
	return err
}

// MarkZKJob mirrors a running job's state into its row, so its status is
// read from the row rather than asked of its workflow. A closed job's row
// is left as its close wrote it.
func (s *Store) MarkZKJob(ctx context.Context, id, status string, state json.RawMessage) error {
	_, err := s.pool.Exec(ctx, `UPDATE zk_jobs SET status = $2, state = $3, updated_at = now() WHERE id = $1 AND closed_at IS NULL`,
		id, status, state)
	return err
}

// ZKJob is a job's row.
type ZKJob struct {
	ID        string
	AccountID string
	ProofType string
	ChainID   *int64
	VKHash    string
	Status    string
	Reason    string
	State     json.RawMessage
	CreatedAt time.Time
	UpdatedAt time.Time
	Closed    bool
}

// ZKJob reads job id's row.
func (s *Store) ZKJob(ctx context.Context, id string) (ZKJob, error) {
	var j ZKJob
	var closed *time.Time
	err := s.pool.QueryRow(ctx, `SELECT id, account_id, proof_type, chain_id, vk_hash, status, reason, state, created_at, updated_at, closed_at FROM zk_jobs WHERE id = $1`, id).
		Scan(&j.ID, &j.AccountID, &j.ProofType, &j.ChainID, &j.VKHash, &j.Status, &j.Reason, &j.State, &j.CreatedAt, &j.UpdatedAt, &closed)
	if errors.Is(err, pgx.ErrNoRows) {
		return j, ErrNotFound
	}
	j.Closed = closed != nil
	return j, err
}
