package frontend_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"conduit/app/apptest"
	"conduit/frontend"
	"conduit/internal/money"
	"conduit/internal/payments"
)

// scrape reads the platform's /metrics (its own listener) into sample
// lines "name{labels} value".
func scrape(t *testing.T) []string {
	t.Helper()
	resp, err := http.Get(env.MetricsURL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/plain") {
		t.Fatalf("GET /metrics: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	var lines []string
	for _, l := range strings.Split(string(body), "\n") {
		if l != "" && !strings.HasPrefix(l, "#") {
			lines = append(lines, l)
		}
	}
	return lines
}

// series is the set of "name{labels}" of the samples whose name starts
// with prefix.
func series(lines []string, prefix string) map[string]bool {
	out := map[string]bool{}
	for _, l := range lines {
		if strings.HasPrefix(l, prefix) {
			out[l[:strings.LastIndexByte(l, ' ')]] = true
		}
	}
	return out
}

func exported(lines []string, name string) bool {
	for _, l := range lines {
		if l == name || strings.HasPrefix(l, name+"{") || strings.HasPrefix(l, name+" ") {
			return true
		}
	}
	return false
}

// /metrics is not on the API's port: only on its own listener.
func TestMetricsAreNotOnTheAPIPort(t *testing.T) {
	r := env.Do(t, "GET", "/metrics", nil)
	if r.Status != http.StatusNotFound || strings.Contains(string(r.Body), "conduit_http_requests_total") {
		t.Fatalf("GET /metrics on the API port: %d %s", r.Status, r.Body)
	}
}

// After real traffic (runs, a paid render, a refused payment, requests
// for many distinct run ids and unknown paths), /metrics carries the
// Temporal SDK's series and ours, every metric the Grafana dashboard
// queries is exported, and no request added a label value of its own.
func TestMetricsScrapeDashboardAndBoundedLabels(t *testing.T) {
	_, key := env.NewAccount(t)
	id, _ := chatPipeline(t, key, "local-echo")
	run := invoke(t, key, id, map[string]any{"question": "metrics"})
	waitRun(t, key, run["statusUrl"].(string))
	// A refused payment (no signature) and a paid render.
	if r := env.Do(t, "POST", payments.TopUpPath, nil); r.Status != http.StatusPaymentRequired {
		t.Fatalf("top-up without a payment: %d %s", r.Status, r.Body)
	}
	w := newWallet(t, money.USD)
	wantStatus(t, buy(t, frontend.SpeechPath, w, map[string]any{"text": "Counting renders.", "async": true}), http.StatusOK)

	distinct := func(round string) []string {
		var ids []string
		for i := range 12 {
			rid := fmt.Sprintf("%s-%d-%d", round, i, time.Now().UnixNano())
			ids = append(ids, rid)
			do(t, "GET", "/api/pipelines/"+id+"/invoke?runId="+rid, key, nil)
			do(t, "GET", "/api/runs/"+rid, key, nil)
			env.Do(t, "GET", "/no/such/"+rid, nil)
			env.Do(t, "BREW"+fmt.Sprint(i), "/api/runs/"+rid, nil)
		}
		return ids
	}
	first := distinct("a")
	var lines []string
	want := []string{"conduit_http_requests_total", "conduit_runs_admitted_total", "conduit_runs_finished_total",
		"conduit_credit_held_microusd_total", "conduit_renders_total", "conduit_payments_refused_total",
		"conduit_db_pool_connections", "temporal_workflow_completed_total", "temporal_activity_execution_latency_seconds_bucket"}
	apptest.Eventually(t, 60*time.Second, "the platform's and the SDK's series", func() error {
		lines = scrape(t)
		for _, name := range want {
			if !exported(lines, name) {
				return fmt.Errorf("%s is not exported", name)
			}
		}
		return nil
	})
	before := series(lines, "conduit_http_")
	second := distinct("b")
	after := series(scrape(t), "conduit_http_")
	if len(after) != len(before) {
		var added []string
		for s := range after {
			if !before[s] {
				added = append(added, s)
			}
		}
		sort.Strings(added)
		t.Fatalf("requests for new run ids and paths added %d HTTP series: %v", len(added), added)
	}
	all := strings.Join(scrape(t), "\n")
	for _, rid := range append(first, second...) {
		if strings.Contains(all, rid) {
			t.Fatalf("a run id reached a label: %s", rid)
		}
	}
	if !strings.Contains(all, `route="/api/pipelines/:id/invoke"`) || !strings.Contains(all, `route="unmatched"`) || !strings.Contains(all, `method="other"`) {
		t.Fatalf("routes are not labelled by template:\n%s", all)
	}

	// The dashboard is valid JSON, and each query names exported metrics.
	raw, err := os.ReadFile("../deploy/grafana/conduit.json")
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Title  string `json:"title"`
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	if err := dec.Decode(&dash); err != nil || dash.Title == "" {
		t.Fatalf("the dashboard is not valid JSON: %v", err)
	}
	metric := regexp.MustCompile(`\b(?:conduit|temporal)_[a-z0-9_]+`)
	queries := 0
	apptest.Eventually(t, 60*time.Second, "every dashboard metric exported", func() error {
		lines := scrape(t)
		queries = 0
		for _, p := range dash.Panels {
			for _, q := range p.Targets {
				names := metric.FindAllString(q.Expr, -1)
				if len(names) == 0 {
					return fmt.Errorf("panel %q: query %q names no platform metric", p.Title, q.Expr)
				}
				for _, n := range names {
					if !exported(lines, n) {
						return fmt.Errorf("panel %q: %s is not exported", p.Title, n)
					}
				}
				queries++
			}
		}
		return nil
	})
	if queries < 10 {
		t.Fatalf("the dashboard has %d queries", queries)
	}
}
