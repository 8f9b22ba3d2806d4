package store

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// RedactionProxy is a row of redaction_proxies (internal/redactproxy owns
// the rules; Policy and Models are its JSON).
type RedactionProxy struct {
	ID, AccountID, Name, Style, BaseURL, APIVersion, DefaultModel, Output string
	Models, Policy                                                        []byte
	// UpstreamKey is sealed; nil when none is stored.
	UpstreamKey          []byte
	Audit                bool
	CreatedAt, UpdatedAt time.Time
}

const proxyCols = `id, account_id, name, style, base_url, api_version, default_model, output, models, policy, upstream_key, audit, created_at, updated_at`

func scanProxy(row pgx.Row) (RedactionProxy, error) {
	var p RedactionProxy
	err := row.Scan(&p.ID, &p.AccountID, &p.Name, &p.Style, &p.BaseURL, &p.APIVersion, &p.DefaultModel, &p.Output,
		&p.Models, &p.Policy, &p.UpstreamKey, &p.Audit, &p.CreatedAt, &p.UpdatedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return p, ErrNotFound
	}
	return p, err
}

// ErrNameTaken: another live proxy of the account has this name.
var ErrNameTaken = errors.New("name taken")

func nameTaken(err error) error {
	var pe *pgconn.PgError
	if errors.As(err, &pe) && pe.Code == "23505" {
		return ErrNameTaken
	}
	return err
}

