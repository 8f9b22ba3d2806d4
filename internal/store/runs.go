package store

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"conduit/internal/money"
	"conduit/internal/telemetry"
)

// Run is a row of the run history.
type Run struct {
	RunID          string
	PipelineID     string
	Version        int
	AccountID      string
	Kind           string
	Status         string
	IdempotencyKey *string
	// WorkflowID is the workflow that admitted and runs it.
	WorkflowID string
	// RequestHash binds an Idempotency-Key to the request it came with.
	RequestHash      string
	HoldID           string
	Inputs           map[string]string
	Outputs          map[string]string
	Nodes            json.RawMessage
	PromptTokens     int
	CompletionTokens int
	Cost             money.Micros
	Error            string
	StartedAt        time.Time
	FinishedAt       *time.Time
	DurationMs       *int64
}

// NewRun is what StartRun records.
type NewRun struct {
	RunID          string
	PipelineID     string
	Version        int
	AccountID      string
	Kind           string
	IdempotencyKey string // empty: none
	RequestHash    string
	WorkflowID     string
	Inputs         map[string]string
	StartedAt      time.Time
	// Hold is reserved from the account's credit with the run.
	Hold money.Micros
	// AdmitBy, when set, is the latest moment (by the database's clock) a
	// new run may be written: later, StartRun writes nothing and answers
	// ErrAdmissionExpired. A run an earlier attempt of the same step wrote
	// is still returned, so a step that ran again (its worker died after
	// writing) never leaves its run behind unanswered.
	AdmitBy time.Time
}

const runCols = `run_id, pipeline_id, version, account_id, kind, status, idempotency_key, workflow_id, request_hash, hold_id, inputs, outputs, nodes,
	prompt_tokens, completion_tokens, cost_micros, error, started_at, finished_at, duration_ms`

func scanRun(row pgx.Row) (Run, error) {
	var r Run
	err := row.Scan(&r.RunID, &r.PipelineID, &r.Version, &r.AccountID, &r.Kind, &r.Status, &r.IdempotencyKey, &r.WorkflowID, &r.RequestHash, &r.HoldID,
		&r.Inputs, &r.Outputs, &r.Nodes, &r.PromptTokens, &r.CompletionTokens, &r.Cost, &r.Error, &r.StartedAt, &r.FinishedAt, &r.DurationMs)
	if errors.Is(err, pgx.ErrNoRows) {
		return r, ErrNotFound
	}
	return r, err
}

// ErrRequestMismatch: the Idempotency-Key was first used with a
// different request on this pipeline.
var ErrRequestMismatch = errors.New("idempotency key reused with a different request")

// ErrAdmissionExpired: the run would be written after its NewRun.AdmitBy;
// nothing was written.
var ErrAdmissionExpired = errors.New("the run's admission expired")

