package frontend_test

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	sdkworker "go.temporal.io/sdk/worker"

	"conduit/app"
	"conduit/app/apptest"
	"conduit/frontend"
	"conduit/internal/telemetry"
	"conduit/workflows"
)

// This package's platform starts with the tracing instrumentation in place
// (the Temporal interceptor, SQL spans) and no exporter, so a test records
// spans (telemetry.Record); nothing is recorded otherwise. Other packages'
// harnesses (the bench) run without it, as production does by default.
func init() { app.Instrument = true }

// An invoke is one trace: the handler's span (continuing the caller's
// traceparent), the client's StartWorkflow, the workflow, its activities
// and their SQL. The answer echoes traceparent and the request id, and
// the request's log lines carry the trace id. A query on the finished
// workflow after the worker's cache is purged replays it, and no second
// workflow span appears.
func TestInvokeIsOneTraceAndReplayAddsNoSpan(t *testing.T) {
	rec := telemetry.Record()
	defer rec.Stop()
	_, key := env.NewAccount(t)
	id, _ := chatPipeline(t, key, "local-echo")

	traceID := "4bf92f3577b34da6a3ce929d0e0e4736"
	r := do(t, "POST", "/api/pipelines/"+id+"/invoke", key, map[string]any{"inputs": map[string]any{"question": "trace"}},
		"traceparent", "00-"+traceID+"-00f067aa0ba902b7-01", frontend.RequestIDHeader, "trace-test-1")
	run := wantStatus(t, r, http.StatusAccepted)
	if tp := r.Header.Get("traceparent"); !strings.HasPrefix(tp, "00-"+traceID+"-") || strings.Contains(tp, "00f067aa0ba902b7") {
		t.Fatalf("traceparent answered %q: want the caller's trace with the request's own span", tp)
	}
	if r.Header.Get(frontend.RequestIDHeader) != "trace-test-1" {
		t.Fatalf("X-Request-Id answered %q", r.Header.Get(frontend.RequestIDHeader))
	}
	waitRun(t, key, run["statusUrl"].(string))

	inTrace := func() tracetest.SpanStubs {
		var out tracetest.SpanStubs
		for _, s := range rec.GetSpans() {
			if s.SpanContext.TraceID().String() == traceID {
				out = append(out, s)
			}
		}
		return out
	}
	byName := func(spans tracetest.SpanStubs, name string) tracetest.SpanStubs {
		var out tracetest.SpanStubs
		for _, s := range spans {
			if s.Name == name {
				out = append(out, s)
			}
		}
		return out
	}
	var workflowID string
	apptest.Eventually(t, 60*time.Second, "the invoke's trace", func() error {
		spans := inTrace()
		server := byName(spans, "POST /api/pipelines/:id/invoke")
		wf := byName(spans, "RunWorkflow:"+workflows.WfPipelineRun)
		open := byName(spans, "RunActivity:"+workflows.ActOpenRun)
		if len(server) != 1 || len(wf) != 1 || len(open) != 1 {
			return fmt.Errorf("server %d, workflow %d, open activity %d spans in %d", len(server), len(wf), len(open), len(spans))
		}
		byID := map[string]tracetest.SpanStub{}
		for _, s := range spans {
			byID[s.SpanContext.SpanID().String()] = s
		}
		// The client's start (Update-with-Start here) is the workflow's
		// parent, under the request's span; the activity under the workflow.
		start, ok := byID[wf[0].Parent.SpanID().String()]
		if !ok || !(strings.HasPrefix(start.Name, "StartWorkflow:") || strings.HasPrefix(start.Name, "UpdateWithStartWorkflow:")) || start.Parent.SpanID() != server[0].SpanContext.SpanID() {
			return fmt.Errorf("the workflow does not nest under the request through the client's start (parent %q)", start.Name)
		}
		under := func(s tracetest.SpanStub, ancestor tracetest.SpanStub) bool {
			for range 8 {
				p, ok := byID[s.Parent.SpanID().String()]
				if !ok {
					return false
				}
				if p.SpanContext.SpanID() == ancestor.SpanContext.SpanID() {
					return true
				}
				s = p
			}
			return false
		}
		if !under(open[0], wf[0]) {
			return fmt.Errorf("the OpenRun activity does not nest under the workflow")
		}
		sql := 0
		for _, s := range spans {
			if strings.HasPrefix(s.Name, "db ") && s.Parent.SpanID() == open[0].SpanContext.SpanID() {
				sql++
			}
		}
		if sql == 0 {
			return fmt.Errorf("no SQL span under the OpenRun activity")
		}
		workflowID = telemetry.Attr(wf[0], "temporalWorkflowID")
		return nil
	})
	if !strings.Contains(env.Logs(), `"request_id":"trace-test-1","trace_id":"`+traceID+`"`) {
		t.Fatalf("the request's log line does not carry its trace id")
	}

	// Replay: no worker holds the workflow any more, so the query replays
	// its history from the start (the replay counter says it did).
	replays := func() float64 {
		for _, l := range scrape(t) {
			if v, ok := strings.CutPrefix(l, "conduit_workflow_replays_total "); ok {
				n, err := strconv.ParseFloat(v, 64)
				if err != nil {
					t.Fatal(err)
				}
				return n
			}
		}
		t.Fatal("conduit_workflow_replays_total is not exported")
		return 0
	}
	before := replays()
	sdkworker.PurgeStickyWorkflowCache()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := env.Platform.Temporal.QueryWorkflow(ctx, workflowID, "", workflows.StatusQuery); err != nil {
		t.Fatalf("query: %v", err)
	}
	if replays() <= before {
		t.Fatal("the query did not replay the workflow")
	}
	ofWorkflow := func(name string) int {
		n := 0
		for _, s := range byName(rec.GetSpans(), name) {
			if telemetry.Attr(s, "temporalWorkflowID") == workflowID {
				n++
			}
		}
		return n
	}
	if n := ofWorkflow("RunWorkflow:" + workflows.WfPipelineRun); n != 1 {
		t.Fatalf("%d workflow spans after the replaying query, want 1", n)
	}
}
