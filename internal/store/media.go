package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"conduit/internal/mediakind"
	"conduit/internal/money"
)

// MediaRequest is a render as sold, stored as JSON in media_runs.request.
type MediaRequest = mediakind.Request

// MediaRun is a row of media_runs.
type MediaRun struct {
	RunID       string
	Kind        string
	Status      string
	Request     MediaRequest
	RequestHash string
	Network     string
	Payer       string
	AccountID   string
	Transaction string
	Paid        money.Micros
	Price       money.Micros
	HoldID      string
	FileKey     string
	Note        string
	Reason      string
	Error       string
	FailedStep  string
	Message     string
	RetryOf     string
	RetriedBy   string
	DeliveredAt *time.Time
	StartedAt   time.Time
	FinishedAt  *time.Time
	// Balance is the paying wallet's spendable credit, read with the row.
	Balance money.Micros
}

// Finished says the run reached a final state.
func (r MediaRun) Finished() bool { return r.Status != "running" }

// Failed says the run ended without a file.
func (r MediaRun) Failed() bool { return r.Status == "error" || r.Status == "partial" }

const mediaCols = `m.run_id, m.kind, m.status, m.request, m.request_hash, m.network, m.payer, m.account_id, coalesce(m.transaction, ''),
	m.paid_micros, m.price_micros, m.hold_id, coalesce(m.file_key, ''), m.note, m.reason, m.error, m.failed_step, m.message,
	coalesce(m.retry_of, ''), coalesce(m.retried_by, ''), m.delivered_at, m.started_at, m.finished_at, a.balance_micros`

const mediaFrom = ` FROM media_runs m JOIN accounts a ON a.id = m.account_id `

func scanMediaRun(row pgx.Row) (MediaRun, error) {
	var r MediaRun
	err := row.Scan(&r.RunID, &r.Kind, &r.Status, &r.Request, &r.RequestHash, &r.Network, &r.Payer, &r.AccountID, &r.Transaction,
		&r.Paid, &r.Price, &r.HoldID, &r.FileKey, &r.Note, &r.Reason, &r.Error, &r.FailedStep, &r.Message,
		&r.RetryOf, &r.RetriedBy, &r.DeliveredAt, &r.StartedAt, &r.FinishedAt, &r.Balance)
	if errors.Is(err, pgx.ErrNoRows) {
		return r, ErrNotFound
	}
	return r, err
}

// NewMediaRun is a render to record.
type NewMediaRun struct {
	RunID       string
	Kind        string
	Request     MediaRequest
	RequestHash string
	Network     string
	Payer       string
	Transaction string // the settled payment (paid runs)
	Paid        money.Micros
	Price       money.Micros
	StartedAt   time.Time
}

// OpenPaidMediaRun records a paid render in one transaction: the payment
// is credited to the paying wallet's account (once per transaction), the
// price is held from it, and the run is written. Opening the same run
// again returns it unchanged.
func (s *Store) OpenPaidMediaRun(ctx context.Context, n NewMediaRun) (MediaRun, error) {
	if n.Transaction == "" || n.Paid <= 0 {
		return MediaRun{}, errors.New("a paid run needs its settled transaction and amount")
	}
	var run MediaRun
	err := s.inTx(ctx, func(ctx context.Context, tx pgx.Tx) error {
		if r, err := scanMediaRun(tx.QueryRow(ctx, `SELECT `+mediaCols+mediaFrom+`WHERE m.run_id = $1`, n.RunID)); err == nil {
			run = r
			return nil
		} else if !errors.Is(err, ErrNotFound) {
			return err
		}
		acct, err := walletAccountTx(ctx, tx, n.Network, n.Payer)
		if err != nil {
			return err
		}
		if _, err := grantTx(ctx, tx, acct.ID, EntryPayment, n.Paid, "payment/"+n.Network+"/"+n.Transaction, n.Kind+" "+n.RunID); err != nil {
			return err
		}
		return insertMediaRun(ctx, tx, acct.ID, n, "", &run)
	})
	return run, err
}

