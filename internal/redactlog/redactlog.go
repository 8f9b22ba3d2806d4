// Package redactlog is the redaction audit log: one entry per redacting
// call — time, account, key, proxy, entity counts by type, upstream status,
// latency, never a value — chained per account by SHA-256 so an auditor
// can tell that nothing was edited or removed (Verify).
package redactlog

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"strconv"
	"time"

	"conduit/internal/errs"
	"conduit/internal/paging"
	"conduit/internal/redact"
	"conduit/internal/store"
)

// Sources of entries.
const (
	SourceProxy = "proxy"
	SourceRun   = "run"
)

// Entry is one call as the API shows it.
type Entry struct {
	ID             string         `json:"id"`
	Seq            int64          `json:"seq"`
	Time           time.Time      `json:"ts"`
	KeyID          string         `json:"keyId,omitempty"`
	ProxyID        string         `json:"proxyId,omitempty"`
	Source         string         `json:"source"`
	Counts         map[string]int `json:"entityCountsByType"`
	UpstreamStatus int            `json:"upstreamStatus"`
	LatencyMs      int64          `json:"latencyMs"`
	PrevHash       string         `json:"prevHash"`
	Hash           string         `json:"hash"`
}

// Record is what a caller logs.
type Record struct {
	AccountID, KeyID, ProxyID, Source string
	Counts                            map[string]int
	UpstreamStatus                    int
	Latency                           time.Duration
}

// Service appends to and reads the log.
type Service struct {
	Store *store.Store
	// Now is the clock (tests); nil: time.Now.
	Now func() time.Time
}

// Append records one call. The time is kept to the microsecond, the
// database's precision, so the hash recomputes from the stored row.
func (s *Service) Append(ctx context.Context, r Record) (Entry, error) {
	now := time.Now
	if s.Now != nil {
		now = s.Now
	}
	if r.Counts == nil {
		r.Counts = map[string]int{}
	}
	counts, _ := json.Marshal(r.Counts) // map keys sorted: canonical
	row := store.RedactionLogEntry{AccountID: r.AccountID, ID: store.NewID("rlog"), At: now().UTC().Truncate(time.Microsecond),
		KeyID: r.KeyID, ProxyID: r.ProxyID, Source: r.Source, Counts: counts, UpstreamStatus: r.UpstreamStatus, LatencyMs: r.Latency.Milliseconds()}
	row, err := s.Store.AppendRedactionLog(ctx, row, func(e *store.RedactionLogEntry) { e.Hash = hashOf(*e) })
	if err != nil {
		return Entry{}, err
	}
	return toEntry(row), nil
}

// hashOf commits to every field of the entry and to the previous hash.
func hashOf(e store.RedactionLogEntry) string {
	var counts map[string]int
	_ = json.Unmarshal(e.Counts, &counts)
	canon, _ := json.Marshal(struct {
		Account string         `json:"account"`
		Seq     int64          `json:"seq"`
		ID      string         `json:"id"`
		At      string         `json:"at"`
		Key     string         `json:"key"`
		Proxy   string         `json:"proxy"`
		Source  string         `json:"source"`
		Counts  map[string]int `json:"counts"`
		Status  int            `json:"status"`
		Latency int64          `json:"latency"`
		Prev    string         `json:"prev"`
	}{e.AccountID, e.Seq, e.ID, e.At.UTC().Format(time.RFC3339Nano), e.KeyID, e.ProxyID, e.Source, counts, e.UpstreamStatus, e.LatencyMs, e.PrevHash})
	h := sha256.Sum256(canon)
	return hex.EncodeToString(h[:])
}

func toEntry(e store.RedactionLogEntry) Entry {
	out := Entry{ID: e.ID, Seq: e.Seq, Time: e.At, KeyID: e.KeyID, ProxyID: e.ProxyID, Source: e.Source,
		UpstreamStatus: e.UpstreamStatus, LatencyMs: e.LatencyMs, PrevHash: e.PrevHash, Hash: e.Hash}
	_ = json.Unmarshal(e.Counts, &out.Counts)
	return out
}

// ListArgs filters a page (GET /api/redact/log).
type ListArgs struct {
	ProxyID, Source string
	Since, Until    time.Time
	Limit           int
	After           paging.Token
}

// Page is one page, newest first.
type Page struct {
	Entries   []Entry `json:"entries"`
	NextAfter string  `json:"nextAfter,omitempty"`
	// NextCursor is NextAfter under the older name clients of this kind of
	// service read.
	NextCursor string `json:"nextCursor,omitempty"`
	NextURL    string `json:"nextUrl,omitempty"`
}

