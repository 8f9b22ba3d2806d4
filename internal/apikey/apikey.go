// Package apikey mints and checks API keys and names their scopes. A key is
// "cnd_<prefix>_<secret>": the prefix is a non-secret lookup id, the secret
// is 32 random bytes; only SHA-256(secret) is stored (a high-entropy secret
// needs no slow hash), and comparison is constant-time.
package apikey

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
)

const scheme = "cnd"

// Minted is a new key: Plain is shown once to its owner, the rest is stored.
type Minted struct {
	Plain  string
	Prefix string
	Hash   []byte
}

// Mint creates a new random key.
func Mint() (Minted, error) {
	p := make([]byte, 6)
	s := make([]byte, 32)
	if _, err := rand.Read(p); err != nil {
		return Minted{}, err
	}
	if _, err := rand.Read(s); err != nil {
		return Minted{}, err
	}
	prefix := hex.EncodeToString(p)
	secret := base64.RawURLEncoding.EncodeToString(s)
	return Minted{Plain: scheme + "_" + prefix + "_" + secret, Prefix: prefix, Hash: hash(secret)}, nil
}

// ErrMalformed means the presented string is not shaped like one of our keys.
var ErrMalformed = errors.New("malformed API key")

// Split returns the prefix (for lookup) and the secret of a presented key.
func Split(plain string) (prefix, secret string, err error) {
	parts := strings.SplitN(plain, "_", 3)
	if len(parts) != 3 || parts[0] != scheme || len(parts[1]) != 12 || len(parts[2]) != 43 {
		return "", "", ErrMalformed
	}
	if _, err := hex.DecodeString(parts[1]); err != nil {
		return "", "", ErrMalformed
	}
	return parts[1], parts[2], nil
}

// Matches reports whether secret hashes to stored, in constant time.
func Matches(secret string, stored []byte) bool {
	return subtle.ConstantTimeCompare(hash(secret), stored) == 1
}

func hash(secret string) []byte {
	h := sha256.Sum256([]byte(secret))
	return h[:]
}

// Display is how a key is shown after creation: its prefix only.
func Display(prefix string) string { return scheme + "_" + prefix + "_…" }

// Scopes of spec §5, plus the ones this service adds for routes the spec
// leaves unscoped (documented in docs/accounts.md).
const (
	PipelinesRead  = "pipelines:read"
	PipelinesRun   = "pipelines:run"
	PipelinesWrite = "pipelines:write"
	KeysManage     = "keys:manage"
	// MediaRead lists and reads the account's media library; MediaWrite
	// imports, assembles, edits and deletes its items.
	MediaRead  = "media:read"
	MediaWrite = "media:write"
	// Enclaves (docs/enclaves.md): read records, create and change them
	// (pause, resume, terminate, delete), read their logs.
	EnclavesRead  = "enclaves:read"
	EnclavesWrite = "enclaves:write"
	LogsRead      = "logs:read"
	// Scheduled tasks (docs/tasks.md): read tasks and their runs; create,
	// change, trigger and delete them.
	TasksRead  = "tasks:read"
	TasksWrite = "tasks:write"
	// Redaction (docs/redaction.md, docs/redaction-proxies.md): the
	// redacting chat proxy, standalone redaction, the audit log.
	RedactProxy = "redact:proxy"
	RedactRun   = "redact:run"
	RedactLog   = "redact:log"
	// The PII vault.
	PIIIngest  = "pii:ingest"
	PIIRead    = "pii:read"
	PIIWrite   = "pii:write"
	PIIDelete  = "pii:delete"
	PIIConsent = "pii:consent"
	PIIAudit   = "pii:audit"
	// Proofs (docs/proofs.md): register keys, submit proofs and KYC
	// proofs; read jobs and a KYC proof's private fields.
	ProofsWrite = "proofs:write"
	ProofsRead  = "proofs:read"
)

// Scope is one scope as a person choosing it reads it.
type Scope struct {
	Name string `json:"name"`
	Text string `json:"text"`
}

// ScopeGroup is the scopes of one area of the API.
type ScopeGroup struct {
	Name   string  `json:"name"`
	Scopes []Scope `json:"scopes"`
}

// catalog groups and describes every scope: what GET /api/keys/scopes
// publishes, so the dashboard's key form is generated from it and can
// never offer fewer (or other) scopes than keys can hold.
var catalog = []ScopeGroup{
	{"Pipelines", []Scope{
		{PipelinesRead, "read pipelines, their versions and runs"},
		{PipelinesRun, "invoke pipelines"},
		{PipelinesWrite, "author, publish and roll back pipelines"},
	}},
	{"Media", []Scope{
		{MediaRead, "list and read the media library"},
		{MediaWrite, "import, assemble, edit and delete media"},
	}},
	{"Enclaves", []Scope{
		{EnclavesRead, "read enclaves and their attestation"},
		{EnclavesWrite, "create, retry, pause, resume, terminate and delete enclaves"},
		{LogsRead, "read enclave logs"},
	}},
	{"Scheduled tasks", []Scope{
		{TasksRead, "read tasks and their runs"},
		{TasksWrite, "create, change, fire and delete tasks"},
	}},
	{"Redaction", []Scope{
		{RedactProxy, "use the redacting chat proxies"},
		{RedactRun, "redact text on demand"},
		{RedactLog, "read the redaction audit log"},
	}},
	{"PII vault", []Scope{
		{PIIIngest, "store personal data in the vault"},
		{PIIRead, "read personal data from the vault"},
		{PIIWrite, "change personal data in the vault"},
		{PIIDelete, "delete personal data from the vault"},
		{PIIConsent, "record and read consent"},
		{PIIAudit, "read the vault's audit trail"},
	}},
	{"Proofs", []Scope{
		{ProofsWrite, "register verification keys, submit proofs and KYC proofs"},
		{ProofsRead, "read proof jobs and a KYC proof's private fields"},
	}},
	{"Account", []Scope{
		{KeysManage, "create and change API keys"},
	}},
}

// allScopes is every scope of the catalog: one list, so what keys can
// hold and what the dashboard offers never drift apart.
var allScopes = func() []string {
	var out []string
	for _, g := range catalog {
		for _, sc := range g.Scopes {
			out = append(out, sc.Name)
		}
	}
	return out
}()

// Catalog is every scope, grouped and described (a copy).
func Catalog() []ScopeGroup {
	out := make([]ScopeGroup, len(catalog))
	for i, g := range catalog {
		out[i] = ScopeGroup{Name: g.Name, Scopes: slices.Clone(g.Scopes)}
	}
	return out
}

// AllScopes lists every scope, sorted.
func AllScopes() []string {
	s := slices.Clone(allScopes)
	sort.Strings(s)
	return s
}

// DefaultScopes are granted when a key is created without permissions.
func DefaultScopes() []string { return []string{PipelinesRead, PipelinesRun} }

// NormalizeScopes checks every name and returns them sorted without
// duplicates; unknown names are listed in the error.
func NormalizeScopes(in []string) ([]string, error) {
	var unknown []string
	seen := map[string]bool{}
	out := []string{}
	for _, s := range in {
		if !slices.Contains(allScopes, s) {
			unknown = append(unknown, fmt.Sprintf("%q", s))
			continue
		}
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	if len(unknown) > 0 {
		return nil, fmt.Errorf("unknown permission %s (known: %s)", strings.Join(unknown, ", "), strings.Join(AllScopes(), ", "))
	}
	sort.Strings(out)
	return out, nil
}