// StartRun records an accepted run and holds its credit in one transaction.
// It is the first step of the run's workflow and may be retried: a run
// already recorded under n.RunID is returned as it is. With an idempotency
// key the account has used on this pipeline before, it returns that run
// instead (existing = true) and holds nothing, or ErrRequestMismatch
// (with that run) when the key came with another request. A run
// recorded under n.RunID that has already finished is existing too: a
// later execution of its workflow must answer it, not run it again.
// ErrInsufficientCredit and ErrAdmissionExpired mean nothing was written.
func (s *Store) StartRun(ctx context.Context, n NewRun) (run Run, existing bool, err error) {
	var key *string
	if n.IdempotencyKey != "" {
		key = &n.IdempotencyKey
	}
	admitted := false
	defer func() {
		if err == nil && admitted { // committed: counted once
			telemetry.RunAdmitted(int64(n.Hold))
		}
	}()
	var admitBy *time.Time
	if !n.AdmitBy.IsZero() {
		admitBy = &n.AdmitBy
	}
	holdID := ""
	if n.Hold > 0 { // a run without model nodes costs nothing and holds nothing
		holdID = NewID("hold")
	}
	args := []any{n.RunID, n.PipelineID, n.Version, n.AccountID, n.Kind, key, n.WorkflowID, n.RequestHash, holdID, n.Inputs, n.StartedAt, admitBy, n.Hold}
	if key == nil {
		// The usual case, a new run without an Idempotency-Key, is one
		// statement and one round trip: the admission, written only when
		// no run has this id yet. Everything else is the transaction
		// below, under the run's lock, which tells why: a run this step
		// wrote before, a refusal, an attempt racing another (the run's
		// primary key or its hold's idempotency key refuses the second
		// writer), or an error (a value the database refuses may belong
		// to a request whose run exists already and is answered as it is).
		if run, err = scanRun(s.pool.QueryRow(ctx, admitSQL(`NOT EXISTS (SELECT 1 FROM runs WHERE run_id = $1)`), args...)); err == nil {
			admitted = true
			return run, false, nil
		}
		if ctx.Err() != nil {
			return run, false, ctx.Err()
		}
	}
	err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if key != nil {
			// Serialise starts that share a key, so exactly one wins.
			if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtext($1 || '/' || $2 || '/' || $3))`, n.AccountID, n.PipelineID, *key); err != nil {
				return err
			}
		} else if !n.AdmitBy.IsZero() {
			// Serialise attempts of one run's step (a worker presumed dead
			// may still be running one), so a late attempt that writes
			// nothing cannot miss a run an earlier one is writing.
			if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtext('run/' || $1))`, n.RunID); err != nil {
				return err
			}
		}
		r, err := scanRun(tx.QueryRow(ctx, `SELECT `+runCols+` FROM runs WHERE run_id = $1`, n.RunID))
		if err == nil {
			// This step ran before: the run is open (a retry of this step)
			// or finished (a later execution of its workflow).
			run, existing = r, r.Status != "running"
			return nil
		}
		if !errors.Is(err, ErrNotFound) {
			return err
		}
		if key != nil {
			r, err := scanRun(tx.QueryRow(ctx, `SELECT `+runCols+` FROM runs WHERE account_id = $1 AND pipeline_id = $2 AND idempotency_key = $3`, n.AccountID, n.PipelineID, *key))
			if err == nil {
				run, existing = r, true
				if r.RequestHash != n.RequestHash {
					return ErrRequestMismatch
				}
				return nil
			}
			if !errors.Is(err, ErrNotFound) {
				return err
			}
		}
		run, err = scanRun(tx.QueryRow(ctx, admitSQL(`true`), args...))
		if !errors.Is(err, ErrNotFound) {
			admitted = err == nil
			return err
		}
		// Nothing was written (the rare path): say why.
		var late bool
		if err := tx.QueryRow(ctx, `SELECT $1::timestamptz IS NOT NULL AND clock_timestamp() > $1`, admitBy).Scan(&late); err != nil {
			return err
		}
		if late {
			return ErrAdmissionExpired
		}
		if err := accountExists(ctx, tx, n.AccountID); err != nil {
			return err
		}
		return ErrInsufficientCredit
	})
	return run, existing, err
}

// admitSQL is the admission as one statement: the run, and with a hold
// the debit, the hold and its ledger entry, all or nothing, and nothing
// once the database's clock is past AdmitBy ($12) or when cond is false.
// It answers the run written, or no row.
func admitSQL(cond string) string {
	return `
		WITH gate AS (
			SELECT ($12::timestamptz IS NULL OR clock_timestamp() <= $12) AND ` + cond + ` AS open
		), debit AS (
			UPDATE accounts SET balance_micros = balance_micros - $13
			WHERE id = $4 AND $13 > 0 AND balance_micros >= $13 AND (SELECT open FROM gate)
			RETURNING id
		), hold AS (
			INSERT INTO holds (id, account_id, amount_micros, status, idempotency_key)
			SELECT $9, id, $13, 'held', 'run/' || $1 FROM debit
			RETURNING id
		), entry AS (
			INSERT INTO ledger_entries (account_id, kind, amount_micros, idempotency_key, hold_id, reference)
			SELECT $4, '` + EntryHold + `', -$13, 'hold/' || id, id, 'run/' || $1 FROM hold
		)
		INSERT INTO runs (run_id, pipeline_id, version, account_id, kind, status, idempotency_key, workflow_id, request_hash, hold_id, inputs, started_at)
		SELECT $1, $2, $3, $4, $5, 'running', $6, $7, $8, $9, $10, $11
		WHERE (SELECT open FROM gate) AND ($13 = 0 OR EXISTS (SELECT 1 FROM hold))
		RETURNING ` + runCols
}

