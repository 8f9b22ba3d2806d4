package telemetry

import (
	"context"
	"encoding/binary"
	"math"
	"math/rand/v2"
	"sync"
	"sync/atomic"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

// Spans are recorded only while someone consumes them (an OTLP export or a
// test's recorder); otherwise every span is a non-recording one that still
// carries a trace id, so requests are logged and answered with one.
var (
	consumers atomic.Int32
	// ratioBits is the sample ratio of new traces (math.Float64bits).
	ratioBits atomic.Uint64
	procMu    sync.Mutex
)

func init() { ratioBits.Store(math.Float64bits(1)) }

func setRatio(r float64) {
	r = min(max(r, 0), 1)
	ratioBits.Store(math.Float64bits(r))
}

func consume(p sdktrace.SpanProcessor) {
	procMu.Lock()
	defer procMu.Unlock()
	tracers.RegisterSpanProcessor(p)
	consumers.Add(1)
}

func unconsume(p sdktrace.SpanProcessor) {
	procMu.Lock()
	defer procMu.Unlock()
	tracers.UnregisterSpanProcessor(p)
	consumers.Add(-1)
}

// sampler drops every span while nobody consumes them; then it follows a
// caller's decision, and keeps the configured share of new traces.
type sampler struct{}

func (sampler) ShouldSample(p sdktrace.SamplingParameters) sdktrace.SamplingResult {
	if consumers.Load() == 0 {
		return sdktrace.SamplingResult{Decision: sdktrace.Drop, Tracestate: trace.SpanContextFromContext(p.ParentContext).TraceState()}
	}
	return sdktrace.ParentBased(sdktrace.TraceIDRatioBased(math.Float64frombits(ratioBits.Load()))).ShouldSample(p)
}

func (sampler) Description() string { return "conduit: off unless exported, else parent-based ratio" }

// ids are random trace and span ids, or the ones a context names
// (withIDs): a workflow's span keeps its ids when the workflow is replayed
// (temporal.go).
type ids struct{}

type idsKey struct{}

type fixedIDs struct {
	trace trace.TraceID
	span  trace.SpanID
}

func withIDs(ctx context.Context, f fixedIDs) context.Context {
	return context.WithValue(ctx, idsKey{}, f)
}

func (ids) NewIDs(ctx context.Context) (trace.TraceID, trace.SpanID) {
	if f, ok := ctx.Value(idsKey{}).(fixedIDs); ok && f.trace.IsValid() {
		return f.trace, f.span
	}
	var t trace.TraceID
	for !t.IsValid() {
		binary.BigEndian.PutUint64(t[:8], rand.Uint64())
		binary.BigEndian.PutUint64(t[8:], rand.Uint64())
	}
	return t, randomSpanID()
}

func (ids) NewSpanID(ctx context.Context, _ trace.TraceID) trace.SpanID {
	if f, ok := ctx.Value(idsKey{}).(fixedIDs); ok && f.span.IsValid() {
		return f.span
	}
	return randomSpanID()
}

func randomSpanID() trace.SpanID {
	var s trace.SpanID
	for !s.IsValid() {
		binary.BigEndian.PutUint64(s[:], rand.Uint64())
	}
	return s
}

// Tracer is the platform's tracer for spans of its own.
func Tracer() trace.Tracer {
	_ = setup()
	return tracers.Tracer("conduit")
}

// Propagator is W3C trace context and baggage.
func Propagator() propagation.TextMapPropagator { return propagator }

// TraceID is the trace id of ctx's span, "" when there is none.
func TraceID(ctx context.Context) string {
	if sc := trace.SpanContextFromContext(ctx); sc.HasTraceID() {
		return sc.TraceID().String()
	}
	return ""
}

// Recorder keeps the spans of the process in memory while a test runs;
// Stop ends it. Spans are recorded only where the instrumentation is in
// place (Options.Instrument).
type Recorder struct {
	*tracetest.InMemoryExporter
	proc sdktrace.SpanProcessor
}

// Record starts recording every span of the process.
func Record() *Recorder {
	_ = setup()
	exp := tracetest.NewInMemoryExporter()
	r := &Recorder{InMemoryExporter: exp, proc: sdktrace.NewSimpleSpanProcessor(exp)}
	consume(r.proc)
	return r
}

// Stop ends the recording.
func (r *Recorder) Stop() { unconsume(r.proc) }

// spanAttr returns a span's attribute value by key ("" when absent).
func spanAttr(s tracetest.SpanStub, key attribute.Key) string {
	for _, kv := range s.Attributes {
		if kv.Key == key {
			return kv.Value.Emit()
		}
	}
	return ""
}

// Attr is spanAttr for tests in other packages.
func Attr(s tracetest.SpanStub, key string) string { return spanAttr(s, attribute.Key(key)) }
