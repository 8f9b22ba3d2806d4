package frontend_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"conduit/internal/money"
)

// group=run: one line per run, its hold, release and charge folded in as
// parts; pages of lines follow nextAfter without splitting or repeating
// a run; the per-entry view is unchanged; a bad group is a 400.
func TestLedgerGroupedByRun(t *testing.T) {
	acct, key := env.NewAccount(t)
	ctx := context.Background()
	for i := range 3 {
		h, err := env.Platform.Store.Hold(ctx, acct, money.USD, fmt.Sprintf("run/%s-%d", acct, i))
		if err != nil {
			t.Fatal(err)
		}
		if err := env.Platform.Store.Capture(ctx, h, 123_456, nil); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(wantStatus(t, do(t, "GET", "/api/account/ledger?limit=200", key, nil), http.StatusOK)["entries"].([]any)); n != 1+3*3 {
		t.Fatalf("per-entry view: %d entries", n)
	}
	var lines []map[string]any
	q := "/api/account/ledger?group=run&limit=2"
	for page := 0; q != ""; page++ {
		if page > 3 {
			t.Fatal("too many pages")
		}
		body := wantStatus(t, do(t, "GET", q, key, nil), http.StatusOK)
		for _, e := range body["entries"].([]any) {
			lines = append(lines, e.(map[string]any))
		}
		q = ""
		if next, _ := body["nextUrl"].(string); next != "" && !strings.Contains(next, "group=run") {
			t.Fatalf("nextUrl %s loses the grouping", next)
		}
		if next, _ := body["nextAfter"].(string); next != "" {
			q = "/api/account/ledger?group=run&limit=2&after=" + url.QueryEscape(next)
		}
	}
	if len(lines) != 4 {
		t.Fatalf("%d lines, want 3 runs and the free grant: %v", len(lines), lines)
	}
	for i, l := range lines[:3] {
		parts, _ := l["parts"].([]any)
		if l["type"] != "charge" || l["amountMicros"] != -123456.0 || l["amount"] != -0.123456 || len(parts) != 3 ||
			l["reference"] != fmt.Sprintf("run/%s-%d", acct, 2-i) {
			t.Fatalf("line %d: %v", i, l)
		}
		kinds := map[string]bool{}
		for _, p := range parts {
			kinds[p.(map[string]any)["type"].(string)] = true
		}
		if !kinds["hold"] || !kinds["release"] || !kinds["charge"] {
			t.Fatalf("line %d parts: %v", i, parts)
		}
	}
	if lines[3]["type"] != "free_grant" || lines[3]["parts"] != nil {
		t.Fatalf("the grant line: %v", lines[3])
	}
	if only := wantStatus(t, do(t, "GET", "/api/account/ledger?group=run&type=free_grant", key, nil), http.StatusOK)["entries"].([]any); len(only) != 1 {
		t.Fatalf("type filter on lines: %v", only)
	}
	wantStatus(t, do(t, "GET", "/api/account/ledger?group=hold", key, nil), http.StatusBadRequest)
}
