package frontend_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"conduit/internal/config"
	"conduit/internal/money"
)

// The ledger history and the account-wide run history, as the dashboard
// reads them.

func TestLedgerListsTheSignUpGrantAndFilters(t *testing.T) {
	b := newBrowser(t, env.URL)
	s := b.signUp(uniqueEmail(t), "a password long enough")
	acct := s["accountId"].(string)

	st, page := b.api("GET", "/api/account/ledger", nil)
	entries, _ := page["entries"].([]any)
	if st != http.StatusOK || len(entries) != 1 || page["nextCursor"] != nil {
		t.Fatalf("new account's ledger: %d %v", st, page)
	}
	e := entries[0].(map[string]any)
	if e["type"] != "free_grant" || e["amount"] != 5.0 || e["amountMicros"] != 5e6 || e["reference"] != "free-credit/"+acct ||
		e["description"] == "" || e["id"] == "" || e["createdAt"] == nil {
		t.Fatalf("sign-up grant: %v", e)
	}

	// More movements: three packs recorded by the operator's path, a hold
	// and its capture (as a run's).
	ctx := context.Background()
	for i, paid := range []int{10, 25, 50} {
		if _, err := env.Platform.Accounts().RecordPack(ctx, acct, money.Micros(paid)*money.USD, fmt.Sprintf("test-%s-%d", acct, i)); err != nil {
			t.Fatal(err)
		}
	}
	hold, err := env.Platform.Store.Hold(ctx, acct, 1_000_000, "run/"+acct+"-test")
	if err != nil {
		t.Fatal(err)
	}
	if err := env.Platform.Store.Capture(ctx, hold, 250_000, nil); err != nil {
		t.Fatal(err)
	}
	// Newest first, every kind: release, charge, hold, three packs, the grant.
	all := ledgerPage(t, b, "")
	var kinds []string
	for _, e := range all {
		kinds = append(kinds, e["type"].(string))
	}
	if got := strings.Join(kinds, ","); got != "release,charge,hold,pack,pack,pack,free_grant" && got != "charge,release,hold,pack,pack,pack,free_grant" {
		t.Fatalf("kinds newest first: %s", got)
	}
	for _, e := range all[:3] {
		if e["reference"] != "run/"+acct+"-test" {
			t.Fatalf("a hold's entries point at what it paid for: %v", e)
		}
	}
	if all[3]["amount"] != 52.5 || all[3]["amountMicros"] != 52.5e6 || !strings.HasPrefix(all[3]["reference"].(string), "pack/") {
		t.Fatalf("the 50 pack: %v", all[3])
	}
	// Filters: types, time window.
	if packs := ledgerPage(t, b, "type=pack,free_grant"); len(packs) != 4 {
		t.Fatalf("type filter: %v", packs)
	}
	future := url.QueryEscape(time.Now().Add(time.Hour).UTC().Format(time.RFC3339))
	if none := ledgerPage(t, b, "from="+future); len(none) != 0 {
		t.Fatalf("from the future: %v", none)
	}
	if every := ledgerPage(t, b, "to="+future); len(every) != 7 {
		t.Fatalf("to the future: %v", every)
	}
	// Pages of two follow each other without gaps or repeats.
	var paged []string
	cursor := ""
	for range 10 {
		q := "limit=2"
		if cursor != "" {
			q += "&cursor=" + url.QueryEscape(cursor)
		}
		st, page := b.api("GET", "/api/account/ledger?"+q, nil)
		if st != http.StatusOK {
			t.Fatalf("page: %d %v", st, page)
		}
		for _, e := range page["entries"].([]any) {
			paged = append(paged, e.(map[string]any)["id"].(string))
		}
		next, _ := page["nextCursor"].(string)
		if next == "" {
			break
		}
		cursor = next
	}
	var ids []string
	for _, e := range all {
		ids = append(ids, e["id"].(string))
	}
	if strings.Join(paged, ",") != strings.Join(ids, ",") {
		t.Fatalf("paged %v, whole %v", paged, ids)
	}
	// Bad queries are 400s that say what is wrong.
	for q, want := range map[string]string{
		"type=gift": "type", "limit=0": "limit", "limit=201": "limit", "from=yesterday": "from", "cursor=xyz": "cursor",
	} {
		if st, body := b.api("GET", "/api/account/ledger?"+q, nil); st != http.StatusBadRequest || !strings.Contains(body["error"].(string), want) {
			t.Fatalf("%s: %d %v", q, st, body)
		}
	}
	// Another account sees only its own.
	_, key := env.NewAccount(t)
	r := wantStatus(t, do(t, "GET", "/api/account/ledger", key, nil), http.StatusOK)
	if n := len(r["entries"].([]any)); n != 1 {
		t.Fatalf("another account's ledger has %d entries", n)
	}
}

func ledgerPage(t *testing.T, b *browser, q string) []map[string]any {
	t.Helper()
	st, page := b.api("GET", "/api/account/ledger?"+q, nil)
	if st != http.StatusOK {
		t.Fatalf("ledger %s: %d %v", q, st, page)
	}
	var out []map[string]any
	for _, e := range page["entries"].([]any) {
		out = append(out, e.(map[string]any))
	}
	return out
}

