// Package vault is the PII vault (docs/redaction-proxies.md, "Vault"):
// values go in and come back as tokens; a token reads back only through
// the vault. Envelope encryption with Tink: each subject's values are
// sealed with that subject's own AEAD keyset, itself wrapped by the master
// key from configuration; deleting a subject destroys its keyset
// (crypto-shredding) so every token of it becomes unreadable at once,
// backups included. Join tokens (deterministic per account and type) come
// from a per-account deterministic AEAD (AES-SIV) keyset. Every access is
// written to an audit trail that never holds a value.
package vault

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/tink-crypto/tink-go/v2/aead"
	"github.com/tink-crypto/tink-go/v2/daead"

	"conduit/internal/errs"
	"conduit/internal/paging"
	"conduit/internal/quota"
	"conduit/internal/redact"
	"conduit/internal/store"
)

// Limits of one call.
const (
	MaxItems      = 100
	MaxValueBytes = 4096
	maxIDLen      = 200
)

// Service is the vault.
type Service struct {
	Store *store.Store
	// Master wraps every keyset; nil: the vault is off (503).
	Master *Master
	// Quota bounds an account's subjects and tokens (PIISubjects,
	// PIITokens; 0: no limit).
	Quota quota.Limits
}

// Usage reports the account's subjects and tokens against their limits
// (a quota.Source for GET /api/account/usage).
func (s *Service) Usage(ctx context.Context, account string) ([]quota.Item, error) {
	return quota.CountEach(ctx, s.Store, account,
		quota.Bound{Resource: quota.PIISubjects, Limit: s.Quota.PIISubjects}, quota.Bound{Resource: quota.PIITokens, Limit: s.Quota.PIITokens})
}

// Caller is who asks (for the audit trail).
type Caller struct {
	AccountID, KeyID string
}

func (s *Service) ready() error {
	if s == nil || s.Master == nil {
		return errs.Unavailablef("the PII vault is off on this deployment (no vault key is configured: redaction.keys)")
	}
	return nil
}

func (s *Service) audit(ctx context.Context, c Caller, action, subject string, tokens int, outcome string) {
	_ = s.Store.AddPIIAudit(context.WithoutCancel(ctx), c.AccountID, store.PIIAudit{KeyID: c.KeyID, Action: action, SubjectID: subject, Tokens: tokens, Outcome: outcome})
}

func checkID(field, v string) error {
	if v == "" || len(v) > maxIDLen || strings.ContainsAny(v, "/?#") || !utf8.ValidString(v) {
		return errs.Field(field, "must be 1 to 200 characters, without / ? #")
	}
	return nil
}

// Item is one value to tokenize.
type Item struct {
	Type  redact.Type `json:"type"`
	Value string      `json:"value"`
	// Deterministic asks for a join token: the same value of the same type
	// gets the same token across the account.
	Deterministic bool `json:"deterministic,omitempty"`
}

// IngestArgs is POST /api/pii/tokens.
type IngestArgs struct {
	SubjectID string `json:"subjectId"`
	Items     []Item `json:"items"`
}

// Token describes a token (never its value).
type Token struct {
	Token         string      `json:"token"`
	Type          redact.Type `json:"type"`
	SubjectID     string      `json:"subjectId"`
	Deterministic bool        `json:"deterministic"`
}

// Tokens answers an ingest.
type Tokens struct {
	Tokens []Token `json:"tokens"`
}

type aeadT interface {
	Encrypt(plaintext, associatedData []byte) ([]byte, error)
	Decrypt(ciphertext, associatedData []byte) ([]byte, error)
}

func (s *Service) openSubject(wrapped []byte, accountID, subject string) (aeadT, error) {
	h, err := s.Master.unwrap(wrapped, "pii-subject/"+accountID+"/"+subject)
	if err != nil {
		return nil, errs.Unavailablef("a subject key cannot be unwrapped with the configured vault keys")
	}
	return aead.New(h)
}

func valueAD(accountID, subject string, t redact.Type, token string) []byte {
	return []byte(accountID + "\x00" + subject + "\x00" + string(t) + "\x00" + token)
}

