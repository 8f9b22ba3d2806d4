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
