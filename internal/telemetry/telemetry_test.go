package telemetry

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gin-gonic/gin"
	"go.opentelemetry.io/otel/trace"
)

func scrapeText(t *testing.T) string {
	t.Helper()
	rec := httptest.NewRecorder()
	Handler().ServeHTTP(rec, httptest.NewRequest("GET", MetricsPath, nil))
	if rec.Code != http.StatusOK {
		t.Fatalf("GET /metrics: %d", rec.Code)
	}
	return rec.Body.String()
}

func TestDomainMetricsAreExportedInPrometheusText(t *testing.T) {
	if _, err := Start(context.Background(), Options{}); err != nil {
		t.Fatal(err)
	}
	RunAdmitted(1500)
	RunFinished("success")
	RunFinished("a run id 123") // not an outcome: "other"
	CreditSettled(1500, 1000)
	PaymentRefused("verify", "invalid_exact_evm_signature")
	PaymentRefused("settle", "Some Facilitator's Prose!")
	done := RenderStarted("speech")
	done(nil)
	text := scrapeText(t)
	for _, want := range []string{
		"conduit_runs_admitted_total 1", `conduit_runs_finished_total{outcome="success"} 1`, `conduit_runs_finished_total{outcome="other"} 1`,
		"conduit_credit_held_microusd_total 1500", "conduit_credit_captured_microusd_total 1000", "conduit_credit_released_microusd_total 500",
		`conduit_payments_refused_total{reason="invalid_exact_evm_signature",stage="verify"} 1`,
		`conduit_payments_refused_total{reason="other",stage="settle"} 1`,
		`conduit_renders_total{kind="speech",outcome="success"} 1`, `conduit_render_duration_seconds_count{kind="speech"} 1`,
		`conduit_enclave_transitions_total{state="DEPLOYED"} 0`, "go_goroutines", "conduit_db_pool_max_connections",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("missing %q", want)
		}
	}
}

func TestFreeFormLabelsAreBounded(t *testing.T) {
	for i := range 3 * maxValues {
		TaskFiring(fmt.Sprintf("outcome%d", i))
		PaymentRefused("verify", fmt.Sprintf("reason_%d", i))
	}
	text := scrapeText(t)
	count := func(prefix string) int {
		n := 0
		for _, l := range strings.Split(text, "\n") {
			if strings.HasPrefix(l, prefix) {
				n++
			}
		}
		return n
	}
	if n := count("conduit_task_firings_total{"); n > maxValues+4 {
		t.Fatalf("%d task firing series", n)
	}
	if n := count("conduit_payments_refused_total{"); n > maxValues+2 {
		t.Fatalf("%d refusal series", n)
	}
	for in, want := range map[string]string{"GET": "GET", "BREW": "other", "": "other"} {
		if got := boundedMethod(in); got != want {
			t.Errorf("boundedMethod(%q) = %q", in, got)
		}
	}
	for code, want := range map[int]string{200: "2xx", 302: "3xx", 404: "4xx", 503: "5xx"} {
		if got := statusClass(code); got != want {
			t.Errorf("statusClass(%d) = %q", code, got)
		}
	}
}

// A request continues the caller's trace, answers its own traceparent,
// and is counted under its route template; with nobody consuming spans
// it is not recorded, with a recorder it is.
func TestGinTraceEchoAndMetrics(t *testing.T) {
	r := gin.New()
	var recording bool
	r.Use(GinTrace(), GinEcho(), GinMetrics())
	r.GET("/items/:id", func(c *gin.Context) {
		recording = trace.SpanFromContext(c.Request.Context()).IsRecording()
		c.String(200, "ok")
	})
	srv := httptest.NewServer(r)
	defer srv.Close()
	get := func(path string) *http.Response {
		req, _ := http.NewRequest("GET", srv.URL+path, nil)
		req.Header.Set("traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp
	}
	resp := get("/items/run-1")
	tp := resp.Header.Get("traceparent")
	if !strings.HasPrefix(tp, "00-4bf92f3577b34da6a3ce929d0e0e4736-") || strings.Contains(tp, "00f067aa0ba902b7") {
		t.Fatalf("traceparent %q", tp)
	}
	if recording {
		t.Fatal("a span was recorded with nobody consuming spans")
	}
	rec := Record()
	defer rec.Stop()
	get("/items/run-2")
	if !recording {
		t.Fatal("no span was recorded while recording")
	}
	// The server span ends after the answer is sent.
	deadline := time.Now().Add(10 * time.Second)
	for len(rec.GetSpans()) == 0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	spans := rec.GetSpans()
	if len(spans) != 1 || spans[0].Name != "GET /items/:id" || spans[0].SpanContext.TraceID().String() != "4bf92f3577b34da6a3ce929d0e0e4736" {
		t.Fatalf("spans: %+v", spans)
	}
	get("/nowhere/run-3")
	text := scrapeText(t)
	if !strings.Contains(text, `conduit_http_requests_total{code="2xx",method="GET",route="/items/:id"} 2`) ||
		!strings.Contains(text, `conduit_http_requests_total{code="4xx",method="GET",route="unmatched"} 1`) || strings.Contains(text, "run-") {
		t.Fatalf("HTTP series:\n%s", text)
	}
}
