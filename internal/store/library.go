package store

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"conduit/internal/money"
)

// Origins of a library item.
const (
	OriginGenerated = "generated"
	OriginImported  = "imported"
	OriginAssembled = "assembled"
	OriginEdited    = "edited"
)

// MediaItem is a row of media_items: one file of an account's library and
// where it came from.
type MediaItem struct {
	ID          string
	AccountID   string
	Kind        string // video, audio, image
	ContentType string
	Size        int64
	// Duration is nil for images; Width and Height are nil for audio.
	Duration *time.Duration
	Width    *int
	Height   *int
	HasAudio bool
	BlobKey  string
	Origin   string
	// Provenance: RunID, PipelineID and NodeID for generated items,
	// SourceURL for imported ones, SourceItems for assembled and edited
	// ones; Operation and Params say what was done (for generated items
	// the node kind and what it rendered with).
	RunID       string
	PipelineID  string
	NodeID      string
	SourceURL   string
	SourceItems []string
	Operation   string
	Params      json.RawMessage
	JobID       string
	Price       money.Micros
	CreatedAt   time.Time
}

const itemCols = `id, account_id, kind, content_type, size_bytes, duration_ms, width, height, has_audio, blob_key, origin,
	coalesce(run_id, ''), coalesce(pipeline_id, ''), coalesce(node_id, ''), coalesce(source_url, ''), source_items, operation, params,
	coalesce(job_id, ''), price_micros, created_at`

func scanItem(row pgx.Row) (MediaItem, error) {
	var it MediaItem
	var durMs *int64
	err := row.Scan(&it.ID, &it.AccountID, &it.Kind, &it.ContentType, &it.Size, &durMs, &it.Width, &it.Height, &it.HasAudio, &it.BlobKey, &it.Origin,
		&it.RunID, &it.PipelineID, &it.NodeID, &it.SourceURL, &it.SourceItems, &it.Operation, &it.Params, &it.JobID, &it.Price, &it.CreatedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return it, ErrNotFound
	}
	if durMs != nil {
		d := time.Duration(*durMs) * time.Millisecond
		it.Duration = &d
	}
	return it, err
}

// insertItemTx writes an item unless its id, its job or its run's node
// already made one (a retried step): an item is written once.
func insertItemTx(ctx context.Context, tx pgx.Tx, it MediaItem) error {
	var durMs *int64
	if it.Duration != nil {
		ms := it.Duration.Milliseconds()
		durMs = &ms
	}
	params := it.Params
	if len(params) == 0 {
		params = json.RawMessage(`{}`)
	}
	if it.SourceItems == nil {
		it.SourceItems = []string{}
	}
	_, err := tx.Exec(ctx, `
		INSERT INTO media_items (id, account_id, kind, content_type, size_bytes, duration_ms, width, height, has_audio, blob_key, origin,
			run_id, pipeline_id, node_id, source_url, source_items, operation, params, job_id, price_micros)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, nullif($12, ''), nullif($13, ''), nullif($14, ''), nullif($15, ''), $16, $17, $18, nullif($19, ''), $20)
		ON CONFLICT DO NOTHING`,
		it.ID, it.AccountID, it.Kind, it.ContentType, it.Size, durMs, it.Width, it.Height, it.HasAudio, it.BlobKey, it.Origin,
		it.RunID, it.PipelineID, it.NodeID, it.SourceURL, it.SourceItems, it.Operation, params, it.JobID, it.Price)
	return err
}

// MediaItem reads one of the account's items; another account's item is
// ErrNotFound, like a missing one.
func (s *Store) MediaItem(ctx context.Context, account, id string) (MediaItem, error) {
	return scanItem(s.pool.QueryRow(ctx, `SELECT `+itemCols+` FROM media_items WHERE id = $1 AND account_id = $2`, id, account))
}

// MediaItemPage lists the account's items newest first; kind and origin
// filter when not empty; after continues from a previous page's last item
// id.
func (s *Store) MediaItemPage(ctx context.Context, account, kind, origin, after string, limit int) ([]MediaItem, error) {
	return queryList(ctx, s, scanItem, `
		SELECT `+itemCols+` FROM media_items
		WHERE account_id = $1 AND ($2 = '' OR kind = $2) AND ($5 = '' OR origin = $5)
		  AND ($3 = '' OR (created_at, id) < (SELECT created_at, id FROM media_items WHERE id = $3 AND account_id = $1))
		ORDER BY created_at DESC, id DESC
		LIMIT $4`, account, kind, after, limit, origin)
}