// Run reads one run.
func (s *Store) Run(ctx context.Context, runID string) (Run, error) {
	return scanRun(s.pool.QueryRow(ctx, `SELECT `+runCols+` FROM runs WHERE run_id = $1`, runID))
}

// RunPage lists a pipeline's runs newest first; status filters when not
// empty; after continues from a previous page's last run id.
func (s *Store) RunPage(ctx context.Context, pipelineID, status, after string, limit int) ([]Run, error) {
	return queryList(ctx, s, scanRun, `
		SELECT `+runCols+` FROM runs
		WHERE pipeline_id = $1 AND ($2 = '' OR status = $2)
		  AND ($3 = '' OR (started_at, run_id) < (SELECT started_at, run_id FROM runs WHERE run_id = $3))
		ORDER BY started_at DESC, run_id DESC
		LIMIT $4`, pipelineID, status, after, limit)
}

// RunResult is a finished run's record.
type RunResult struct {
	RunID            string
	Status           string
	Outputs          map[string]string
	Nodes            json.RawMessage
	PromptTokens     int
	CompletionTokens int
	Cost             money.Micros
	Error            string
	FinishedAt       time.Time
	// Media are the library items the run's generation nodes made; they
	// are written with the result, so an item is in the library exactly
	// when its price is charged.
	Media []MediaItem `json:",omitempty"`
}

// FinishRun writes the result (and the library items its generation nodes
// made) and settles the run's hold in one transaction: the run is charged
// res.Cost (at most what was held) and the rest released. The workflow
// decides the cost: a successful run's, or for any other outcome only the
// media its generation nodes made (zero without any), so a failed run
// without media is charged nothing. Calling it again (an activity retry)
// changes nothing.
func (s *Store) FinishRun(ctx context.Context, res RunResult) (err error) {
	finished := false
	defer func() {
		if err == nil && finished { // committed: counted once
			telemetry.RunFinished(res.Status)
		}
	}()
	if len(res.Media) == 0 && res.Cost >= 0 {
		// The usual case, an open run with a hold and no library items,
		// is one statement and one round trip (finishSQL). When it
		// changes nothing (the run is finished already, it holds nothing,
		// its hold is settled, the charge is more than the hold) or fails
		// (a result the database refuses, for a run that may have
		// finished already) the transaction below says why.
		to := "released"
		if res.Status == "success" || res.Cost > 0 {
			to = "captured"
		}
		var held int64
		err := s.pool.QueryRow(ctx, finishSQL, res.RunID, res.Status, res.Outputs, res.Nodes, res.PromptTokens, res.CompletionTokens,
			res.Cost, res.Error, res.FinishedAt, to).Scan(&held)
		if err == nil {
			finished = true
			telemetry.CreditSettled(held, int64(res.Cost))
			return nil
		}
		if ctx.Err() != nil {
			return err
		}
	}
	// One transaction: the run is read under its row lock, so a retried
	// activity racing the first attempt waits and then finds it finished.
	return s.inTx(ctx, func(ctx context.Context, tx pgx.Tx) error {
		r, err := scanRun(tx.QueryRow(ctx, `SELECT `+runCols+` FROM runs WHERE run_id = $1 FOR UPDATE`, res.RunID))
		if err != nil {
			return err
		}
		if r.Status != "running" {
			return nil // already finished: a retried activity
		}
		finished = true
		write := func(tx pgx.Tx) error {
			_, err := tx.Exec(ctx, `
				UPDATE runs SET status = $2, outputs = $3, nodes = $4, prompt_tokens = $5, completion_tokens = $6,
					cost_micros = $7, error = $8, finished_at = $9,
					duration_ms = (extract(epoch FROM ($9::timestamptz - started_at)) * 1000)::bigint
				WHERE run_id = $1 AND status = 'running'`,
				res.RunID, res.Status, res.Outputs, res.Nodes, res.PromptTokens, res.CompletionTokens, res.Cost, res.Error, res.FinishedAt)
			if err != nil {
				return err
			}
			for _, it := range res.Media {
				it.AccountID, it.RunID, it.PipelineID, it.Origin = r.AccountID, r.RunID, r.PipelineID, OriginGenerated
				if err := insertItemTx(ctx, tx, it); err != nil {
					return err
				}
			}
			return nil
		}
		switch {
		case r.HoldID == "":
			return write(tx)
		case res.Status == "success" || res.Cost > 0:
			return settleTx(ctx, tx, r.HoldID, "captured", res.Cost, write)
		}
		return settleTx(ctx, tx, r.HoldID, "released", 0, write)
	})
}

