package store_test

import (
	"context"
	"fmt"
	"testing"

	"conduit/internal/money"
	"conduit/internal/store"
)

// Read by run, a hold's hold, release and charge are one line whose
// amount is what the run cost; paging counts lines, not entries, so no
// line is split across pages or read twice.
func TestLedgerLinesFoldEachHold(t *testing.T) {
	ctx := context.Background()
	id := newAccount(t, 5*money.USD)
	// Five runs: three charged 0.25, one released whole, one still held.
	for i := range 5 {
		h, err := st.Hold(ctx, id, money.USD, fmt.Sprintf("run/r%d", i))
		if err != nil {
			t.Fatal(err)
		}
		switch i {
		case 0, 1, 2:
			err = st.Capture(ctx, h, money.USD/4, nil)
		case 3:
			err = st.Release(ctx, h, nil)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	entries, err := st.LedgerPage(ctx, id, store.LedgerQuery{Limit: 100})
	if err != nil || len(entries) != 1+5+4+3 {
		t.Fatalf("entries %d: %v", len(entries), err)
	}

	var lines []store.LedgerLine
	before := int64(0)
	for page := 0; ; page++ {
		got, err := st.LedgerLines(ctx, id, store.LedgerQuery{Limit: 2, Before: before})
		if err != nil {
			t.Fatal(err)
		}
		if len(got) == 0 {
			break
		}
		if len(got) > 2 || page > 5 {
			t.Fatalf("page %d has %d lines", page, len(got))
		}
		lines = append(lines, got...)
		before = got[len(got)-1].ID
	}
	if len(lines) != 6 {
		t.Fatalf("%d lines, want 6 (five runs and the free grant): %+v", len(lines), lines)
	}
	want := []struct {
		kind    string
		amount  money.Micros
		entries int
	}{
		{store.EntryHold, -money.USD, 1},
		{store.EntryRelease, 0, 2},
		{store.EntryCharge, -money.USD / 4, 3},
		{store.EntryCharge, -money.USD / 4, 3},
		{store.EntryCharge, -money.USD / 4, 3},
		{store.EntryFreeGrant, 5 * money.USD, 1},
	}
	var sum money.Micros
	for i, w := range want {
		l := lines[i]
		if l.Kind != w.kind || l.Amount != w.amount || len(l.Entries) != w.entries {
			t.Fatalf("line %d: %s %s with %d entries, want %s %s with %d", i, l.Kind, l.Amount, len(l.Entries), w.kind, w.amount, w.entries)
		}
		var parts money.Micros
		for _, e := range l.Entries {
			parts += e.Amount
			if e.ID > l.ID {
				t.Fatalf("line %d: entry %d after the line's id %d", i, e.ID, l.ID)
			}
		}
		if parts != l.Amount {
			t.Fatalf("line %d: entries sum to %s, the line says %s", i, parts, l.Amount)
		}
		if i < 5 && l.Entries[0].HoldKey != fmt.Sprintf("run/r%d", 4-i) {
			t.Fatalf("line %d belongs to %q", i, l.Entries[0].HoldKey)
		}
		sum += l.Amount
	}
	if sum != balance(t, id) {
		t.Fatalf("lines sum to %s, balance %s", sum, balance(t, id))
	}

	// Filtered by kind: the charged runs only.
	charged, err := st.LedgerLines(ctx, id, store.LedgerQuery{Kinds: []string{store.EntryCharge}, Limit: 10})
	if err != nil || len(charged) != 3 {
		t.Fatalf("charged lines: %d %v", len(charged), err)
	}
	// Another account's ledger has none of them.
	other := newAccount(t, 0)
	if l, err := st.LedgerLines(ctx, other, store.LedgerQuery{Limit: 10}); err != nil || len(l) != 0 {
		t.Fatalf("another account: %+v %v", l, err)
	}
}
