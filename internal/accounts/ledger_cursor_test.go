package accounts

import (
	"encoding/base64"
	"testing"
)

// A ledger page token names its account; the older unbound form is still
// read.
func TestLedgerCursorIsBoundToItsAccount(t *testing.T) {
	tok := func(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }
	for _, c := range []struct {
		token string
		id    int64
		ok    bool
	}{
		{tok("ledger:acct_a:42"), 42, true},
		{tok("ledger:42"), 42, true},
		{tok("ledger:acct_b:42"), 0, false},
		{tok("ledger:acct_a:0"), 0, false},
		{tok("run:42"), 0, false},
		{"not base64!", 0, false},
	} {
		if id, ok := ledgerCursor(c.token, "acct_a"); ok != c.ok || (ok && id != c.id) {
			t.Fatalf("%q: %d %v", c.token, id, ok)
		}
	}
}
