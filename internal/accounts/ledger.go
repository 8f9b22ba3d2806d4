package accounts

import (
	"context"
	"encoding/base64"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"conduit/internal/errs"
	"conduit/internal/money"
	"conduit/internal/paging"
	"conduit/internal/store"
)

// Ledger page sizes: the default and the most one page holds.
const (
	DefaultLedgerPage = 50
	MaxLedgerPage     = 200
)

// LedgerQuery is a request for a page of an account's ledger, as the
// caller wrote it (the API's query parameters).
type LedgerQuery struct {
	// Types is a comma-separated list of entry kinds (empty: all).
	Types string
	// From and To are RFC 3339 times (empty: unbounded); From inclusive,
	// To exclusive.
	From, To string
	// Limit is 1 to MaxLedgerPage (empty: DefaultLedgerPage).
	Limit string
	// After is a previous page's NextAfter (empty: the newest entries);
	// Cursor is its older name, still accepted.
	After, Cursor string
	// Group is "" (one line per entry) or "run": one line per hold (a
	// run's hold, release and charge folded into one line whose parts
	// are the entries). Types then filter lines by their type.
	Group string
}

// LedgerEntry is one movement of credit as the account's owner sees it.
// Fields in alphabetical order.
type LedgerEntry struct {
	Amount       money.Micros `json:"amount" jsonschema:"USD, exact; negative for holds and charges"`
	AmountMicros int64        `json:"amountMicros" jsonschema:"the same amount in micro-USD"`
	CreatedAt    time.Time    `json:"createdAt"`
	Description  string       `json:"description"`
	ID           string       `json:"id"`
	Reference    string       `json:"reference" jsonschema:"what the entry belongs to: run/<runId>, pack/checkout/<session>, topup/…"`
	Type         string       `json:"type" jsonschema:"free_grant, topup, pack, grant, payment, hold, release, charge or refund"`
	// Parts are the entries a line folds (group=run only): its hold,
	// release and charge, oldest first.
	Parts []LedgerEntry `json:"parts,omitempty" jsonschema:"group=run only: the entries folded into this line, oldest first"`
}

// LedgerPage is a page of entries, newest first (the paging convention of
// internal/paging); NextCursor is NextAfter under its older name, null on
// the last page as it always was.
type LedgerPage struct {
	Entries    []LedgerEntry `json:"entries"`
	NextAfter  string        `json:"nextAfter,omitempty"`
	NextURL    string        `json:"nextUrl,omitempty"`
	NextCursor *string       `json:"nextCursor"`
}

// Ledger reads a page of the account's ledger. A malformed filter, limit
// or cursor is an Invalid error that says which.
func (s *Service) Ledger(ctx context.Context, account string, q LedgerQuery) (LedgerPage, error) {
	sq := store.LedgerQuery{Limit: DefaultLedgerPage}
	if q.Types != "" {
		for _, k := range strings.Split(q.Types, ",") {
			k = strings.TrimSpace(k)
			if !slices.Contains(store.EntryKinds, k) {
				return LedgerPage{}, errs.Invalidf("type %q is not an entry type (%s)", k, strings.Join(store.EntryKinds, ", "))
			}
			if !slices.Contains(sq.Kinds, k) {
				sq.Kinds = append(sq.Kinds, k)
			}
		}
	}
	for _, b := range []struct {
		name, v string
		to      **time.Time
	}{{"from", q.From, &sq.From}, {"to", q.To, &sq.To}} {
		if b.v == "" {
			continue
		}
		t, err := time.Parse(time.RFC3339Nano, b.v)
		if err != nil {
			return LedgerPage{}, errs.Invalidf("%s must be an RFC 3339 time like 2026-01-31T00:00:00Z", b.name)
		}
		*b.to = &t
	}
	if q.Limit != "" {
		n, err := strconv.Atoi(q.Limit)
		if err != nil || n < 1 || n > MaxLedgerPage {
			return LedgerPage{}, errs.Invalidf("limit must be 1 to %d", MaxLedgerPage)
		}
		sq.Limit = n
	}
	tok, err := paging.From(q.After, q.Cursor)
	if err != nil {
		return LedgerPage{}, err
	}
	if tok.Value != "" {
		id, ok := ledgerCursor(tok.Value, account)
		if !ok {
			return LedgerPage{}, tok.Foreign()
		}
		sq.Before = id
	}
	switch q.Group {
	case "":
	case "run":
		return s.ledgerByRun(ctx, account, q, sq)
	default:
		return LedgerPage{}, errs.Invalidf("group must be run (one line per run) or left out (one line per entry)")
	}
	want := sq.Limit
	sq.Limit++
	rows, err := s.Store.LedgerPage(ctx, account, sq)
	if err != nil {
		return LedgerPage{}, err
	}
	page := LedgerPage{Entries: make([]LedgerEntry, 0, min(len(rows), want))}
	if len(rows) > want {
		rows = rows[:want]
		s.continueAt(&page, account, q, want, rows[want-1].ID)
	}
	for _, r := range rows {
		page.Entries = append(page.Entries, entryView(r))
	}
	return page, nil
}

