package telemetry

import (
	"context"
	"crypto/sha256"
	"log/slog"
	"strings"
	"sync"

	"go.opentelemetry.io/otel/trace"
	"go.temporal.io/sdk/client"
	temporalotel "go.temporal.io/sdk/contrib/opentelemetry"
	"go.temporal.io/sdk/interceptor"
	"go.temporal.io/sdk/workflow"
)

// ClientOptions gives a Temporal client (and every worker built on it) the
// SDK's metrics in this process's registry and, with tracing in place, the
// tracing interceptor: StartWorkflow from the request's span, the
// workflow's span, its activities' spans, all in the request's trace.
func (t *Telemetry) ClientOptions(opts *client.Options, log *slog.Logger) error {
	if err := setup(); err != nil {
		return err
	}
	opts.MetricsHandler = temporalotel.NewMetricsHandler(temporalotel.MetricsHandlerOptions{
		Meter: meters.Meter("temporal-sdk-go"), UseMonotonicCounters: true,
		OnError: func(err error) { log.Warn("a Temporal SDK metric could not be recorded", "error", err) },
	})
	if !t.Tracing() {
		return nil
	}
	i, err := TemporalInterceptor()
	if err != nil {
		return err
	}
	opts.Interceptors = append(opts.Interceptors, i)
	return nil
}

// TemporalInterceptor is the SDK's OpenTelemetry tracing interceptor made
// replay-safe. The contrib interceptor starts a workflow's span each time
// the workflow function runs, and a query on a workflow that is not in
// the worker's cache (a finished one, or after a restart) replays it from
// the start, which would report the workflow's span again. Here the
// workflow's span ids derive from the SDK's replay-stable idempotency key,
// and while the workflow is replaying its span is a non-recording one
// with those ids: nothing is reported twice, and activities scheduled
// after the replay still nest under the original span.
func TemporalInterceptor() (interceptor.Interceptor, error) {
	if err := setup(); err != nil {
		return nil, err
	}
	rt := &replayTracer{}
	inner, err := temporalotel.NewTracer(temporalotel.TracerOptions{
		Tracer:            tracers.Tracer("temporal-sdk-go"),
		TextMapPropagator: propagator,
		SpanStarter:       rt.startSpan,
	})
	if err != nil {
		return nil, err
	}
	rt.Tracer = inner
	return &replaySafe{Interceptor: interceptor.NewTracingInterceptor(rt), tracer: rt}, nil
}

const runWorkflow = "RunWorkflow"

// runIDTag is the tag the SDK's interceptor puts the run id under.
const runIDTag = "temporalRunID"

// replayTracer wraps the contrib tracer: it knows which runs are
// replaying (replaySafe marks them) and gives workflow spans stable ids.
type replayTracer struct {
	interceptor.Tracer
	replaying sync.Map // run id → struct{}
	// mu serialises workflow span starts, so that pending reaches the
	// startSpan call it is meant for (the contrib tracer calls it
	// synchronously from StartSpan).
	mu      sync.Mutex
	pending workflowSpan
}

type workflowSpan struct {
	ids   fixedIDs
	quiet bool
}

func (r *replayTracer) StartSpan(o *interceptor.TracerStartSpanOptions) (interceptor.TracerSpan, error) {
	if o.Operation != runWorkflow {
		return r.Tracer.StartSpan(o)
	}
	_, quiet := r.replaying.LoadAndDelete(o.Tags[runIDTag])
	r.mu.Lock()
	defer r.mu.Unlock()
	r.pending = workflowSpan{quiet: quiet}
	if o.IdempotencyKey != "" {
		sum := sha256.Sum256([]byte("conduit workflow span/" + o.IdempotencyKey))
		copy(r.pending.ids.span[:], sum[:8])
		copy(r.pending.ids.trace[:], sum[8:24])
	}
	defer func() { r.pending = workflowSpan{} }()
	return r.Tracer.StartSpan(o)
}

// startSpan is the contrib tracer's SpanStarter.
func (r *replayTracer) startSpan(ctx context.Context, t trace.Tracer, name string, opts ...trace.SpanStartOption) trace.Span {
	if !strings.HasPrefix(name, runWorkflow+":") || !r.pending.ids.span.IsValid() {
		_, span := t.Start(ctx, name, opts...)
		return span
	}
	// r.mu is held by StartSpan on this goroutine.
	p := r.pending
	if p.quiet {
		parent := trace.SpanContextFromContext(ctx)
		cfg := trace.SpanContextConfig{TraceID: p.ids.trace, SpanID: p.ids.span}
		if parent.IsValid() {
			cfg.TraceID, cfg.TraceFlags, cfg.TraceState = parent.TraceID(), parent.TraceFlags(), parent.TraceState()
		}
		return trace.SpanFromContext(trace.ContextWithSpanContext(ctx, trace.NewSpanContext(cfg)))
	}
	_, span := t.Start(withIDs(ctx, p.ids), name, opts...)
	return span
}

// replaySafe is the SDK's tracing interceptor with each workflow's replay
// marked before its span starts.
type replaySafe struct {
	interceptor.Interceptor
	tracer *replayTracer
}

func (r *replaySafe) InterceptWorkflow(ctx workflow.Context, next interceptor.WorkflowInboundInterceptor) interceptor.WorkflowInboundInterceptor {
	in := &markReplay{tracer: r.tracer}
	in.Next = r.Interceptor.InterceptWorkflow(ctx, next)
	return in
}

type markReplay struct {
	interceptor.WorkflowInboundInterceptorBase
	tracer *replayTracer
}

func (m *markReplay) ExecuteWorkflow(ctx workflow.Context, in *interceptor.ExecuteWorkflowInput) (any, error) {
	if workflow.IsReplaying(ctx) {
		workflowReplays.Inc()
		run := workflow.GetInfo(ctx).WorkflowExecution.RunID
		m.tracer.replaying.Store(run, struct{}{})
		defer m.tracer.replaying.Delete(run)
	}
	return m.Next.ExecuteWorkflow(ctx, in)
}
