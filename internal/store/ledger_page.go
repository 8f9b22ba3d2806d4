package store

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"conduit/internal/money"
)

// EntryKinds are every kind of ledger entry, in the order they are
// documented.
var EntryKinds = []string{EntryFreeGrant, EntryTopUp, EntryPack, EntryGrant, EntryPayment, EntryHold, EntryRelease, EntryCharge, EntryRefund}

// LedgerEntry is one ledger row as its owner reads it.
type LedgerEntry struct {
	ID     int64
	Kind   string
	Amount money.Micros
	// Key is the entry's idempotency key; HoldKey the key of the hold it
	// belongs to (hold, release, charge: run/<runId>, render/<runId>, …).
	Key       string
	HoldKey   string
	Reference string
	CreatedAt time.Time
}

// LedgerQuery selects a page of an account's ledger, newest first.
type LedgerQuery struct {
	// Kinds filters when not empty.
	Kinds []string
	// From (inclusive) and To (exclusive) bound created_at when set.
	From, To *time.Time
	// Before continues below a previous page's last entry id (0: from the
	// newest).
	Before int64
	Limit  int
}

// LedgerPage reads a page of the account's entries, newest first.
func (s *Store) LedgerPage(ctx context.Context, account string, q LedgerQuery) ([]LedgerEntry, error) {
	kinds := q.Kinds
	if kinds == nil {
		kinds = []string{}
	}
	return queryList(ctx, s, func(row pgx.Row) (LedgerEntry, error) {
		var e LedgerEntry
		err := row.Scan(&e.ID, &e.Kind, &e.Amount, &e.Key, &e.HoldKey, &e.Reference, &e.CreatedAt)
		return e, err
	}, `
		SELECT e.id, e.kind, e.amount_micros, e.idempotency_key, coalesce(h.idempotency_key, ''), e.reference, e.created_at
		FROM ledger_entries e LEFT JOIN holds h ON h.id = e.hold_id
		WHERE e.account_id = $1
		  AND (cardinality($2::text[]) = 0 OR e.kind = ANY($2))
		  AND ($3::timestamptz IS NULL OR e.created_at >= $3)
		  AND ($4::timestamptz IS NULL OR e.created_at < $4)
		  AND ($5 = 0 OR e.id < $5)
		ORDER BY e.id DESC
		LIMIT $6`, account, kinds, q.From, q.To, q.Before, q.Limit)
}

// LedgerLine is one line of the ledger read by run: a hold's entries
// (hold, release, charge) folded into one line, or an entry that belongs
// to no hold on its own.
type LedgerLine struct {
	// ID is the line's newest entry id (its place in the ledger and its
	// page cursor).
	ID int64
	// Kind is charge when the hold was charged, release when it was
	// released whole, hold while it is held; else the entry's own kind.
	Kind string
	// Amount is the line's net movement: what the run cost (negative),
	// what is still held, or the entry's amount.
	Amount    money.Micros
	CreatedAt time.Time
	// Entries are the folded entries, oldest first.
	Entries []LedgerEntry
}

// LedgerLines reads a page of the account's ledger one line per hold,
// newest first. Grouping happens here so that a page holds Limit lines
// whatever number of entries they fold. Kinds filter lines by their Kind;
// From and To bound a line's first entry; Before continues below a line
// ID.
func (s *Store) LedgerLines(ctx context.Context, account string, q LedgerQuery) ([]LedgerLine, error) {
	kinds := q.Kinds
	if kinds == nil {
		kinds = []string{}
	}
	type head struct {
		group string
		line  LedgerLine
	}
	heads, err := queryList(ctx, s, func(row pgx.Row) (head, error) {
		var h head
		err := row.Scan(&h.group, &h.line.ID, &h.line.Kind, &h.line.Amount, &h.line.CreatedAt)
		return h, err
	}, `
		WITH g AS (
			SELECT coalesce(e.hold_id, 'entry/' || e.id) AS grp, max(e.id) AS id, sum(e.amount_micros) AS amount,
			       min(e.created_at) AS created_at,
			       CASE WHEN e.hold_id IS NULL THEN min(e.kind)
			            WHEN bool_or(e.kind = 'charge') THEN 'charge'
			            WHEN bool_or(e.kind = 'release') THEN 'release'
			            ELSE 'hold' END AS kind
			FROM ledger_entries e
			WHERE e.account_id = $1
			GROUP BY 1, e.hold_id IS NULL
		)
		SELECT grp, id, kind, amount, created_at FROM g
		WHERE (cardinality($2::text[]) = 0 OR kind = ANY($2))
		  AND ($3::timestamptz IS NULL OR created_at >= $3)
		  AND ($4::timestamptz IS NULL OR created_at < $4)
		  AND ($5 = 0 OR id < $5)
		ORDER BY id DESC
		LIMIT $6`, account, kinds, q.From, q.To, q.Before, q.Limit)
	if err != nil || len(heads) == 0 {
		return nil, err
	}
	groups := make([]string, len(heads))
	at := make(map[string]int, len(heads))
	lines := make([]LedgerLine, len(heads))
	for i, h := range heads {
		groups[i], at[h.group], lines[i] = h.group, i, h.line
	}
	type part struct {
		group string
		e     LedgerEntry
	}
	parts, err := queryList(ctx, s, func(row pgx.Row) (part, error) {
		var p part
		err := row.Scan(&p.group, &p.e.ID, &p.e.Kind, &p.e.Amount, &p.e.Key, &p.e.HoldKey, &p.e.Reference, &p.e.CreatedAt)
		return p, err
	}, `
		SELECT coalesce(e.hold_id, 'entry/' || e.id), e.id, e.kind, e.amount_micros, e.idempotency_key,
		       coalesce(h.idempotency_key, ''), e.reference, e.created_at
		FROM ledger_entries e LEFT JOIN holds h ON h.id = e.hold_id
		WHERE e.account_id = $1 AND coalesce(e.hold_id, 'entry/' || e.id) = ANY($2)
		ORDER BY e.id`, account, groups)
	if err != nil {
		return nil, err
	}
	for _, p := range parts {
		i := at[p.group]
		lines[i].Entries = append(lines[i].Entries, p.e)
	}
	return lines, nil
}
