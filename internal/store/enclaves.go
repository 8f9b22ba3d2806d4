package store

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"conduit/internal/enclaves"
)

const enclaveCols = `id, account_id, name, description, provider_id, region, provider_config, source_type,
	registry_username, github_connected, github_username, github_repo, github_branch,
	built_image, built_commit, status, error_message, wallet_address, pcrs, endpoint, created_at, updated_at,
	last_failure, last_failure_attempt, last_failure_at`

func scanEnclave(row pgx.Row) (enclaves.Enclave, error) {
	var e enclaves.Enclave
	var cfg, pcrs []byte
	var status string
	var lastAt *time.Time
	err := row.Scan(&e.ID, &e.AccountID, &e.Name, &e.Description, &e.ProviderID, &e.Region, &cfg, &e.SourceType,
		&e.RegistryUsername, &e.GitHub.IsConnected, &e.GitHub.Username, &e.GitHub.SelectedRepo, &e.GitHub.SelectedBranch,
		&e.BuiltImage, &e.BuiltCommit, &status, &e.ErrorMessage, &e.WalletAddress, &pcrs, &e.Endpoint, &e.CreatedAt, &e.UpdatedAt,
		&e.LastFailure.Message, &e.LastFailure.Attempt, &lastAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return e, ErrNotFound
	}
	if err != nil {
		return e, err
	}
	e.Status = enclaves.Status(status)
	if lastAt != nil {
		e.LastFailure.At = *lastAt
	}
	_ = json.Unmarshal(cfg, &e.ProviderConfig)
	_ = json.Unmarshal(pcrs, &e.PCRs)
	return e, nil
}

// NewEnclave is a record to create; RegistrySecret and GitHubToken are
// already sealed.
type NewEnclave struct {
	ID             string
	AccountID      string
	Create         enclaves.Create
	RegistrySecret []byte
	GitHubToken    []byte
	Status         enclaves.Status
}

// NewEnclaveID makes an enclave id.
func NewEnclaveID() string { return NewID("enc") }

// CreateEnclave stores a new enclave; creating the same id again returns
// the stored record (activities retry).
func (s *Store) CreateEnclave(ctx context.Context, n NewEnclave) (enclaves.Enclave, error) {
	if err := insertEnclave(ctx, s.pool, n); err != nil {
		return enclaves.Enclave{}, err
	}
	return s.Enclave(ctx, n.ID)
}

func insertEnclave(ctx context.Context, q querier, n NewEnclave) error {
	c := n.Create
	cfg, _ := json.Marshal(c.ProviderConfig)
	var gh enclaves.GitHubCreate
	if c.GitHub != nil {
		gh = *c.GitHub
	}
	_, err := q.Exec(ctx, `
		INSERT INTO enclaves (id, account_id, name, description, provider_id, region, provider_config, source_type,
			registry_username, registry_secret, status,
			github_connected, github_username, github_repo, github_branch, github_token)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16) ON CONFLICT (id) DO NOTHING`,
		n.ID, n.AccountID, c.Name, c.Description, c.ProviderID, c.Region, cfg, c.SourceType,
		c.RegistryUsername, n.RegistrySecret, string(n.Status),
		len(n.GitHubToken) > 0, gh.Username, gh.SelectedRepo, gh.SelectedBranch, n.GitHubToken)
	return err
}

// Enclave reads one enclave (whoever owns it; callers check ownership).
func (s *Store) Enclave(ctx context.Context, id string) (enclaves.Enclave, error) {
	return scanEnclave(s.pool.QueryRow(ctx, `SELECT `+enclaveCols+` FROM enclaves WHERE id = $1`, id))
}

// EnclaveSecret reads an enclave's sealed registry secret.
func (s *Store) EnclaveSecret(ctx context.Context, id string) ([]byte, error) {
	var b []byte
	err := s.pool.QueryRow(ctx, `SELECT registry_secret FROM enclaves WHERE id = $1`, id).Scan(&b)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, ErrNotFound
	}
	return b, err
}