// finishSQL is FinishRun's usual case as one statement: the run locked
// while still running, its hold locked while still held and covering the
// charge ($7), then, exactly as settleTx does, the release entry, the
// charge entry (when there is a charge), the hold settled to $10, the
// balance given back what was not charged, and the result written. Its
// ledger entries carry settleTx's idempotency keys. It answers the hold's amount; no row: nothing
// changed.
const finishSQL = `
	WITH r AS (
		SELECT run_id, hold_id FROM runs WHERE run_id = $1 AND status = 'running' FOR UPDATE
	), h AS (
		SELECT holds.id, holds.account_id, holds.amount_micros FROM holds JOIN r ON holds.id = r.hold_id
		WHERE holds.status = 'held' AND holds.amount_micros >= $7
		FOR UPDATE OF holds
	), released AS (
		INSERT INTO ledger_entries (account_id, kind, amount_micros, idempotency_key, hold_id)
		SELECT account_id, '` + EntryRelease + `', amount_micros, 'hold/' || id || '/release', id FROM h
	), charged AS (
		INSERT INTO ledger_entries (account_id, kind, amount_micros, idempotency_key, hold_id)
		SELECT account_id, '` + EntryCharge + `', -$7, 'hold/' || id || '/charge', id FROM h WHERE $7 > 0
	), settled AS (
		UPDATE holds SET status = $10, charged_micros = $7, settled_at = now() FROM h WHERE holds.id = h.id
	), balance AS (
		UPDATE accounts SET balance_micros = balance_micros + h.amount_micros - $7 FROM h WHERE accounts.id = h.account_id
	)
	UPDATE runs SET status = $2, outputs = $3, nodes = $4, prompt_tokens = $5, completion_tokens = $6,
		cost_micros = $7, error = $8, finished_at = $9,
		duration_ms = (extract(epoch FROM ($9::timestamptz - started_at)) * 1000)::bigint
	FROM h WHERE runs.run_id = $1
	RETURNING h.amount_micros`

// ChargesForHold counts charge entries of a hold (tests: charged once).
func (s *Store) ChargesForHold(ctx context.Context, holdID string) (int, money.Micros, error) {
	var n int
	var sum money.Micros
	err := s.pool.QueryRow(ctx, `SELECT count(*), coalesce(-sum(amount_micros), 0)::bigint FROM ledger_entries WHERE hold_id = $1 AND kind = 'charge'`, holdID).Scan(&n, &sum)
	return n, sum, err
}

// AccountRunPage lists an account's runs of every pipeline newest first;
// pipelineID and status filter when not empty; after continues from a
// previous page's last run id (of the same account).
func (s *Store) AccountRunPage(ctx context.Context, account, pipelineID, status, after string, limit int) ([]Run, error) {
	return queryList(ctx, s, scanRun, `
		SELECT `+runCols+` FROM runs
		WHERE account_id = $1 AND ($2 = '' OR pipeline_id = $2) AND ($3 = '' OR status = $3)
		  AND ($4 = '' OR (started_at, run_id) < (SELECT started_at, run_id FROM runs WHERE run_id = $4 AND account_id = $1))
		ORDER BY started_at DESC, run_id DESC
		LIMIT $5`, account, pipelineID, status, after, limit)
}
