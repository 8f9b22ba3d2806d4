package accounts

import (
	"context"
	"encoding/base64"
	"slices"
	"strconv"
	"strings"
	"time"

	"conduit/internal/errs"
	"conduit/internal/money"
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
	// Cursor is a previous page's NextCursor (empty: the newest entries).
	Cursor string
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
}

// LedgerPage is a page of entries, newest first; NextCursor asks for the
// next page (null on the last).
type LedgerPage struct {
	Entries    []LedgerEntry `json:"entries"`
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
	if q.Cursor != "" {
		id, ok := ledgerCursor(q.Cursor)
		if !ok {
			return LedgerPage{}, errs.Invalidf("cursor is not one this API gave out (use nextCursor of the previous page)")
		}
		sq.Before = id
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
		c := base64.RawURLEncoding.EncodeToString([]byte("ledger:" + strconv.FormatInt(rows[want-1].ID, 10)))
		page.NextCursor = &c
	}
	for _, r := range rows {
		page.Entries = append(page.Entries, entryView(r))
	}
	return page, nil
}

func ledgerCursor(c string) (int64, bool) {
	b, err := base64.RawURLEncoding.DecodeString(c)
	if err != nil {
		return 0, false
	}
	rest, ok := strings.CutPrefix(string(b), "ledger:")
	if !ok {
		return 0, false
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