// EnclaveGitHubToken reads an enclave's sealed github token (nil: none).
func (s *Store) EnclaveGitHubToken(ctx context.Context, id string) ([]byte, error) {
	var b []byte
	err := s.pool.QueryRow(ctx, `SELECT github_token FROM enclaves WHERE id = $1`, id).Scan(&b)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, ErrNotFound
	}
	return b, err
}

// SetEnclaveBuild records the image a github source's build pushed and
// the commit it was built from (a rebuild overwrites them).
func (s *Store) SetEnclaveBuild(ctx context.Context, id, image, commit string) error {
	tag, err := s.pool.Exec(ctx, `UPDATE enclaves SET built_image = $2, built_commit = $3, updated_at = now() WHERE id = $1`, id, image, commit)
	if err == nil && tag.RowsAffected() == 0 {
		return ErrNotFound
	}
	return err
}

// Enclaves lists the account's enclaves, oldest first.
func (s *Store) Enclaves(ctx context.Context, account string) ([]enclaves.Enclave, error) {
	return queryList(ctx, s, scanEnclave, `SELECT `+enclaveCols+` FROM enclaves WHERE account_id = $1 ORDER BY created_at, id`, account)
}

// EnclaveProjection is what the lifecycle workflow writes.
type EnclaveProjection struct {
	ID            string
	Status        enclaves.Status
	ErrorMessage  string
	WalletAddress string
	PCRs          map[string]string
	Endpoint      string
}

// ProjectEnclave writes the workflow's view of an enclave. Empty fields
// other than the status keep their stored value, except that leaving a
// failure clears nothing: the error message stays until overwritten. The
// last failed attempt is cleared, unless the enclave failed: then it is why.
func (s *Store) ProjectEnclave(ctx context.Context, p EnclaveProjection) error {
	var pcrs []byte
	if p.PCRs != nil {
		pcrs, _ = json.Marshal(p.PCRs)
	}
	_, err := s.pool.Exec(ctx, `
		UPDATE enclaves SET status = $2,
			error_message = COALESCE(NULLIF($3, ''), error_message),
			wallet_address = COALESCE(NULLIF($4, ''), wallet_address),
			pcrs = COALESCE($5, pcrs),
			endpoint = $6,
			last_failure = CASE WHEN $2 = 'FAILED' THEN last_failure ELSE '' END,
			last_failure_attempt = CASE WHEN $2 = 'FAILED' THEN last_failure_attempt ELSE 0 END,
			last_failure_at = CASE WHEN $2 = 'FAILED' THEN last_failure_at END,
			updated_at = now()
		WHERE id = $1`, p.ID, string(p.Status), p.ErrorMessage, p.WalletAddress, pcrs, p.Endpoint)
	return err
}

// NoteEnclaveFailure records a provisioning step's failed attempt while the
// step is retried. Only an enclave still building or deploying takes the
// note: one that moved on is not marked with a stale failure.
func (s *Store) NoteEnclaveFailure(ctx context.Context, id string, attempt int, msg string) error {
	_, err := s.pool.Exec(ctx, `
		UPDATE enclaves SET last_failure = $2, last_failure_attempt = $3, last_failure_at = now(), updated_at = now()
		WHERE id = $1 AND status IN ('PENDING_BUILD', 'BUILDING', 'PENDING_DEPLOY', 'DEPLOYING')`, id, msg, attempt)
	return err
}

// PatchEnclave changes name, description and providerConfig while the
// status is one of allowed; it answers the record and whether it changed.
func (s *Store) PatchEnclave(ctx context.Context, id string, pt enclaves.Patch, allowed []enclaves.Status) (enclaves.Enclave, bool, error) {
	var cfg []byte
	if pt.ProviderConfig != nil {
		cfg, _ = json.Marshal(pt.ProviderConfig)
	}
	st := make([]string, len(allowed))
	for i, a := range allowed {
		st[i] = string(a)
	}
	e, err := scanEnclave(s.pool.QueryRow(ctx, `
		UPDATE enclaves SET name = COALESCE($2, name), description = COALESCE($3, description),
			provider_config = COALESCE($4, provider_config), updated_at = now()
		WHERE id = $1 AND status = ANY($5) RETURNING `+enclaveCols, id, pt.Name, pt.Description, cfg, st))
	if errors.Is(err, ErrNotFound) {
		e, err = s.Enclave(ctx, id)
		return e, false, err
	}
	return e, err == nil, err
}

