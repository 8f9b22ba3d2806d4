package store

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"conduit/internal/quota"
)

// PIIToken is a row of pii_tokens.
type PIIToken struct {
	Token, SubjectID, Type string
	Deterministic          bool
	Ciphertext             []byte
	// Keyset is the subject's wrapped keyset; nil once shredded.
	Keyset []byte
}

// PIIAccountKey reads the account's deterministic keyset, creating it with
// make when the account has none yet (a concurrent creator's wins).
func (s *Store) PIIAccountKey(ctx context.Context, accountID string, make func() ([]byte, error)) ([]byte, error) {
	var ks []byte
	err := s.pool.QueryRow(ctx, `SELECT det_keyset FROM pii_account_keys WHERE account_id = $1`, accountID).Scan(&ks)
	if err == nil {
		return ks, nil
	}
	if !errors.Is(err, pgx.ErrNoRows) {
		return nil, err
	}
	fresh, err := make()
	if err != nil {
		return nil, err
	}
	if _, err := s.pool.Exec(ctx, `INSERT INTO pii_account_keys (account_id, det_keyset) VALUES ($1, $2) ON CONFLICT DO NOTHING`, accountID, fresh); err != nil {
		return nil, err
	}
	err = s.pool.QueryRow(ctx, `SELECT det_keyset FROM pii_account_keys WHERE account_id = $1`, accountID).Scan(&ks)
	return ks, err
}

// ErrShredded: the subject was deleted; its key is gone.
var ErrShredded = errors.New("subject shredded")

// IngestPII stores the tokens of one subject under the account's vault
// quotas (0: no limit). In one transaction holding the account's quota
// locks (subjects, then tokens): the subject is created with newKeyset
// when it does not exist (ErrShredded when it was deleted), seal makes the
// rows with the subject's wrapped keyset, the rows are inserted (an
// existing token of the subject is left as it is: deterministic tokens
// repeat), and a limit passed rolls everything back with
// quota.ExceededBy: a refusal writes nothing.
func (s *Store) IngestPII(ctx context.Context, accountID, subjectID string, subjectLimit, tokenLimit int64,
	newKeyset func() ([]byte, error), seal func(keyset []byte) ([]PIIToken, error)) error {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	for _, r := range []quota.Resource{quota.PIISubjects, quota.PIITokens} {
		if err := lockQuota(ctx, tx, accountID, r); err != nil {
			return err
		}
	}
	var ks []byte
	var shredded *time.Time
	err = tx.QueryRow(ctx, `SELECT keyset, shredded_at FROM pii_subjects WHERE account_id = $1 AND subject_id = $2`, accountID, subjectID).Scan(&ks, &shredded)
	switch {
	case err == nil && shredded != nil:
		return ErrShredded
	case errors.Is(err, pgx.ErrNoRows):
		if ks, err = newKeyset(); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `INSERT INTO pii_subjects (account_id, subject_id, keyset) VALUES ($1, $2, $3)`, accountID, subjectID, ks); err != nil {
			return err
		}
		if err := overQuota(ctx, tx, accountID, quota.PIISubjects, subjectLimit, 1); err != nil {
			return err
		}
	case err != nil:
		return err
	}
	rows, err := seal(ks)
	if err != nil {
		return err
	}
	var added int64
	for _, t := range rows {
		tag, err := tx.Exec(ctx, `INSERT INTO pii_tokens (account_id, token, subject_id, type, deterministic, ciphertext)
			VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT DO NOTHING`, accountID, t.Token, subjectID, t.Type, t.Deterministic, t.Ciphertext)
		if err != nil {
			return err
		}
		added += tag.RowsAffected()
	}
	if err := overQuota(ctx, tx, accountID, quota.PIITokens, tokenLimit, added); err != nil {
		return err
	}
	return tx.Commit(ctx)
}

// overQuota: after adding rows of r under its lock, the count passes
// limit — the refusal names the use before this request.
func overQuota(ctx context.Context, tx pgx.Tx, account string, r quota.Resource, limit, added int64) error {
	if limit <= 0 || added == 0 {
		return nil
	}
	n, err := count(ctx, tx, account, r)
	if err != nil {
		return err
	}
	if n > limit {
		return quota.ExceededBy(r, n-added, added, limit)
	}
	return nil
}