// Ingest tokenizes values of one subject.
func (s *Service) Ingest(ctx context.Context, c Caller, a IngestArgs) (Tokens, error) {
	if err := s.ready(); err != nil {
		return Tokens{}, err
	}
	if err := checkID("subjectId", a.SubjectID); err != nil {
		return Tokens{}, err
	}
	if len(a.Items) == 0 || len(a.Items) > MaxItems {
		return Tokens{}, errs.Field("items", "must hold 1 to "+strconv.Itoa(MaxItems)+" values")
	}
	for i, it := range a.Items {
		if !slices.Contains(redact.Types, it.Type) {
			return Tokens{}, errs.Field("items["+strconv.Itoa(i)+"].type", "must be one of the entity types")
		}
		if it.Value == "" || len(it.Value) > MaxValueBytes || !utf8.ValidString(it.Value) {
			return Tokens{}, errs.Field("items["+strconv.Itoa(i)+"].value", "must be 1 to 4096 bytes of text")
		}
	}
	var det interface {
		EncryptDeterministically(pt, ad []byte) ([]byte, error)
	}
	for _, it := range a.Items {
		if it.Deterministic {
			var err error
			if det, err = s.accountDet(ctx, c.AccountID); err != nil {
				return Tokens{}, err
			}
			break
		}
	}
	out := Tokens{Tokens: []Token{}}
	ad := "pii-subject/" + c.AccountID + "/" + a.SubjectID
	newKeyset := func() ([]byte, error) {
		_, wrapped, err := s.Master.newKeyset(aead.AES256GCMKeyTemplate(), ad)
		return wrapped, err
	}
	// seal runs inside the store's transaction, under the quota locks:
	// a refusal there rolls back the subject and the tokens alike.
	seal := func(wrapped []byte) ([]store.PIIToken, error) {
		subj, err := s.openSubject(wrapped, c.AccountID, a.SubjectID)
		if err != nil {
			return nil, err
		}
		out.Tokens = out.Tokens[:0]
		var rows []store.PIIToken
		for _, it := range a.Items {
			tok := ""
			if it.Deterministic {
				ct, err := det.EncryptDeterministically([]byte(it.Value), []byte("pii-join/"+c.AccountID+"/"+string(it.Type)))
				if err != nil {
					return nil, err
				}
				h := sha256.Sum256(ct)
				tok = "piid_" + base64.RawURLEncoding.EncodeToString(h[:24])
			} else {
				b := make([]byte, 16)
				_, _ = rand.Read(b)
				tok = "pii_" + hex.EncodeToString(b)
			}
			ct, err := subj.Encrypt([]byte(it.Value), valueAD(c.AccountID, a.SubjectID, it.Type, tok))
			if err != nil {
				return nil, err
			}
			rows = append(rows, store.PIIToken{Token: tok, SubjectID: a.SubjectID, Type: string(it.Type), Deterministic: it.Deterministic, Ciphertext: ct})
			out.Tokens = append(out.Tokens, Token{Token: tok, Type: it.Type, SubjectID: a.SubjectID, Deterministic: it.Deterministic})
		}
		return rows, nil
	}
	err := s.Store.IngestPII(ctx, c.AccountID, a.SubjectID, s.Quota.PIISubjects, s.Quota.PIITokens, newKeyset, seal)
	if errors.Is(err, store.ErrShredded) {
		s.audit(ctx, c, "ingest", a.SubjectID, 0, "gone")
		return Tokens{}, errs.New(errs.Gone, "subject %s was deleted; its key is destroyed and it takes no new values", a.SubjectID)
	}
	if err != nil {
		return Tokens{}, err
	}
	s.audit(ctx, c, "ingest", a.SubjectID, len(out.Tokens), "ok")
	return out, nil
}

func (s *Service) accountDet(ctx context.Context, accountID string) (interface {
	EncryptDeterministically(pt, ad []byte) ([]byte, error)
}, error) {
	ad := "pii-join/" + accountID
	wrapped, err := s.Store.PIIAccountKey(ctx, accountID, func() ([]byte, error) {
		_, w, err := s.Master.newKeyset(daead.AESSIVKeyTemplate(), ad)
		return w, err
	})
	if err != nil {
		return nil, err
	}
	h, err := s.Master.unwrap(wrapped, ad)
	if err != nil {
		return nil, errs.Unavailablef("the account's join key cannot be unwrapped with the configured vault keys")
	}
	return daead.New(h)
}

// Value is a detokenized value.
type Value struct {
	Token
	Value string `json:"value"`
}

func checkToken(tok string) error {
	if (!strings.HasPrefix(tok, "pii_") && !strings.HasPrefix(tok, "piid_")) || len(tok) > 100 {
		return errs.Field("token", "is not a vault token")
	}
	return nil
}