// ledgerByRun is Ledger one line per hold (group=run). Its cursor is a
// line's newest entry id, so it has the shape of the entry view's.
func (s *Service) ledgerByRun(ctx context.Context, account string, q LedgerQuery, sq store.LedgerQuery) (LedgerPage, error) {
	want := sq.Limit
	sq.Limit++
	lines, err := s.Store.LedgerLines(ctx, account, sq)
	if err != nil {
		return LedgerPage{}, err
	}
	page := LedgerPage{Entries: make([]LedgerEntry, 0, min(len(lines), want))}
	if len(lines) > want {
		lines = lines[:want]
		s.continueAt(&page, account, q, want, lines[want-1].ID)
	}
	for _, l := range lines {
		if len(l.Entries) == 1 && l.Entries[0].HoldKey == "" {
			page.Entries = append(page.Entries, entryView(l.Entries[0]))
			continue
		}
		v := LedgerEntry{ID: strconv.FormatInt(l.ID, 10), Type: l.Kind, Amount: l.Amount, AmountMicros: int64(l.Amount), CreatedAt: l.CreatedAt.UTC()}
		for _, e := range l.Entries {
			v.Parts = append(v.Parts, entryView(e))
			v.Reference = e.HoldKey
		}
		switch l.Kind {
		case store.EntryCharge:
			v.Description = "charged for " + v.Reference
		case store.EntryRelease:
			v.Description = "nothing charged for " + v.Reference + " (its hold was released)"
		default:
			v.Description = "credit held for " + v.Reference + " (not settled yet)"
		}
		page.Entries = append(page.Entries, v)
	}
	return page, nil
}

// continueAt gives a page that is not the last its token (the last id it
// holds, bound to the account) and the URL of the next page.
func (s *Service) continueAt(page *LedgerPage, account string, q LedgerQuery, limit int, last int64) {
	c := base64.RawURLEncoding.EncodeToString([]byte("ledger:" + account + ":" + strconv.FormatInt(last, 10)))
	page.NextAfter, page.NextCursor = c, &c
	page.NextURL = paging.NextURL(s.BaseURL, "/api/account/ledger",
		url.Values{"type": {q.Types}, "from": {q.From}, "to": {q.To}, "limit": {strconv.Itoa(limit)}, "group": {q.Group}}, c)
}

// ledgerCursor reads a page token: "ledger:<account>:<entry id>", bound to
// the account that was given it (another's is refused), or the older
// unbound "ledger:<entry id>", still accepted.
func ledgerCursor(c, account string) (int64, bool) {
	b, err := base64.RawURLEncoding.DecodeString(c)
	if err != nil {
		return 0, false
	}
	rest, ok := strings.CutPrefix(string(b), "ledger:")
	if !ok {
		return 0, false
	}
	if i := strings.LastIndexByte(rest, ':'); i >= 0 {
		if rest[:i] != account {
			return 0, false
		}
		rest = rest[i+1:]
	}
	id, err := strconv.ParseInt(rest, 10, 64)
	return id, err == nil && id > 0
}

// entryView names what an entry belongs to and describes it: grants carry
// their own description; a hold's entries point at what the hold paid for.
func entryView(e store.LedgerEntry) LedgerEntry {
	v := LedgerEntry{ID: strconv.FormatInt(e.ID, 10), Type: e.Kind, Amount: e.Amount, AmountMicros: int64(e.Amount), CreatedAt: e.CreatedAt.UTC(),
		Reference: e.Key, Description: e.Reference}
	switch e.Kind {
	case store.EntryHold:
		v.Reference, v.Description = e.HoldKey, "credit held for "+e.HoldKey
	case store.EntryRelease:
		v.Reference, v.Description = e.HoldKey, "hold released for "+e.HoldKey
	case store.EntryCharge:
		v.Reference, v.Description = e.HoldKey, "charged for "+e.HoldKey
	case store.EntryFreeGrant:
		v.Description = "free credit for a new account"
	}
	if v.Description == "" {
		v.Description = strings.ReplaceAll(e.Kind, "_", " ")
	}
	return v
}

// Balance is the account's spendable credit.
func (s *Service) Balance(ctx context.Context, account string) (money.Micros, error) {
	return s.Store.Balance(ctx, account)
}