// DeleteMediaItem removes one of the account's items. removeFile runs
// inside the transaction with the item's blob key: when it fails, the row
// stays, so an item is never listed without its file being removable
// again. Another account's item is ErrNotFound.
func (s *Store) DeleteMediaItem(ctx context.Context, account, id string, removeFile func(key string) error) (MediaItem, error) {
	var it MediaItem
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var err error
		it, err = scanItem(tx.QueryRow(ctx, `DELETE FROM media_items WHERE id = $1 AND account_id = $2 RETURNING `+itemCols, id, account))
		if err != nil {
			return err
		}
		return removeFile(it.BlobKey)
	})
	return it, err
}

// MediaJob is a row of media_jobs: an import, assembly or edit.
type MediaJob struct {
	ID          string
	AccountID   string
	Kind        string // import, assemble, edit
	Operation   string
	SourceItems []string
	SourceURL   string
	Params      json.RawMessage
	Status      string // running, success, error
	ItemID      string
	Error       string
	Price       money.Micros
	HoldID      string
	RequestHash string
	CreatedAt   time.Time
	FinishedAt  *time.Time
}

const jobCols = `id, account_id, kind, operation, source_items, coalesce(source_url, ''), params, status, coalesce(item_id, ''), error,
	price_micros, hold_id, request_hash, created_at, finished_at`

func scanJob(row pgx.Row) (MediaJob, error) {
	var j MediaJob
	err := row.Scan(&j.ID, &j.AccountID, &j.Kind, &j.Operation, &j.SourceItems, &j.SourceURL, &j.Params, &j.Status, &j.ItemID, &j.Error,
		&j.Price, &j.HoldID, &j.RequestHash, &j.CreatedAt, &j.FinishedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return j, ErrNotFound
	}
	return j, err
}

// NewMediaJob is what OpenMediaJob records.
type NewMediaJob struct {
	ID          string
	AccountID   string
	Kind        string
	Operation   string
	SourceItems []string
	SourceURL   string
	Params      json.RawMessage
	// Price is held from the account's credit with the job.
	Price          money.Micros
	IdempotencyKey string
	RequestHash    string
	CreatedAt      time.Time
	// ReserveBytes is the most the job may add to the account's library;
	// QuotaBytes is what the library may hold (0: no quota); MaxRunning is
	// how many jobs the account may have running (0: no bound).
	ReserveBytes int64
	QuotaBytes   int64
	MaxRunning   int
}

// Errors of OpenMediaJob; nothing is written with either.
var (
	// ErrMissingItems: a source item is not (or no longer) the account's.
	ErrMissingItems = errors.New("source items missing")
	// ErrJobsBusy: the account has MaxRunning jobs running already.
	ErrJobsBusy = errors.New("too many jobs running")
	// ErrMediaQuota: the job's output could overrun the account's quota.
	ErrMediaQuota = errors.New("media quota exceeded")
)

// OverQuota says how full the account's library is: Used bytes stored,
// Reserved by its running jobs, of Quota.
type OverQuota struct{ Used, Reserved, Quota int64 }

func (e *OverQuota) Error() string { return "media quota exceeded" }
func (e *OverQuota) Unwrap() error { return ErrMediaQuota }

// MissingItems names the source items that are not the account's.
type MissingItems struct{ IDs []string }

func (e *MissingItems) Error() string { return "source items missing" }
func (e *MissingItems) Unwrap() error { return ErrMissingItems }