// CreateRedactionProxy stores a new proxy, refusing it when the account
// already has max live proxies (checked under the account's row lock).
func (s *Store) CreateRedactionProxy(ctx context.Context, p RedactionProxy, max int) (RedactionProxy, error) {
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT 1 FROM accounts WHERE id = $1 FOR UPDATE`, p.AccountID); err != nil {
			return err
		}
		var n int
		if err := tx.QueryRow(ctx, `SELECT count(*) FROM redaction_proxies WHERE account_id = $1 AND deleted_at IS NULL`, p.AccountID).Scan(&n); err != nil {
			return err
		}
		if n >= max {
			return ErrLimit
		}
		_, err := tx.Exec(ctx, `INSERT INTO redaction_proxies (id, account_id, name, style, base_url, api_version, default_model, output, models, policy, upstream_key, audit)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)`,
			p.ID, p.AccountID, p.Name, p.Style, p.BaseURL, p.APIVersion, p.DefaultModel, p.Output, p.Models, p.Policy, p.UpstreamKey, p.Audit)
		return nameTaken(err)
	})
	if err != nil {
		return RedactionProxy{}, err
	}
	return s.RedactionProxy(ctx, p.AccountID, p.ID)
}

// ErrLimit: the account holds as many of these as it may.
var ErrLimit = errors.New("limit reached")

// RedactionProxy reads one live proxy of the account (another account's
// is ErrNotFound, like a missing one).
func (s *Store) RedactionProxy(ctx context.Context, accountID, id string) (RedactionProxy, error) {
	return scanProxy(s.pool.QueryRow(ctx, `SELECT `+proxyCols+` FROM redaction_proxies WHERE id = $1 AND account_id = $2 AND deleted_at IS NULL`, id, accountID))
}

// RedactionProxyByName reads a live proxy by its name.
func (s *Store) RedactionProxyByName(ctx context.Context, accountID, name string) (RedactionProxy, error) {
	return scanProxy(s.pool.QueryRow(ctx, `SELECT `+proxyCols+` FROM redaction_proxies WHERE name = $1 AND account_id = $2 AND deleted_at IS NULL`, name, accountID))
}

// RedactionProxies lists the account's live proxies, oldest first, after
// the given id (paging), at most limit.
func (s *Store) RedactionProxies(ctx context.Context, accountID, after string, limit int) ([]RedactionProxy, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+proxyCols+` FROM redaction_proxies
		WHERE account_id = $1 AND deleted_at IS NULL AND ($2 = '' OR (created_at, id) > (SELECT created_at, id FROM redaction_proxies WHERE id = $2 AND account_id = $1))
		ORDER BY created_at, id LIMIT $3`, accountID, after, limit)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []RedactionProxy
	for rows.Next() {
		p, err := scanProxy(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, rows.Err()
}

// UpdateRedactionProxy writes every field of p (its key only when
// keepKey is false).
func (s *Store) UpdateRedactionProxy(ctx context.Context, p RedactionProxy, keepKey bool) (RedactionProxy, error) {
	tag, err := s.pool.Exec(ctx, `UPDATE redaction_proxies SET name = $3, style = $4, base_url = $5, api_version = $6, default_model = $7,
		output = $8, models = $9, policy = $10, upstream_key = CASE WHEN $12 THEN upstream_key ELSE $11 END, audit = $13, updated_at = now()
		WHERE id = $1 AND account_id = $2 AND deleted_at IS NULL`,
		p.ID, p.AccountID, p.Name, p.Style, p.BaseURL, p.APIVersion, p.DefaultModel, p.Output, p.Models, p.Policy, p.UpstreamKey, keepKey, p.Audit)
	if err != nil {
		return RedactionProxy{}, nameTaken(err)
	}
	if tag.RowsAffected() == 0 {
		return RedactionProxy{}, ErrNotFound
	}
	return s.RedactionProxy(ctx, p.AccountID, p.ID)
}

// DeleteRedactionProxy marks a proxy deleted and forgets its upstream key.
func (s *Store) DeleteRedactionProxy(ctx context.Context, accountID, id string) error {
	tag, err := s.pool.Exec(ctx, `UPDATE redaction_proxies SET deleted_at = now(), upstream_key = NULL WHERE id = $1 AND account_id = $2 AND deleted_at IS NULL`, id, accountID)
	if err != nil {
		return err
	}
	if tag.RowsAffected() == 0 {
		return ErrNotFound
	}
	return nil
}

// RedactionLogEntry is a row of redaction_log.
type RedactionLogEntry struct {
	AccountID      string
	Seq            int64
	ID             string
	At             time.Time
	KeyID, ProxyID string
	Source         string
	Counts         []byte
	UpstreamStatus int
	LatencyMs      int64
	PrevHash, Hash string
}

const logCols = `account_id, seq, id, at, key_id, proxy_id, source, counts, upstream_status, latency_ms, prev_hash, hash`

func scanLog(row pgx.Row) (RedactionLogEntry, error) {
	var e RedactionLogEntry
	err := row.Scan(&e.AccountID, &e.Seq, &e.ID, &e.At, &e.KeyID, &e.ProxyID, &e.Source, &e.Counts, &e.UpstreamStatus, &e.LatencyMs, &e.PrevHash, &e.Hash)
	return e, err
}

// AppendRedactionLog appends an entry to the account's chain: under the
// head's row lock it reads the previous hash, lets seal compute the new
// entry's hash from it, and writes the entry and the new head together.
func (s *Store) AppendRedactionLog(ctx context.Context, e RedactionLogEntry, seal func(e *RedactionLogEntry)) (RedactionLogEntry, error) {
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `INSERT INTO redaction_log_heads (account_id, seq, hash) VALUES ($1, 0, '') ON CONFLICT DO NOTHING`, e.AccountID); err != nil {
			return err
		}
		if err := tx.QueryRow(ctx, `SELECT seq, hash FROM redaction_log_heads WHERE account_id = $1 FOR UPDATE`, e.AccountID).Scan(&e.Seq, &e.PrevHash); err != nil {
			return err
		}
		e.Seq++
		seal(&e)
		if _, err := tx.Exec(ctx, `INSERT INTO redaction_log (`+logCols+`) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)`,
			e.AccountID, e.Seq, e.ID, e.At, e.KeyID, e.ProxyID, e.Source, e.Counts, e.UpstreamStatus, e.LatencyMs, e.PrevHash, e.Hash); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `UPDATE redaction_log_heads SET seq = $2, hash = $3 WHERE account_id = $1`, e.AccountID, e.Seq, e.Hash)
		return err
	})
	return e, err
}

// RedactionLogFilter narrows a page of the log; zero fields match all.
type RedactionLogFilter struct {
	ProxyID, Source string
	Since, Until    time.Time
	// Before is the paging position: entries with a lower seq (newest first).
	Before int64
	Limit  int
}

// RedactionLog lists the account's entries, newest first.
func (s *Store) RedactionLog(ctx context.Context, accountID string, f RedactionLogFilter) ([]RedactionLogEntry, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+logCols+` FROM redaction_log WHERE account_id = $1
		AND ($2 = '' OR proxy_id = $2) AND ($3 = '' OR source = $3)
		AND ($4::timestamptz IS NULL OR at >= $4) AND ($5::timestamptz IS NULL OR at < $5)
		AND ($6::bigint = 0 OR seq < $6::bigint) ORDER BY seq DESC LIMIT $7`,
		accountID, f.ProxyID, f.Source, nullTime(f.Since), nullTime(f.Until), f.Before, f.Limit)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []RedactionLogEntry
	for rows.Next() {
		e, err := scanLog(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	return out, rows.Err()
}

func nullTime(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}

// RedactionChain walks the account's whole chain in order, and answers
// the head (seq 0 and "" when the account has none).
func (s *Store) RedactionChain(ctx context.Context, accountID string, each func(RedactionLogEntry) error) (headSeq int64, headHash string, err error) {
	err = s.pool.QueryRow(ctx, `SELECT seq, hash FROM redaction_log_heads WHERE account_id = $1`, accountID).Scan(&headSeq, &headHash)
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return 0, "", err
	}
	rows, err := s.pool.Query(ctx, `SELECT `+logCols+` FROM redaction_log WHERE account_id = $1 ORDER BY seq`, accountID)
	if err != nil {
		return 0, "", err
	}
	defer rows.Close()
	for rows.Next() {
		e, err := scanLog(rows)
		if err != nil {
			return 0, "", err
		}
		if err := each(e); err != nil {
			return 0, "", err
		}
	}
	return headSeq, headHash, rows.Err()
}
