package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"conduit/internal/enclaves"
	"conduit/internal/errs"
	"conduit/internal/quota"
	"conduit/internal/tasks"
)

// quotaCounts counts what an account holds of each count-bounded
// resource: what still exists for it (an enclave until it is DESTROYED or
// FAILED, a task or key until deleted; pipelines are never deleted).
var quotaCounts = map[quota.Resource]string{
	quota.Enclaves:  `SELECT count(*) FROM enclaves WHERE account_id = $1 AND status NOT IN ('DESTROYED', 'FAILED')`,
	quota.Tasks:     `SELECT count(*) FROM tasks WHERE account_id = $1 AND deleted_at IS NULL`,
	quota.APIKeys:   `SELECT count(*) FROM api_keys WHERE account_id = $1 AND deleted_at IS NULL`,
	quota.Pipelines: `SELECT count(*) FROM pipelines WHERE account_id = $1`,
	// vault rows stay after a subject is deleted (its key destroyed)
	quota.PIISubjects: `SELECT count(*) FROM pii_subjects WHERE account_id = $1`,
	quota.PIITokens:   `SELECT count(*) FROM pii_tokens WHERE account_id = $1`,
}

// Count is account's use of r (quota.Counter).
func (s *Store) Count(ctx context.Context, account string, r quota.Resource) (int64, error) {
	return count(ctx, s.pool, account, r)
}

func count(ctx context.Context, q querier, account string, r quota.Resource) (int64, error) {
	sql, ok := quotaCounts[r]
	if !ok {
		return 0, fmt.Errorf("quota: %q is not counted by the store", r)
	}
	var n int64
	err := q.QueryRow(ctx, sql, account).Scan(&n)
	return n, err
}

// Slot is one place under an account's quota, held for one create: a
// transaction holding the account's lock for the resource, in which the
// count was taken and the insert will be made. Two creates of the same
// account and resource wait for each other, so the second counts the
// first's row: they cannot both take the last slot. Other accounts and
// resources never wait. A Slot is used once: its create commits it;
// Release (always deferred) rolls back one that was not.
type Slot struct {
	s  *Store
	tx pgx.Tx
}

// quotaLockWait bounds how long a create waits for another of the same
// account and resource (a flood of creates queues here, never for long).
const quotaLockWait = "10s"

// TakeSlot locks account's quota of r and counts its use: at limit (or
// over) it refuses with quota.Exceeded and holds nothing. limit 0 means
// no limit (the slot is still a transaction, so creates keep one path).
func (s *Store) TakeSlot(ctx context.Context, account string, r quota.Resource, limit int64) (*Slot, error) {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return nil, err
	}
	sl := &Slot{s: s, tx: tx}
	if limit <= 0 {
		return sl, nil
	}
	if err := lockQuota(ctx, tx, account, r); err != nil {
		sl.Release(ctx)
		return nil, err
	}
	n, err := count(ctx, tx, account, r)
	if err != nil {
		sl.Release(ctx)
		return nil, err
	}
	if n >= limit {
		sl.Release(ctx)
		return nil, quota.Exceeded(r, n, limit)
	}
	return sl, nil
}

// lockQuota takes account's lock for r in tx, held to the end of the
// transaction (the key is hashed into the advisory lock space); a create
// that waits longer than quotaLockWait is told to try again.
func lockQuota(ctx context.Context, tx pgx.Tx, account string, r quota.Resource) error {
	if _, err := tx.Exec(ctx, `SET LOCAL lock_timeout = '`+quotaLockWait+`'`); err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended($1, 0))`, "quota/"+string(r)+"/"+account); err != nil {
		var pgErr *pgconn.PgError
		if errors.As(err, &pgErr) && pgErr.Code == "55P03" { // lock_not_available: lock_timeout passed
			return &errs.Error{Kind: errs.Unavailable, Msg: "another create of the same kind for this account is under way; try again shortly", RetryAfter: 2 * time.Second}
		}
		return err
	}
	return nil
}

// Release gives the slot up (a rollback); after a create it does nothing.
func (sl *Slot) Release(ctx context.Context) {
	_ = sl.tx.Rollback(context.WithoutCancel(ctx))
}

// CreateEnclave is Store.CreateEnclave in the slot.
func (sl *Slot) CreateEnclave(ctx context.Context, n NewEnclave) (enclaves.Enclave, error) {
	if err := insertEnclave(ctx, sl.tx, n); err != nil {
		return enclaves.Enclave{}, err
	}
	if err := sl.tx.Commit(ctx); err != nil {
		return enclaves.Enclave{}, err
	}
	return sl.s.Enclave(ctx, n.ID)
}

// CreateTask is Store.CreateTask in the slot.
func (sl *Slot) CreateTask(ctx context.Context, t tasks.Task) (tasks.Task, error) {
	if err := insertTask(ctx, sl.tx, t); err != nil {
		return tasks.Task{}, err
	}
	if err := sl.tx.Commit(ctx); err != nil {
		return tasks.Task{}, err
	}
	return sl.s.Task(ctx, t.ID)
}

// CreateAPIKey is Store.CreateAPIKey in the slot.
func (sl *Slot) CreateAPIKey(ctx context.Context, k NewAPIKey) (APIKey, error) {
	key, err := insertAPIKey(ctx, sl.tx, k)
	if err != nil {
		return key, err
	}
	return key, sl.tx.Commit(ctx)
}

// CreatePipeline is Store.CreatePipeline in the slot.
func (sl *Slot) CreatePipeline(ctx context.Context, account, name string, draft json.RawMessage) (Pipeline, error) {
	p, err := insertPipeline(ctx, sl.tx, account, name, draft)
	if err != nil {
		return p, err
	}
	return p, sl.tx.Commit(ctx)
}
