package frontend_test

import (
	"encoding/base64"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// One paging convention (docs/paging.md): limit and after in, nextAfter
// and nextUrl out on every list; the older cursor/nextCursor still work.
func TestEveryListPagesWithAfterAndNextAfter(t *testing.T) {
	_, key := env.NewAccount(t)
	id := createPipeline(t, key, echoGraph("{{question}}", "local-echo"))
	publish(t, key, id)
	var runIDs []string
	for i := range 3 {
		r := invoke(t, key, id, map[string]any{"question": fmt.Sprint("page ", i)})
		waitRun(t, key, r["statusUrl"].(string))
		runIDs = append([]string{r["runId"].(string)}, runIDs...) // newest first
	}
	first := func(page map[string]any, list string) string {
		t.Helper()
		items := page[list].([]any)
		if len(items) != 1 {
			t.Fatalf("a page of one has %d: %v", len(items), page)
		}
		m := items[0].(map[string]any)
		if v, ok := m["runId"].(string); ok {
			return v
		}
		return m["id"].(string)
	}
	// follow reads a list one item a page: by nextAfter as after, by
	// nextUrl, and by nextCursor as cursor where the list had it.
	follow := func(path, list string, how string) []string {
		t.Helper()
		var got []string
		next := path + "limit=1"
		for range 10 {
			page := wantStatus(t, do(t, "GET", next, key, nil), http.StatusOK)
			got = append(got, first(page, list))
			after, _ := page["nextAfter"].(string)
			nextURL, _ := page["nextUrl"].(string)
			if after == "" {
				if page["nextUrl"] != nil {
					t.Fatalf("%s: a last page with a nextUrl: %v", path, page)
				}
				return got
			}
			if !strings.HasPrefix(nextURL, env.URL+"/api/") || !strings.Contains(nextURL, "after="+url.QueryEscape(after)) {
				t.Fatalf("%s: nextUrl %q does not continue after %q", path, nextURL, after)
			}
			if c, ok := page["nextCursor"]; ok && c != after {
				t.Fatalf("%s: nextCursor %v is not nextAfter %q", path, c, after)
			}
			switch how {
			case "after":
				next = path + "limit=1&after=" + url.QueryEscape(after)
			case "cursor":
				next = path + "limit=1&cursor=" + url.QueryEscape(after)
			default:
				next = strings.TrimPrefix(nextURL, env.URL)
			}
		}
		t.Fatalf("%s: more than 10 pages", path)
		return nil
	}
	for _, how := range []string{"after", "cursor", "nextUrl"} {
		if got := follow("/api/pipelines/"+id+"/runs?", "runs", how); strings.Join(got, ",") != strings.Join(runIDs, ",") {
			t.Fatalf("pipeline runs by %s: %v, want %v", how, got, runIDs)
		}
		if got := follow("/api/runs?pipelineId="+id+"&", "runs", how); strings.Join(got, ",") != strings.Join(runIDs, ",") {
			t.Fatalf("account runs by %s: %v, want %v", how, got, runIDs)
		}
		whole := wantStatus(t, do(t, "GET", "/api/account/ledger", key, nil), http.StatusOK)["entries"].([]any)
		var ids []string
		for _, e := range whole {
			ids = append(ids, e.(map[string]any)["id"].(string))
		}
		if got := follow("/api/account/ledger?", "entries", how); strings.Join(got, ",") != strings.Join(ids, ",") {
			t.Fatalf("ledger by %s: %v, want %v", how, got, ids)
		}
	}

	// A token is its caller's: another account's (or another pipeline's
	// run) is a 400 that names the parameter sent.
	_, other := env.NewAccount(t)
	otherPipeline := createPipeline(t, other, echoGraph("{{question}}", "local-echo"))
	runPage := wantStatus(t, do(t, "GET", "/api/runs?limit=1", key, nil), http.StatusOK)
	ledgerPage := wantStatus(t, do(t, "GET", "/api/account/ledger?limit=1", key, nil), http.StatusOK)
	for path, param := range map[string]string{
		"/api/runs?after=" + url.QueryEscape(runPage["nextAfter"].(string)):                "after",
		"/api/runs?cursor=" + url.QueryEscape(runPage["nextAfter"].(string)):               "cursor",
		"/api/account/ledger?after=" + url.QueryEscape(ledgerPage["nextAfter"].(string)):   "after",
		"/api/account/ledger?cursor=" + url.QueryEscape(ledgerPage["nextCursor"].(string)): "cursor",
		"/api/pipelines/" + otherPipeline + "/runs?after=" + url.QueryEscape(runIDs[0]):    "after",
	} {
		body := wantStatus(t, do(t, "GET", path, other, nil), http.StatusBadRequest)
		if msg, _ := body["error"].(string); !strings.HasPrefix(msg, param+" is not one this API gave you") {
			t.Fatalf("%s: %v", path, body)
		}
	}
	// after and cursor naming different places: which was meant is unknowable.
	wantStatus(t, do(t, "GET", "/api/runs?after=a&cursor=b", key, nil), http.StatusBadRequest)
	// A ledger token from before tokens named their account still works.
	oldToken := base64.RawURLEncoding.EncodeToString([]byte("ledger:" + strings.Split(ledgerEntryID(t, ledgerPage), ",")[0]))
	if p := wantStatus(t, do(t, "GET", "/api/account/ledger?cursor="+oldToken, key, nil), http.StatusOK); p["entries"] == nil {
		t.Fatalf("old ledger cursor: %v", p)
	}
}

func ledgerEntryID(t *testing.T, page map[string]any) string {
	t.Helper()
	return page["entries"].([]any)[0].(map[string]any)["id"].(string)
}