func TestAccountRunsListAndDetail(t *testing.T) {
	_, key := env.NewAccount(t)
	p1 := createPipeline(t, key, echoGraph("one: {{question}}", "local-echo"))
	p2 := createPipeline(t, key, echoGraph("two: {{question}}", "local-echo"))
	publish(t, key, p1)
	publish(t, key, p2)
	var ids []string
	for i, p := range []string{p1, p2, p1} {
		acc := invoke(t, key, p, map[string]any{"question": fmt.Sprint("q", i)})
		waitRun(t, key, acc["statusUrl"].(string))
		ids = append(ids, acc["runId"].(string))
	}
	list := wantStatus(t, do(t, "GET", "/api/runs", key, nil), http.StatusOK)
	runs := list["runs"].([]any)
	if len(runs) != 3 || list["nextCursor"] != nil {
		t.Fatalf("runs: %v", list)
	}
	for i, want := range []string{ids[2], ids[1], ids[0]} {
		r := runs[i].(map[string]any)
		if r["runId"] != want || r["status"] != "success" || r["kind"] != "invoke" || r["pipelineId"] == "" {
			t.Fatalf("run %d: %v", i, r)
		}
	}
	// Filtered by pipeline; paged by one.
	only := wantStatus(t, do(t, "GET", "/api/runs?pipelineId="+p1+"&limit=1", key, nil), http.StatusOK)
	if rs := only["runs"].([]any); len(rs) != 1 || rs[0].(map[string]any)["runId"] != ids[2] || only["nextCursor"] == nil {
		t.Fatalf("pipeline filter: %v", only)
	}
	next := wantStatus(t, do(t, "GET", "/api/runs?pipelineId="+p1+"&limit=1&cursor="+url.QueryEscape(only["nextCursor"].(string)), key, nil), http.StatusOK)
	if rs := next["runs"].([]any); len(rs) != 1 || rs[0].(map[string]any)["runId"] != ids[0] {
		t.Fatalf("second page: %v", next)
	}
	if errs := wantStatus(t, do(t, "GET", "/api/runs?status=error", key, nil), http.StatusOK); len(errs["runs"].([]any)) != 0 {
		t.Fatalf("status filter: %v", errs)
	}
	wantStatus(t, do(t, "GET", "/api/runs?status=weird", key, nil), http.StatusBadRequest)
	wantStatus(t, do(t, "GET", "/api/runs?limit=1000", key, nil), http.StatusBadRequest)

	// The run page: its trace, and no Temporal UI link unless configured.
	detail := wantStatus(t, do(t, "GET", "/api/runs/"+url.PathEscape(ids[0]), key, nil), http.StatusOK)
	nodes := detail["nodes"].([]any)
	if detail["runId"] != ids[0] || detail["pipelineId"] != p1 || len(nodes) != 4 || detail["workflowUrl"] != nil || detail["workflowId"] == "" {
		t.Fatalf("detail: %v", detail)
	}
	for _, n := range nodes {
		n := n.(map[string]any)
		if n["status"] != "success" || n["startedAt"] == nil {
			t.Fatalf("node trace: %v", n)
		}
		if n["type"] == "model" && (n["costUsd"] == nil || n["promptTokens"] == nil) {
			t.Fatalf("model node trace: %v", n)
		}
	}
	// Another account's run, and a missing one: 404 alike.
	_, other := env.NewAccount(t)
	wantStatus(t, do(t, "GET", "/api/runs/"+url.PathEscape(ids[0]), other, nil), http.StatusNotFound)
	wantStatus(t, do(t, "GET", "/api/runs/"+url.PathEscape("2026-01-01T00:00:00.000Z#00000000"), key, nil), http.StatusNotFound)
	if list := wantStatus(t, do(t, "GET", "/api/runs", other, nil), http.StatusOK); len(list["runs"].([]any)) != 0 {
		t.Fatalf("another account's list: %v", list)
	}
	// Its cursor is not the other account's to use.
	wantStatus(t, do(t, "GET", "/api/runs?cursor="+url.QueryEscape(only["nextCursor"].(string)), other, nil), http.StatusBadRequest)
	// pipelines:read is needed.
	_, runOnly := env.NewAccount(t, "pipelines:run")
	wantStatus(t, do(t, "GET", "/api/runs", runOnly, nil), http.StatusForbidden)

	// With temporal.ui_url, the run links its workflow in the UI.
	base := startOAuthServer(t, func(c *config.Config) { c.Temporal.UIURL = "http://temporal-ui.example:8233/" })
	req, _ := http.NewRequest("GET", base+"/api/runs/"+url.PathEscape(ids[0]), nil)
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var r map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("detail on the second server: %d %v", resp.StatusCode, err)
	}
	wf := detail["workflowId"].(string)
	if want := "http://temporal-ui.example:8233/namespaces/default/workflows/" + url.PathEscape(wf); r["workflowUrl"] != want {
		t.Fatalf("workflowUrl %v, want %s", r["workflowUrl"], want)
	}
}