// Read detokenizes one token. A token of a deleted subject is Gone.
func (s *Service) Read(ctx context.Context, c Caller, token string) (Value, error) {
	if err := s.ready(); err != nil {
		return Value{}, err
	}
	if err := checkToken(token); err != nil {
		return Value{}, err
	}
	rows, err := s.Store.PIITokens(ctx, c.AccountID, token)
	if err != nil {
		return Value{}, err
	}
	if len(rows) == 0 {
		s.audit(ctx, c, "read", "", 1, "not_found")
		return Value{}, errs.NotFoundf("no such token")
	}
	for _, r := range rows {
		if r.Keyset == nil {
			continue
		}
		subj, err := s.openSubject(r.Keyset, c.AccountID, r.SubjectID)
		if err != nil {
			return Value{}, err
		}
		pt, err := subj.Decrypt(r.Ciphertext, valueAD(c.AccountID, r.SubjectID, redact.Type(r.Type), r.Token))
		if err != nil {
			return Value{}, errs.Unavailablef("the token's value cannot be decrypted")
		}
		s.audit(ctx, c, "read", r.SubjectID, 1, "ok")
		return Value{Token: Token{Token: r.Token, Type: redact.Type(r.Type), SubjectID: r.SubjectID, Deterministic: r.Deterministic}, Value: string(pt)}, nil
	}
	s.audit(ctx, c, "read", rows[0].SubjectID, 1, "gone")
	return Value{}, errs.New(errs.Gone, "the token's subject was deleted: its key is destroyed and the value cannot be read")
}

// Update replaces the value behind a random token.
func (s *Service) Update(ctx context.Context, c Caller, token, value string) (Token, error) {
	if err := s.ready(); err != nil {
		return Token{}, err
	}
	if err := checkToken(token); err != nil {
		return Token{}, err
	}
	if value == "" || len(value) > MaxValueBytes || !utf8.ValidString(value) {
		return Token{}, errs.Field("value", "must be 1 to 4096 bytes of text")
	}
	rows, err := s.Store.PIITokens(ctx, c.AccountID, token)
	if err != nil {
		return Token{}, err
	}
	if len(rows) == 0 {
		s.audit(ctx, c, "write", "", 1, "not_found")
		return Token{}, errs.NotFoundf("no such token")
	}
	r := rows[0]
	if r.Deterministic {
		return Token{}, errs.Conflictf("a join token is derived from its value and cannot change; ingest the new value for a new token")
	}
	if r.Keyset == nil {
		s.audit(ctx, c, "write", r.SubjectID, 1, "gone")
		return Token{}, errs.New(errs.Gone, "the token's subject was deleted")
	}
	subj, err := s.openSubject(r.Keyset, c.AccountID, r.SubjectID)
	if err != nil {
		return Token{}, err
	}
	ct, err := subj.Encrypt([]byte(value), valueAD(c.AccountID, r.SubjectID, redact.Type(r.Type), r.Token))
	if err != nil {
		return Token{}, err
	}
	if err := s.Store.UpdatePIIToken(ctx, c.AccountID, token, r.SubjectID, ct); err != nil {
		return Token{}, err
	}
	s.audit(ctx, c, "write", r.SubjectID, 1, "ok")
	return Token{Token: r.Token, Type: redact.Type(r.Type), SubjectID: r.SubjectID}, nil
}

// Shredded answers a subject's deletion.
type Shredded struct {
	SubjectID string `json:"subjectId"`
	// Tokens is how many tokens became unreadable.
	Tokens   int  `json:"tokens"`
	Shredded bool `json:"shredded"`
}

// DeleteSubject destroys the subject's key: every token of the subject is
// unreadable from then on (crypto-shredding). Deleting again is harmless.
func (s *Service) DeleteSubject(ctx context.Context, c Caller, subject string) (Shredded, error) {
	if err := s.ready(); err != nil {
		return Shredded{}, err
	}
	if err := checkID("subjectId", subject); err != nil {
		return Shredded{}, err
	}
	n, err := s.Store.ShredPIISubject(ctx, c.AccountID, subject)
	if errors.Is(err, store.ErrNotFound) {
		s.audit(ctx, c, "delete", subject, 0, "not_found")
		return Shredded{}, errs.NotFoundf("no such subject")
	}
	if err != nil {
		return Shredded{}, err
	}
	s.audit(ctx, c, "delete", subject, n, "ok")
	return Shredded{SubjectID: subject, Tokens: n, Shredded: true}, nil
}

// ConsentArgs records a decision (POST /api/pii/consents).
type ConsentArgs struct {
	SubjectID string `json:"subjectId"`
	Purpose   string `json:"purpose"`
	Granted   *bool  `json:"granted"`
	Note      string `json:"note,omitempty"`
}

// Consent is one recorded decision; the latest per purpose is in force.
type Consent struct {
	ID         string    `json:"id"`
	SubjectID  string    `json:"subjectId"`
	Purpose    string    `json:"purpose"`
	Granted    bool      `json:"granted"`
	Note       string    `json:"note,omitempty"`
	RecordedAt time.Time `json:"recordedAt"`
}

// Consents lists a subject's decisions and the ones in force.
type Consents struct {
	SubjectID string             `json:"subjectId"`
	Records   []Consent          `json:"records"`
	Current   map[string]Consent `json:"current"`
}

