package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"conduit/internal/enclaves"
	"conduit/internal/tasks"
)

const taskCols = `t.id, t.account_id, t.enclave_id, t.name, t.description, t.schedule, t.timezone, t.request, t.overlap,
	t.catchup_seconds, t.jitter_seconds, t.failure_threshold, t.status, t.status_reason, t.consecutive_failures,
	COALESCE(e.wallet_address, ''), t.created_at, t.updated_at, t.deleted_at IS NOT NULL,
	r.id, r.started_at, r.outcome, r.duration_ms, r.http_status, r.result`

const taskFrom = ` FROM tasks t LEFT JOIN enclaves e ON e.id = t.enclave_id LEFT JOIN task_runs r ON r.id = t.last_run_id `

func scanTask(row pgx.Row) (tasks.Task, error) {
	var t tasks.Task
	var req []byte
	var status string
	var runID, outcome, result *string
	var started *time.Time
	var dur *int64
	var code *int
	err := row.Scan(&t.ID, &t.AccountID, &t.EnclaveID, &t.Name, &t.Description, &t.Schedule, &t.Timezone, &req, &t.Overlap,
		&t.CatchupSeconds, &t.JitterSeconds, &t.FailureThreshold, &status, &t.StatusReason, &t.ConsecutiveFailures,
		&t.WalletAddress, &t.CreatedAt, &t.UpdatedAt, &t.Deleted, &runID, &started, &outcome, &dur, &code, &result)
	if errors.Is(err, pgx.ErrNoRows) {
		return t, ErrNotFound
	}
	if err != nil {
		return t, err
	}
	t.Status = tasks.Status(status)
	if err := json.Unmarshal(req, &t.Request); err != nil {
		return t, fmt.Errorf("task %s: its request does not decode: %w", t.ID, err)
	}
	if runID != nil {
		t.LastRun = &tasks.LastRun{RunID: *runID, Time: *started, Outcome: *outcome, DurationMs: *dur, HTTPStatus: *code, Result: *result}
	}
	return t, nil
}

// NewTaskID makes a task id.
func NewTaskID() string { return NewID("task") }

// CreateTask stores a new task; creating the same id again answers the
// stored one.
func (s *Store) CreateTask(ctx context.Context, t tasks.Task) (tasks.Task, error) {
	if err := insertTask(ctx, s.pool, t); err != nil {
		return tasks.Task{}, err
	}
	return s.Task(ctx, t.ID)
}

func insertTask(ctx context.Context, q querier, t tasks.Task) error {
	req, _ := json.Marshal(t.Request)
	_, err := q.Exec(ctx, `
		INSERT INTO tasks (id, account_id, enclave_id, name, description, schedule, timezone, request, overlap,
			catchup_seconds, jitter_seconds, failure_threshold, status, status_reason)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14) ON CONFLICT (id) DO NOTHING`,
		t.ID, t.AccountID, t.EnclaveID, t.Name, t.Description, t.Schedule, t.Timezone, req, t.Overlap,
		t.CatchupSeconds, t.JitterSeconds, t.FailureThreshold, string(t.Status), t.StatusReason)
	return err
}

// Task reads one task, deleted or not (callers check ownership).
func (s *Store) Task(ctx context.Context, id string) (tasks.Task, error) {
	return scanTask(s.pool.QueryRow(ctx, `SELECT `+taskCols+taskFrom+`WHERE t.id = $1`, id))
}

// TaskFilter narrows a list; empty fields match everything.
type TaskFilter struct {
	EnclaveID string
	Status    tasks.Status
}

// Tasks lists the account's tasks (not deleted), oldest first.
func (s *Store) Tasks(ctx context.Context, account string, f TaskFilter) ([]tasks.Task, error) {
	return queryList(ctx, s, scanTask, `SELECT `+taskCols+taskFrom+`
		WHERE t.account_id = $1 AND t.deleted_at IS NULL AND ($2 = '' OR t.enclave_id = $2) AND ($3 = '' OR t.status = $3)
		ORDER BY t.created_at, t.id`, account, f.EnclaveID, string(f.Status))
}

// EnclaveTasks lists an enclave's tasks (not deleted).
func (s *Store) EnclaveTasks(ctx context.Context, enclaveID string) ([]tasks.Task, error) {
	return queryList(ctx, s, scanTask, `SELECT `+taskCols+taskFrom+`WHERE t.enclave_id = $1 AND t.deleted_at IS NULL ORDER BY t.id`, enclaveID)
}

// SaveTaskSpec writes a task's editable fields.
func (s *Store) SaveTaskSpec(ctx context.Context, t tasks.Task) (tasks.Task, error) {
	req, _ := json.Marshal(t.Request)
	tag, err := s.pool.Exec(ctx, `
		UPDATE tasks SET name = $2, description = $3, schedule = $4, timezone = $5, request = $6, overlap = $7,
			catchup_seconds = $8, jitter_seconds = $9, failure_threshold = $10, updated_at = now()
		WHERE id = $1 AND deleted_at IS NULL`,
		t.ID, t.Name, t.Description, t.Schedule, t.Timezone, req, t.Overlap, t.CatchupSeconds, t.JitterSeconds, t.FailureThreshold)
	if err != nil {
		return tasks.Task{}, err
	}
	if tag.RowsAffected() == 0 {
		return tasks.Task{}, ErrNotFound
	}
	return s.Task(ctx, t.ID)
}