// CreditPayment credits a settled payment to the paying wallet's account
// without opening its run (the run could not be recorded), under the same
// ledger key OpenPaidMediaRun uses, so it is credited once at most.
func (s *Store) CreditPayment(ctx context.Context, n NewMediaRun) error {
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		acct, err := walletAccountTx(ctx, tx, n.Network, n.Payer)
		if err != nil {
			return err
		}
		_, err = grantTx(ctx, tx, acct.ID, EntryPayment, n.Paid, "payment/"+n.Network+"/"+n.Transaction, n.Kind+" "+n.RunID+" (not opened)")
		return err
	})
}

func insertMediaRun(ctx context.Context, tx pgx.Tx, account string, n NewMediaRun, retryOf string, out *MediaRun) error {
	hold, err := holdTx(ctx, tx, account, n.Price, "render/"+n.RunID)
	if err != nil {
		return err
	}
	_, err = tx.Exec(ctx, `
		INSERT INTO media_runs (run_id, kind, status, request, request_hash, network, payer, account_id, transaction,
			paid_micros, price_micros, hold_id, retry_of, started_at)
		VALUES ($1, $2, 'running', $3, $4, $5, $6, $7, nullif($8, ''), $9, $10, $11, nullif($12, ''), $13)`,
		n.RunID, n.Kind, n.Request, n.RequestHash, n.Network, n.Payer, account, n.Transaction, n.Paid, n.Price, hold, retryOf, n.StartedAt)
	if err != nil {
		return err
	}
	if retryOf != "" {
		if _, err := tx.Exec(ctx, `UPDATE media_runs SET retried_by = $2 WHERE run_id = $1`, retryOf, n.RunID); err != nil {
			return err
		}
	}
	r, err := scanMediaRun(tx.QueryRow(ctx, `SELECT `+mediaCols+mediaFrom+`WHERE m.run_id = $1`, n.RunID))
	*out = r
	return err
}

// RetryWhy says why a run cannot be retried; internal/paycall turns it
// into the caller's refusal. The values travel in recorded workflow
// histories (the render's admission): they never change.
type RetryWhy string

// Why a run cannot be retried.
const (
	RetryRendering    RetryWhy = "rendering"
	RetryCollecting   RetryWhy = "collecting"
	RetrySucceeded    RetryWhy = "succeeded"
	RetryRetried      RetryWhy = "retried"
	RetryNotFailed    RetryWhy = "not failed"
	RetryInsufficient RetryWhy = "insufficient"
)

// RetryRefusal says why a failed run cannot be retried now.
type RetryRefusal struct {
	Why       RetryWhy
	RetriedBy string
	Balance   money.Micros
	Price     money.Micros
}

func (e *RetryRefusal) Error() string { return "retry refused: " + string(e.Why) }

// OpenRetryMediaRun records the one retry of a failed run: in one
// transaction it checks the old run may be retried, holds the price from
// the paying wallet's balance and links the two runs. Opening the same
// retry again returns it unchanged; anything that stops it is a
// *RetryRefusal and writes nothing.
func (s *Store) OpenRetryMediaRun(ctx context.Context, oldRunID string, n NewMediaRun) (MediaRun, error) {
	var run MediaRun
	err := s.inTx(ctx, func(ctx context.Context, tx pgx.Tx) error {
		if r, err := scanMediaRun(tx.QueryRow(ctx, `SELECT `+mediaCols+mediaFrom+`WHERE m.run_id = $1`, n.RunID)); err == nil {
			run = r
			return nil
		} else if !errors.Is(err, ErrNotFound) {
			return err
		}
		old, err := scanMediaRun(tx.QueryRow(ctx, `SELECT `+mediaCols+mediaFrom+`WHERE m.run_id = $1 FOR UPDATE OF m`, oldRunID))
		if err != nil {
			return err
		}
		if why := RetryBlocked(old); why != "" {
			return &RetryRefusal{Why: why, RetriedBy: old.RetriedBy}
		}
		n.Network, n.Payer, n.Transaction, n.Paid = old.Network, old.Payer, "", 0
		err = insertMediaRun(ctx, tx, old.AccountID, n, oldRunID, &run)
		if errors.Is(err, ErrInsufficientCredit) {
			return &RetryRefusal{Why: RetryInsufficient, Balance: old.Balance, Price: n.Price}
		}
		return err
	})
	return run, err
}