// List reads a page of the account's log.
func (s *Service) List(ctx context.Context, accountID string, a ListArgs) (Page, error) {
	if a.Limit == 0 {
		a.Limit = 100
	}
	if a.Limit < 1 || a.Limit > 500 {
		return Page{}, errs.Invalidf("limit must be 1 to 500")
	}
	if a.Source != "" && a.Source != SourceProxy && a.Source != SourceRun {
		return Page{}, errs.Invalidf("source must be proxy or run")
	}
	f := store.RedactionLogFilter{ProxyID: a.ProxyID, Source: a.Source, Since: a.Since, Until: a.Until, Limit: a.Limit + 1}
	if a.After.Value != "" {
		n, err := strconv.ParseInt(a.After.Value, 10, 64)
		if err != nil || n < 1 {
			return Page{}, a.After.Foreign()
		}
		f.Before = n
	}
	rows, err := s.Store.RedactionLog(ctx, accountID, f)
	if err != nil {
		return Page{}, err
	}
	p := Page{Entries: []Entry{}}
	for i, r := range rows {
		if i == a.Limit {
			p.NextAfter = strconv.FormatInt(rows[i-1].Seq, 10)
			p.NextCursor = p.NextAfter
			break
		}
		p.Entries = append(p.Entries, toEntry(r))
	}
	return p, nil
}

// Verification is the answer of Verify.
type Verification struct {
	Valid   bool   `json:"valid"`
	Entries int64  `json:"entries"`
	Head    string `json:"head"`
	// BrokenAt is the first seq that does not verify, and Reason why.
	BrokenAt int64  `json:"brokenAt,omitempty"`
	Reason   string `json:"reason,omitempty"`
}

// Verify recomputes the account's chain from the first entry: every hash,
// every link to the previous hash, seq without gaps, and the last entry
// against the head (so removing the newest entries is caught too).
func (s *Service) Verify(ctx context.Context, accountID string) (Verification, error) {
	var v Verification
	prev := ""
	var n int64
	broken := func(seq int64, reason string) {
		if v.BrokenAt == 0 {
			v.BrokenAt, v.Reason = seq, reason
		}
	}
	headSeq, headHash, err := s.Store.RedactionChain(ctx, accountID, func(e store.RedactionLogEntry) error {
		n++
		switch {
		case e.Seq != n:
			broken(n, "entry "+strconv.FormatInt(n, 10)+" is missing")
		case e.PrevHash != prev:
			broken(e.Seq, "entry does not link to the previous one")
		case hashOf(e) != e.Hash:
			broken(e.Seq, "entry was changed after it was written")
		}
		prev = e.Hash
		return nil
	})
	if err != nil {
		return v, err
	}
	if headSeq != n || headHash != prev {
		broken(n+1, "entries after "+strconv.FormatInt(n, 10)+" were removed")
	}
	v.Entries, v.Head, v.Valid = n, headHash, v.BrokenAt == 0
	return v, nil
}

// Run answers POST /api/redact/run (redact.Run) and records the call in the
// account's chain as a SourceRun entry: counts by type, the status
// answered (there is no upstream: 200, or 422 when the policy blocked a
// type found), the latency and the key — never a value. A refusal before
// detection (a bad policy, includeValues without pii:read, an oversized
// text) is not a redacting call and records nothing. An entry that cannot
// be written fails the call: no redacted text leaves unrecorded.
func (s *Service) Run(ctx context.Context, req redact.RunRequest, who redact.Caller, keyID string) (*redact.RunResult, error) {
	started := time.Now()
	out, err := redact.Run(req, who)
	if out == nil {
		return nil, err
	}
	status := http.StatusOK
	if err != nil {
		status = http.StatusUnprocessableEntity // the policy blocked a type
	}
	counts := make(map[string]int, len(out.Counts))
	for t, n := range out.Counts {
		counts[string(t)] = n
	}
	if _, aerr := s.Append(context.WithoutCancel(ctx), Record{AccountID: who.AccountID, KeyID: keyID, Source: SourceRun,
		Counts: counts, UpstreamStatus: status, Latency: time.Since(started)}); aerr != nil {
		return nil, errs.Unavailablef("the redaction could not be recorded in the audit log, so its result is withheld; try again")
	}
	if err != nil {
		return nil, err
	}
	return out, nil
}