// AddConsent records a consent decision for a subject and purpose.
func (s *Service) AddConsent(ctx context.Context, c Caller, a ConsentArgs) (Consent, error) {
	if err := checkID("subjectId", a.SubjectID); err != nil {
		return Consent{}, err
	}
	if err := checkID("purpose", a.Purpose); err != nil {
		return Consent{}, err
	}
	if a.Granted == nil {
		return Consent{}, errs.Field("granted", "is required (true or false)")
	}
	if len(a.Note) > 1000 {
		return Consent{}, errs.Field("note", "must be at most 1000 characters")
	}
	r, err := s.Store.AddPIIConsent(ctx, c.AccountID, store.PIIConsent{ID: store.NewID("consent"), SubjectID: a.SubjectID, Purpose: a.Purpose, Granted: *a.Granted, Note: a.Note})
	if err != nil {
		return Consent{}, err
	}
	s.audit(ctx, c, "consent", a.SubjectID, 0, "ok")
	return Consent{ID: r.ID, SubjectID: r.SubjectID, Purpose: r.Purpose, Granted: r.Granted, Note: r.Note, RecordedAt: r.RecordedAt}, nil
}

// ListConsents reads a subject's consent records.
func (s *Service) ListConsents(ctx context.Context, c Caller, subject, purpose string) (Consents, error) {
	if err := checkID("subjectId", subject); err != nil {
		return Consents{}, err
	}
	rows, err := s.Store.PIIConsents(ctx, c.AccountID, subject, purpose)
	if err != nil {
		return Consents{}, err
	}
	out := Consents{SubjectID: subject, Records: []Consent{}, Current: map[string]Consent{}}
	for _, r := range rows {
		cs := Consent{ID: r.ID, SubjectID: r.SubjectID, Purpose: r.Purpose, Granted: r.Granted, Note: r.Note, RecordedAt: r.RecordedAt}
		out.Records = append(out.Records, cs)
		out.Current[r.Purpose] = cs
	}
	s.audit(ctx, c, "consent_read", subject, 0, "ok")
	return out, nil
}

// AuditEntry is one vault access.
type AuditEntry struct {
	Seq       int64     `json:"seq"`
	At        time.Time `json:"ts"`
	KeyID     string    `json:"keyId,omitempty"`
	Action    string    `json:"action"`
	SubjectID string    `json:"subjectId,omitempty"`
	Tokens    int       `json:"tokens"`
	Outcome   string    `json:"outcome"`
}

// AuditPage is a page of the trail, newest first.
type AuditPage struct {
	Entries   []AuditEntry `json:"entries"`
	NextAfter string       `json:"nextAfter,omitempty"`
}

// Audit reads the vault's access trail.
func (s *Service) Audit(ctx context.Context, c Caller, subject string, after paging.Token, limit int) (AuditPage, error) {
	if limit == 0 {
		limit = 100
	}
	if limit < 1 || limit > 500 {
		return AuditPage{}, errs.Invalidf("limit must be 1 to 500")
	}
	var before int64
	if after.Value != "" {
		n, err := strconv.ParseInt(after.Value, 10, 64)
		if err != nil || n < 1 {
			return AuditPage{}, after.Foreign()
		}
		before = n
	}
	rows, err := s.Store.PIIAuditPage(ctx, c.AccountID, subject, before, limit+1)
	if err != nil {
		return AuditPage{}, err
	}
	p := AuditPage{Entries: []AuditEntry{}}
	for i, r := range rows {
		if i == limit {
			p.NextAfter = strconv.FormatInt(rows[i-1].Seq, 10)
			break
		}
		p.Entries = append(p.Entries, AuditEntry{Seq: r.Seq, At: r.At, KeyID: r.KeyID, Action: r.Action, SubjectID: r.SubjectID, Tokens: r.Tokens, Outcome: r.Outcome})
	}
	return p, nil
}

// Rewrap re-encrypts every wrapped key under the primary master key
// (rotation, docs/redaction-proxies.md): subject keysets, account join
// keysets and stored proxy upstream keys. It answers how many it rewrapped.
func (s *Service) Rewrap(ctx context.Context) (int, error) {
	if err := s.ready(); err != nil {
		return 0, err
	}
	return s.Store.RewrapAll(ctx, func(w store.Wrapped) ([]byte, error) {
		switch w.Kind {
		case "subject":
			return s.Master.Rewrap(w.Bytes, "pii-subject/"+w.Account+"/"+w.Ref)
		case "account":
			return s.Master.Rewrap(w.Bytes, "pii-join/"+w.Account)
		}
		purpose := "redaction-proxy-upstream-key/" + w.Ref
		pt, err := s.Master.Open(w.Bytes, purpose)
		if err != nil {
			return nil, err
		}
		return s.Master.Seal(pt, purpose)
	})
}