// RetryBlocked says why a run cannot be retried ("" when it can): only a
// failed run, once. OpenRetryMediaRun checks it again under the row's lock.
func RetryBlocked(r MediaRun) RetryWhy {
	switch {
	case r.RetriedBy != "":
		return RetryRetried
	case r.Status == "success":
		return RetrySucceeded
	case r.Status == "running" && r.Note != "":
		return RetryCollecting
	case r.Status == "running":
		return RetryRendering
	case !r.Failed():
		return RetryNotFailed
	}
	return ""
}

// MediaRun reads one run with its wallet's balance.
func (s *Store) MediaRun(ctx context.Context, runID string) (MediaRun, error) {
	return scanMediaRun(s.pool.QueryRow(ctx, `SELECT `+mediaCols+mediaFrom+`WHERE m.run_id = $1`, runID))
}

// SetMediaNote marks a running render as late but still being collected.
func (s *Store) SetMediaNote(ctx context.Context, runID, note string) error {
	_, err := s.pool.Exec(ctx, `UPDATE media_runs SET note = $2 WHERE run_id = $1 AND status = 'running'`, runID, note)
	return err
}

// MediaResult is how a render ended.
type MediaResult struct {
	RunID      string
	Status     string // success, error or partial
	FileKey    string
	Reason     string
	Error      string
	FailedStep string
	Message    string
	FinishedAt time.Time
}

// FinishMediaRun records the end of a render with its money in one
// transaction: a success captures the held price, a failure releases it
// (nothing is ever charged for a failed render). Finishing again is a
// no-op.
func (s *Store) FinishMediaRun(ctx context.Context, res MediaResult) error {
	run, err := s.MediaRun(ctx, res.RunID)
	if err != nil {
		return err
	}
	if run.Finished() {
		return nil
	}
	update := func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `
			UPDATE media_runs SET status = $2, file_key = nullif($3, ''), reason = $4, error = $5, failed_step = $6, message = $7,
				finished_at = $8, note = CASE WHEN $2 = 'success' THEN '' ELSE note END
			WHERE run_id = $1 AND status = 'running'`,
			res.RunID, res.Status, res.FileKey, res.Reason, res.Error, res.FailedStep, res.Message, res.FinishedAt)
		return err
	}
	switch res.Status {
	case "success":
		if res.FileKey == "" {
			return errors.New("a successful render needs its file")
		}
		return s.Capture(ctx, run.HoldID, run.Price, update)
	case "error", "partial":
		return s.Release(ctx, run.HoldID, update)
	}
	return fmt.Errorf("a render cannot finish as %q", res.Status)
}

// MarkMediaDelivered records that the finished file reached the caller
// (first time only).
func (s *Store) MarkMediaDelivered(ctx context.Context, runID string) error {
	_, err := s.pool.Exec(ctx, `UPDATE media_runs SET delivered_at = now() WHERE run_id = $1 AND status = 'success' AND delivered_at IS NULL`, runID)
	return err
}

// MarkMediaFileDelivered is MarkMediaDelivered by the file's key (a
// download).
func (s *Store) MarkMediaFileDelivered(ctx context.Context, fileKey string) error {
	_, err := s.pool.Exec(ctx, `UPDATE media_runs SET delivered_at = now() WHERE file_key = $1 AND status = 'success' AND delivered_at IS NULL`, fileKey)
	return err
}

// UndeliveredPurchase finds the wallet's latest successful run of the same
// request whose file never reached it.
func (s *Store) UndeliveredPurchase(ctx context.Context, network, payer, kind, requestHash string) (MediaRun, error) {
	return scanMediaRun(s.pool.QueryRow(ctx, `SELECT `+mediaCols+mediaFrom+`
		WHERE m.network = $1 AND m.payer = $2 AND m.kind = $3 AND m.request_hash = $4 AND m.status = 'success' AND m.delivered_at IS NULL
		ORDER BY m.started_at DESC LIMIT 1`, network, payer, kind, requestHash))
}

// MediaRunsByPayer lists a wallet's runs, newest first.
func (s *Store) MediaRunsByPayer(ctx context.Context, network, payer string, limit int) ([]MediaRun, error) {
	return queryList(ctx, s, scanMediaRun, `SELECT `+mediaCols+mediaFrom+`
		WHERE m.network = $1 AND m.payer = $2 ORDER BY m.started_at DESC, m.run_id DESC LIMIT $3`, network, payer, limit)
}