// MoveTask sets a task's status and reason when its status is one of
// from; reset also zeroes its consecutive failures. It answers the task
// and whether it moved.
func (s *Store) MoveTask(ctx context.Context, id string, from []tasks.Status, to tasks.Status, reason string, reset bool) (tasks.Task, bool, error) {
	st := make([]string, len(from))
	for i, f := range from {
		st[i] = string(f)
	}
	tag, err := s.pool.Exec(ctx, `
		UPDATE tasks SET status = $2, status_reason = $3, updated_at = now(),
			consecutive_failures = CASE WHEN $4 THEN 0 ELSE consecutive_failures END
		WHERE id = $1 AND deleted_at IS NULL AND status = ANY($5)`, id, string(to), reason, reset, st)
	if err != nil {
		return tasks.Task{}, false, err
	}
	t, err := s.Task(ctx, id)
	return t, tag.RowsAffected() == 1, err
}

// DeleteTask marks a task deleted; its runs stay. It answers false when
// it was already deleted.
func (s *Store) DeleteTask(ctx context.Context, id string) (bool, error) {
	tag, err := s.pool.Exec(ctx, `UPDATE tasks SET deleted_at = now(), updated_at = now() WHERE id = $1 AND deleted_at IS NULL`, id)
	return tag.RowsAffected() == 1, err
}

// PurgeTask removes a task that never existed for its caller (its
// schedule could not be created).
func (s *Store) PurgeTask(ctx context.Context, id string) error {
	_, err := s.pool.Exec(ctx, `DELETE FROM tasks WHERE id = $1 AND NOT EXISTS (SELECT 1 FROM task_runs WHERE task_id = $1)`, id)
	return err
}

// RecordTaskRun writes a run once (a retried step changes nothing), makes
// it the task's last run, counts consecutive failures (a success resets
// them, a skipped run leaves them) and appends the enclave's lambda log
// entry (a failed run's also as an errors entry), in one transaction. It answers the task after the run and
// whether this call wrote it.
func (s *Store) RecordTaskRun(ctx context.Context, r tasks.Run, enclaveID string, log EnclaveLog) (tasks.Task, bool, error) {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return tasks.Task{}, false, err
	}
	defer func() { _ = tx.Rollback(ctx) }()
	tag, err := tx.Exec(ctx, `
		INSERT INTO task_runs (id, task_id, scheduled_at, started_at, duration_ms, outcome, http_status, result, truncated)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) ON CONFLICT (id) DO NOTHING`,
		r.ID, r.TaskID, r.ScheduledAt, r.StartedAt, r.DurationMs, r.Outcome, r.HTTPStatus, r.Result, r.Truncated)
	if err != nil {
		return tasks.Task{}, false, err
	}
	inserted := tag.RowsAffected() == 1
	if inserted {
		_, err = tx.Exec(ctx, `
			UPDATE tasks SET last_run_id = $2,
				consecutive_failures = CASE WHEN $3 = 'success' THEN 0 WHEN $3 = 'skipped' THEN consecutive_failures ELSE consecutive_failures + 1 END
			WHERE id = $1`, r.TaskID, r.ID, r.Outcome)
		if err != nil {
			return tasks.Task{}, false, err
		}
		// The enclave's record may be gone (deleted after it was
		// destroyed): the run is kept, the log entry has nowhere to go.
		_, err = tx.Exec(ctx, `
			INSERT INTO enclave_logs (enclave_id, at, type, source, stream, log_group, message)
			SELECT $1, $2, 'lambda', $3, $4, $5, $6 WHERE EXISTS (SELECT 1 FROM enclaves WHERE id = $1)`,
			enclaveID, r.StartedAt.Add(time.Duration(r.DurationMs)*time.Millisecond), log.Source, log.Stream, enclaves.LogGroup(enclaveID, "lambda"), log.Message)
		if err != nil {
			return tasks.Task{}, false, err
		}
		if tasks.Counts(r.Outcome) {
			_, err = tx.Exec(ctx, `
				INSERT INTO enclave_logs (enclave_id, at, type, source, stream, log_group, message)
				SELECT $1, $2, 'errors', $3, 'stderr', $4, $5 WHERE EXISTS (SELECT 1 FROM enclaves WHERE id = $1)`,
				enclaveID, r.StartedAt.Add(time.Duration(r.DurationMs)*time.Millisecond), log.Source, enclaves.LogGroup(enclaveID, "errors"), log.Message)
			if err != nil {
				return tasks.Task{}, false, err
			}
		}
	}
	if err := tx.Commit(ctx); err != nil {
		return tasks.Task{}, false, err
	}
	t, err := s.Task(ctx, r.TaskID)
	return t, inserted, err
}

// TaskRuns lists a task's newest runs first; outcome "" is every one.
func (s *Store) TaskRuns(ctx context.Context, taskID, outcome string, limit int) ([]tasks.Run, error) {
	return queryList(ctx, s, func(row pgx.Row) (tasks.Run, error) {
		var r tasks.Run
		err := row.Scan(&r.ID, &r.TaskID, &r.ScheduledAt, &r.StartedAt, &r.DurationMs, &r.Outcome, &r.HTTPStatus, &r.Result, &r.Truncated)
		return r, err
	}, `SELECT id, task_id, scheduled_at, started_at, duration_ms, outcome, http_status, result, truncated
		FROM task_runs WHERE task_id = $1 AND ($2 = '' OR outcome = $2) ORDER BY started_at DESC, id DESC LIMIT $3`, taskID, outcome, limit)
}