// DeleteEnclave removes a DESTROYED or FAILED enclave with its logs; it
// answers false (and changes nothing) when the status is another.
func (s *Store) DeleteEnclave(ctx context.Context, id string) (bool, error) {
	tag, err := s.pool.Exec(ctx, `DELETE FROM enclaves WHERE id = $1 AND status IN ('DESTROYED', 'FAILED')`, id)
	return tag.RowsAffected() == 1, err
}

// EnclaveLog is an entry to append; AppSeq is set for application lines.
type EnclaveLog struct {
	Type    string
	Source  string
	Stream  string
	Message string
	At      time.Time
	AppSeq  *int64
}

// AppendEnclaveLogs appends entries; application lines already copied
// (same AppSeq) are skipped.
func (s *Store) AppendEnclaveLogs(ctx context.Context, id string, logs []EnclaveLog) error {
	if len(logs) == 0 {
		return nil
	}
	b := &pgx.Batch{}
	for _, l := range logs {
		at := l.At
		if at.IsZero() {
			at = time.Now()
		}
		b.Queue(`INSERT INTO enclave_logs (enclave_id, at, type, source, stream, log_group, message, app_seq)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8) ON CONFLICT DO NOTHING`,
			id, at, l.Type, l.Source, l.Stream, enclaves.LogGroup(id, l.Type), l.Message, l.AppSeq)
	}
	return s.pool.SendBatch(ctx, b).Close()
}

// LastAppSeq is the provider sequence number of the last application line
// copied (0 when none).
func (s *Store) LastAppSeq(ctx context.Context, id string) (int64, error) {
	var n int64
	err := s.pool.QueryRow(ctx, `SELECT COALESCE(max(app_seq), 0) FROM enclave_logs WHERE enclave_id = $1`, id).Scan(&n)
	return n, err
}

// EnclaveLogs lists the newest limit entries of a type ("all": every
// type kept here — stepfunctions entries are read from Temporal), oldest
// first.
func (s *Store) EnclaveLogs(ctx context.Context, id, typ string, limit int) ([]enclaves.LogEntry, error) {
	rows, err := s.pool.Query(ctx, `
		SELECT at, message, source, stream, log_group, type FROM (
			SELECT * FROM enclave_logs WHERE enclave_id = $1 AND ($2 = 'all' AND type <> 'stepfunctions' OR type = $2)
			ORDER BY seq DESC LIMIT $3) t ORDER BY seq`, id, typ, limit)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (enclaves.LogEntry, error) {
		var l enclaves.LogEntry
		err := r.Scan(&l.Timestamp, &l.Message, &l.Source, &l.Stream, &l.LogGroup, &l.Type)
		return l, err
	})
}

// PruneEnclaveLogs drops entries older than before.
func (s *Store) PruneEnclaveLogs(ctx context.Context, before time.Time) (int64, error) {
	tag, err := s.pool.Exec(ctx, `DELETE FROM enclave_logs WHERE at < $1`, before)
	return tag.RowsAffected(), err
}

// SetEnclaveDiskBytes records what the enclave's unpacked image takes on
// its provider's disk (0 once terminated).
func (s *Store) SetEnclaveDiskBytes(ctx context.Context, id string, n int64) error {
	_, err := s.pool.Exec(ctx, `UPDATE enclaves SET disk_bytes = $2 WHERE id = $1`, id, n)
	return err
}

// EnclaveDiskBytes is what the account's enclaves take on their providers'
// disks, as last recorded.
func (s *Store) EnclaveDiskBytes(ctx context.Context, account string) (int64, error) {
	var n int64
	err := s.pool.QueryRow(ctx, `SELECT COALESCE(SUM(disk_bytes), 0)::bigint FROM enclaves WHERE account_id = $1 AND status <> 'DESTROYED'`, account).Scan(&n)
	return n, err
}