// OpenMediaJob records a job and holds its price in one transaction, after
// checking its source items are the account's. It is the first step of
// the job's workflow and safe to repeat: a job already recorded is
// returned as it is (existing when it has finished, or when its
// idempotency key named an earlier job). A key first used with another
// request is ErrRequestMismatch (with that job); ErrInsufficientCredit and
// *MissingItems mean nothing was written.
func (s *Store) OpenMediaJob(ctx context.Context, n NewMediaJob) (job MediaJob, existing bool, err error) {
	if n.SourceItems == nil {
		n.SourceItems = []string{}
	}
	if len(n.Params) == 0 {
		n.Params = json.RawMessage(`{}`)
	}
	err = s.inTx(ctx, func(ctx context.Context, tx pgx.Tx) error {
		if n.IdempotencyKey != "" {
			if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtext('media-job/' || $1 || '/' || $2))`, n.AccountID, n.IdempotencyKey); err != nil {
				return err
			}
		}
		j, err := scanJob(tx.QueryRow(ctx, `SELECT `+jobCols+` FROM media_jobs WHERE id = $1`, n.ID))
		if err == nil {
			// A keyed job's id comes from its key: the same id with
			// another request is the key reused.
			job, existing = j, j.Status != "running"
			if j.RequestHash != n.RequestHash {
				existing = true
				return ErrRequestMismatch
			}
			return nil
		}
		if !errors.Is(err, ErrNotFound) {
			return err
		}
		if n.IdempotencyKey != "" {
			j, err := scanJob(tx.QueryRow(ctx, `SELECT `+jobCols+` FROM media_jobs WHERE account_id = $1 AND idempotency_key = $2`, n.AccountID, n.IdempotencyKey))
			if err == nil {
				job, existing = j, true
				if j.RequestHash != n.RequestHash {
					return ErrRequestMismatch
				}
				return nil
			}
			if !errors.Is(err, ErrNotFound) {
				return err
			}
		}
		if len(n.SourceItems) > 0 {
			rows, err := tx.Query(ctx, `
				SELECT want FROM unnest($2::text[]) AS want
				WHERE NOT EXISTS (SELECT 1 FROM media_items WHERE id = want AND account_id = $1)`, n.AccountID, n.SourceItems)
			if err != nil {
				return err
			}
			missing, err := pgx.CollectRows(rows, pgx.RowTo[string])
			if err != nil {
				return err
			}
			if len(missing) > 0 {
				return &MissingItems{IDs: missing}
			}
		}
		if err := admitShareTx(ctx, tx, n); err != nil {
			return err
		}
		holdID := ""
		if n.Price > 0 {
			if holdID, err = holdTx(ctx, tx, n.AccountID, n.Price, "media-job/"+n.ID); err != nil {
				return err
			}
		}
		var key *string
		if n.IdempotencyKey != "" {
			key = &n.IdempotencyKey
		}
		job, err = scanJob(tx.QueryRow(ctx, `
			INSERT INTO media_jobs (id, account_id, kind, operation, source_items, source_url, params, status, price_micros, hold_id,
				idempotency_key, request_hash, created_at, reserve_bytes)
			VALUES ($1, $2, $3, $4, $5, nullif($6, ''), $7, 'running', $8, $9, $10, $11, $12, $13)
			RETURNING `+jobCols, n.ID, n.AccountID, n.Kind, n.Operation, n.SourceItems, n.SourceURL, n.Params, n.Price, holdID,
			key, n.RequestHash, n.CreatedAt, max(n.ReserveBytes, 0)))
		return err
	})
	return job, existing, err
}

// admitShareTx applies the account's share of the library to a new job,
// under a lock per account so jobs admitted together are counted
// together: at most MaxRunning running, and the stored bytes plus what
// the running jobs and this one may add within QuotaBytes.
func admitShareTx(ctx context.Context, tx pgx.Tx, n NewMediaJob) error {
	if n.MaxRunning <= 0 && n.QuotaBytes <= 0 {
		return nil
	}
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtext('media-account/' || $1))`, n.AccountID); err != nil {
		return err
	}
	var running int
	var reserved, used int64
	if err := tx.QueryRow(ctx, `
		SELECT (SELECT count(*) FROM media_jobs WHERE account_id = $1 AND status = 'running'),
		       (SELECT coalesce(sum(reserve_bytes), 0) FROM media_jobs WHERE account_id = $1 AND status = 'running'),
		       (SELECT coalesce(sum(size_bytes), 0) FROM media_items WHERE account_id = $1)`, n.AccountID).Scan(&running, &reserved, &used); err != nil {
		return err
	}
	if n.MaxRunning > 0 && running >= n.MaxRunning {
		return ErrJobsBusy
	}
	if n.QuotaBytes > 0 && used+reserved+n.ReserveBytes > n.QuotaBytes {
		return &OverQuota{Used: used, Reserved: reserved, Quota: n.QuotaBytes}
	}
	return nil
}

// MediaUsage is how many bytes of files the account's library holds.
func (s *Store) MediaUsage(ctx context.Context, account string) (int64, error) {
	var n int64
	err := s.pool.QueryRow(ctx, `SELECT coalesce(sum(size_bytes), 0) FROM media_items WHERE account_id = $1`, account).Scan(&n)
	return n, err
}

// CountMediaJobs counts the account's jobs (tests: refused requests write
// none).
func (s *Store) CountMediaJobs(ctx context.Context, account string) (int, error) {
	var n int
	err := s.pool.QueryRow(ctx, `SELECT count(*) FROM media_jobs WHERE account_id = $1`, account).Scan(&n)
	return n, err
}

// MediaJobOf reads one of the account's jobs (another account's is
// ErrNotFound).
func (s *Store) MediaJobOf(ctx context.Context, account, id string) (MediaJob, error) {
	return scanJob(s.pool.QueryRow(ctx, `SELECT `+jobCols+` FROM media_jobs WHERE id = $1 AND account_id = $2`, id, account))
}

// MediaJobResult is how a job ended: with its item, or with an error.
type MediaJobResult struct {
	JobID      string
	Item       *MediaItem
	Error      string
	FinishedAt time.Time
	// Charge, when set, is what the job is charged (at most its hold): a
	// metered job's price of what it made, or of the work it did before
	// its deadline (a failure that still costs). Unset: a success costs
	// the job's price and a failure nothing (jobs admitted before jobs
	// were metered).
	Charge *money.Micros `json:",omitempty"`
}

// FinishMediaJob records how a job ended in one transaction: on success
// the item is written and the job's price captured, on failure the job
// keeps only its error and the hold is released (nothing charged, nothing
// in the library). Calling it again changes nothing.
func (s *Store) FinishMediaJob(ctx context.Context, res MediaJobResult) error {
	j, err := scanJob(s.pool.QueryRow(ctx, `SELECT `+jobCols+` FROM media_jobs WHERE id = $1`, res.JobID))
	if err != nil {
		return err
	}
	if j.Status != "running" {
		return nil // already finished: a retried activity
	}
	charge := money.Micros(0)
	switch {
	case res.Charge != nil:
		charge = min(max(*res.Charge, 0), j.Price)
	case res.Item != nil:
		charge = j.Price
	}
	if j.HoldID == "" {
		charge = 0 // nothing was held: a free job
	}
	write := func(tx pgx.Tx) error {
		if res.Item == nil {
			_, err := tx.Exec(ctx, `UPDATE media_jobs SET status = 'error', error = $2, finished_at = $3, price_micros = $4, reserve_bytes = 0
				WHERE id = $1 AND status = 'running'`, res.JobID, res.Error, res.FinishedAt, charge)
			return err
		}
		// The job says where the item came from: one record of provenance.
		it := *res.Item
		it.JobID, it.AccountID, it.Price = j.ID, j.AccountID, charge
		it.Operation, it.Params, it.SourceItems, it.SourceURL = j.Operation, j.Params, j.SourceItems, j.SourceURL
		it.Origin = map[string]string{"import": OriginImported, "assemble": OriginAssembled, "edit": OriginEdited}[j.Kind]
		if err := insertItemTx(ctx, tx, it); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `UPDATE media_jobs SET status = 'success', item_id = $2, finished_at = $3, price_micros = $4, reserve_bytes = 0
			WHERE id = $1 AND status = 'running'`, res.JobID, it.ID, res.FinishedAt, charge)
		return err
	}
	switch {
	case j.HoldID == "":
		return pgx.BeginFunc(ctx, s.pool, write)
	case charge > 0:
		return s.Capture(ctx, j.HoldID, charge, write)
	}
	return s.Release(ctx, j.HoldID, write)
}

// GeneratedItemID is the library item a run's generation node makes:
// derived from the run and the node, so every attempt of the render, and
// every replay of the workflow, names the same item.
func GeneratedItemID(runID, nodeID string) string {
	sum := sha256.Sum256([]byte(runID + "\x00" + nodeID))
	return "med_" + hex.EncodeToString(sum[:8])
}

// LibraryKey is where an item's file is kept in the blob store.
func LibraryKey(itemID, ext string) string { return "library/" + itemID + "." + ext }
