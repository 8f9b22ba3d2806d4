package frontend_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"conduit/app/apptest"
	"conduit/frontend"
	"conduit/internal/money"
)

// While PostgreSQL is down the API answers 503 with Retry-After in each
// endpoint's error shape (not 500), a stored file is still served (the
// blob store is not the database) and its delivery is recorded once the
// database is back; the API recovers by itself, without a restart.
func TestDatabaseOutageIs503AndRecovers(t *testing.T) {
	ctx := context.Background()
	_, key := env.NewAccount(t)
	id, _ := chatPipeline(t, key, "local-echo")
	w := newWallet(t, money.USD)
	rec := wantStatus(t, buy(t, frontend.SpeechPath, w, map[string]any{"text": "Served while the database was away.", "async": true}), http.StatusOK)
	runID := rec["runId"].(string)
	awaitWorkflow(t, runID)
	run, err := env.Platform.Store.MediaRun(ctx, runID)
	if err != nil || run.Status != "success" || run.FileKey == "" || run.DeliveredAt != nil {
		t.Fatalf("%+v %v", run, err)
	}
	fileURL := env.URL + frontend.FilesPath + run.FileKey + "?c=" + env.Platform.Media.Files.Sign(run.FileKey)

	env.StopDatabase(t)

	chat := map[string]any{"messages": []map[string]string{{"role": "user", "content": "hi"}}}
	for _, c := range []struct {
		method, path string
		body         any
		openAI       bool
	}{
		{"GET", "/api/account/balance", nil, false},
		{"GET", "/api/pipelines", nil, false},
		{"POST", "/api/pipelines/" + id + "/invoke", map[string]any{"inputs": map[string]any{"question": "hi"}}, false},
		{"POST", "/api/pipelines/" + id + "/chat/completions", chat, true},
		{"GET", strings.TrimPrefix(rec["statusUrl"].(string), env.URL), nil, false},
	} {
		r := do(t, c.method, c.path, key, c.body)
		if r.Status != http.StatusServiceUnavailable || r.Header.Get("Retry-After") != "5" {
			t.Fatalf("%s %s during the outage: %d (Retry-After %q) %s", c.method, c.path, r.Status, r.Header.Get("Retry-After"), r.Body)
		}
		body := r.JSON(t)
		msg, _ := body["error"].(string)
		if c.openAI {
			e, _ := body["error"].(map[string]any)
			msg, _ = e["message"].(string)
		}
		if !strings.Contains(msg, "temporarily unavailable") {
			t.Fatalf("%s %s: not the endpoint's error shape: %s", c.method, c.path, r.Body)
		}
	}
	if r := env.Do(t, "GET", "/healthz", nil); r.Status != http.StatusServiceUnavailable || r.JSON(t)["postgres"] != "unreachable" {
		t.Fatalf("healthz during the outage: %d %s", r.Status, r.Body)
	}
	// The file itself is on the blob store: it is served.
	resp, err := http.Get(fileURL)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "audio/mpeg" || len(b) == 0 {
		t.Fatalf("the file during the outage: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}

	env.StartDatabase(t)

	// The same server answers again, and the download made during the
	// outage is recorded.
	if bal := balanceUSD(t, key); bal <= 0 {
		t.Fatalf("balance %v", bal)
	}
	apptest.Eventually(t, 30*time.Second, "the delivery during the outage to be recorded", func() error {
		run, err := env.Platform.Store.MediaRun(ctx, runID)
		if err == nil && run.DeliveredAt == nil {
			err = fmt.Errorf("not delivered: %+v", run)
		}
		return err
	})
	if !strings.Contains(env.Logs(), "recorded a delivery kept during a database outage") {
		t.Fatal("the delivery was not recorded by the retry")
	}
}
