package frontend_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"conduit/app/apptest"
	"conduit/frontend"
	"conduit/internal/money"
)

// A runId sent with its '#' raw reaches the server as the timestamp alone
// (the rest is the URL's fragment). The 404 says to encode '#' as %23, on
// the invoke poll and on the pay-per-call statusUrl, whose token is cut
// off with it.
func TestRawHashInRunIDSaysToEncodeIt(t *testing.T) {
	wantHint := func(t *testing.T, r *apptest.Response, stamp string) {
		t.Helper()
		if r.Status != http.StatusNotFound {
			t.Fatalf("status %d, want 404: %s", r.Status, r.Body)
		}
		msg, _ := r.JSON(t)["error"].(string)
		if !strings.Contains(msg, "%23") || !strings.Contains(msg, stamp) || !strings.Contains(msg, "'#'") {
			t.Fatalf("the 404 does not say to encode '#': %q", msg)
		}
	}

	_, key := env.NewAccount(t)
	id, _ := chatPipeline(t, key, "local-echo")
	runID := invoke(t, key, id, map[string]any{"question": "hash"})["runId"].(string)
	stamp, _, _ := strings.Cut(runID, "#")
	// '#' raw, as a careless client sends it.
	wantHint(t, do(t, "GET", "/api/pipelines/"+id+"/invoke?runId="+runID, key, nil), stamp)
	wantStatus(t, do(t, "GET", "/api/pipelines/"+id+"/invoke?runId="+url.QueryEscape(runID), key, nil), http.StatusOK)

	w := newWallet(t, money.USD)
	rec := wantStatus(t, buy(t, frontend.SpeechPath, w, map[string]any{"text": "Hash marks the spot.", "async": true}), http.StatusOK)
	statusURL := rec["statusUrl"].(string)
	stamp, _, _ = strings.Cut(rec["runId"].(string), "#")
	raw := strings.Replace(statusURL, "%23", "#", 1)
	wantHint(t, get(t, raw), stamp)
	wantHint(t, post(t, strings.Replace(raw, "?", "/retry?", 1), nil), stamp)
	wantStatus(t, get(t, statusURL), http.StatusOK)
}