// PIITokens reads every row of a token (one per subject holding it), with
// each subject's keyset (nil when shredded).
func (s *Store) PIITokens(ctx context.Context, accountID, token string) ([]PIIToken, error) {
	rows, err := s.pool.Query(ctx, `SELECT t.token, t.subject_id, t.type, t.deterministic, t.ciphertext, s.keyset
		FROM pii_tokens t JOIN pii_subjects s USING (account_id, subject_id) WHERE t.account_id = $1 AND t.token = $2 ORDER BY t.created_at`, accountID, token)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []PIIToken
	for rows.Next() {
		var t PIIToken
		if err := rows.Scan(&t.Token, &t.SubjectID, &t.Type, &t.Deterministic, &t.Ciphertext, &t.Keyset); err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, rows.Err()
}

// UpdatePIIToken replaces a token's ciphertext.
func (s *Store) UpdatePIIToken(ctx context.Context, accountID, token, subjectID string, ct []byte) error {
	_, err := s.pool.Exec(ctx, `UPDATE pii_tokens SET ciphertext = $4, updated_at = now() WHERE account_id = $1 AND token = $2 AND subject_id = $3`, accountID, token, subjectID, ct)
	return err
}

// ShredPIISubject destroys the subject's keyset; it answers how many
// tokens the subject held (ErrNotFound for an unknown subject).
func (s *Store) ShredPIISubject(ctx context.Context, accountID, subjectID string) (int, error) {
	tag, err := s.pool.Exec(ctx, `UPDATE pii_subjects SET keyset = NULL, shredded_at = COALESCE(shredded_at, now()) WHERE account_id = $1 AND subject_id = $2`, accountID, subjectID)
	if err != nil {
		return 0, err
	}
	if tag.RowsAffected() == 0 {
		return 0, ErrNotFound
	}
	var n int
	err = s.pool.QueryRow(ctx, `SELECT count(*) FROM pii_tokens WHERE account_id = $1 AND subject_id = $2`, accountID, subjectID).Scan(&n)
	return n, err
}

// PIIConsent is a row of pii_consents.
type PIIConsent struct {
	ID, SubjectID, Purpose, Note string
	Granted                      bool
	RecordedAt                   time.Time
}

// AddPIIConsent records a consent decision.
func (s *Store) AddPIIConsent(ctx context.Context, accountID string, c PIIConsent) (PIIConsent, error) {
	err := s.pool.QueryRow(ctx, `INSERT INTO pii_consents (id, account_id, subject_id, purpose, granted, note) VALUES ($1, $2, $3, $4, $5, $6) RETURNING recorded_at`,
		c.ID, accountID, c.SubjectID, c.Purpose, c.Granted, c.Note).Scan(&c.RecordedAt)
	return c, err
}

// PIIConsents lists a subject's consent records (all purposes, or one),
// oldest first.
func (s *Store) PIIConsents(ctx context.Context, accountID, subjectID, purpose string) ([]PIIConsent, error) {
	rows, err := s.pool.Query(ctx, `SELECT id, subject_id, purpose, note, granted, recorded_at FROM pii_consents
		WHERE account_id = $1 AND subject_id = $2 AND ($3 = '' OR purpose = $3) ORDER BY recorded_at, id LIMIT 1000`, accountID, subjectID, purpose)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []PIIConsent
	for rows.Next() {
		var c PIIConsent
		if err := rows.Scan(&c.ID, &c.SubjectID, &c.Purpose, &c.Note, &c.Granted, &c.RecordedAt); err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, rows.Err()
}

// PIIAudit is a row of pii_audit.
type PIIAudit struct {
	Seq                               int64
	At                                time.Time
	KeyID, Action, SubjectID, Outcome string
	Tokens                            int
}

// AddPIIAudit records one vault access.
func (s *Store) AddPIIAudit(ctx context.Context, accountID string, a PIIAudit) error {
	_, err := s.pool.Exec(ctx, `INSERT INTO pii_audit (account_id, key_id, action, subject_id, tokens, outcome) VALUES ($1, $2, $3, $4, $5, $6)`,
		accountID, a.KeyID, a.Action, a.SubjectID, a.Tokens, a.Outcome)
	return err
}

// PIIAuditPage lists the account's vault accesses newest first, before seq
// (0: from the newest), optionally for one subject.
func (s *Store) PIIAuditPage(ctx context.Context, accountID, subjectID string, before int64, limit int) ([]PIIAudit, error) {
	rows, err := s.pool.Query(ctx, `SELECT seq, at, key_id, action, subject_id, outcome, tokens FROM pii_audit
		WHERE account_id = $1 AND ($2 = '' OR subject_id = $2) AND ($3::bigint = 0 OR seq < $3::bigint) ORDER BY seq DESC LIMIT $4`, accountID, subjectID, before, limit)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []PIIAudit
	for rows.Next() {
		var a PIIAudit
		if err := rows.Scan(&a.Seq, &a.At, &a.KeyID, &a.Action, &a.SubjectID, &a.Outcome, &a.Tokens); err != nil {
			return nil, err
		}
		out = append(out, a)
	}
	return out, rows.Err()
}

// Wrapped is one wrapped key the master key protects (for rotation).
type Wrapped struct {
	// Kind is subject, account or proxy; Account and Ref (the subject or
	// proxy id) name the row, and with Kind give the associated data.
	Kind, Account, Ref string
	Bytes              []byte
}

// RewrapAll passes every wrapped key through f and stores what it answers,
// each row in its own statement (a crash part way is safe to run again:
// every key still opens with the keys configured).
func (s *Store) RewrapAll(ctx context.Context, f func(Wrapped) ([]byte, error)) (int, error) {
	var all []Wrapped
	for _, q := range []struct{ kind, sql string }{
		{"subject", `SELECT account_id, subject_id, keyset FROM pii_subjects WHERE keyset IS NOT NULL`},
		{"account", `SELECT account_id, '', det_keyset FROM pii_account_keys`},
		{"proxy", `SELECT account_id, id, upstream_key FROM redaction_proxies WHERE upstream_key IS NOT NULL`},
	} {
		rows, err := s.pool.Query(ctx, q.sql)
		if err != nil {
			return 0, err
		}
		for rows.Next() {
			w := Wrapped{Kind: q.kind}
			if err := rows.Scan(&w.Account, &w.Ref, &w.Bytes); err != nil {
				rows.Close()
				return 0, err
			}
			all = append(all, w)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return 0, err
		}
	}
	for i, w := range all {
		b, err := f(w)
		if err != nil {
			return i, err
		}
		var sql string
		switch w.Kind {
		case "subject":
			sql = `UPDATE pii_subjects SET keyset = $3 WHERE account_id = $1 AND subject_id = $2 AND keyset IS NOT NULL`
		case "account":
			sql = `UPDATE pii_account_keys SET det_keyset = $3 WHERE account_id = $1 AND $2 = ''`
		default:
			sql = `UPDATE redaction_proxies SET upstream_key = $3 WHERE account_id = $1 AND id = $2 AND upstream_key IS NOT NULL`
		}
		if _, err := s.pool.Exec(ctx, sql, w.Account, w.Ref, b); err != nil {
			return i, err
		}
	}
	return len(all), nil
}
