// Package telemetry is the platform's metrics and traces: one Prometheus
// registry per process (our own series, the Temporal SDK's through its
// OpenTelemetry metrics handler, the database pools, the Go runtime), the
// /metrics handler, and one OpenTelemetry tracer provider whose spans are
// exported by OTLP when tracing.endpoint is set (docs/operations.md).
//
// Instrumentation elsewhere is one call into this package at the point a
// fact becomes true (RunFinished, PaymentSettled, …); every label value is
// from a fixed set, never an account or run id.
package telemetry

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	"go.opentelemetry.io/otel/propagation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.26.0"
)

// MetricsPath is where the metrics listener answers.
const MetricsPath = "/metrics"

// The process-wide parts: one registry and one meter provider feeding it,
// one tracer provider. Several platforms in one process (the test harness
// starts two) share them, as one process shares its runtime.
var (
	registry = prometheus.NewRegistry()
	initOnce sync.Once
	initErr  error
	meters   *sdkmetric.MeterProvider
	tracers  *sdktrace.TracerProvider
	// propagator is W3C trace context and baggage, on requests in and out.
	propagator = propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{})
)

// Registry is the process's Prometheus registry, the platform's metrics
// registered in it.
func Registry() *prometheus.Registry {
	_ = setup()
	return registry
}

// Handler answers GET /metrics in the Prometheus text format.
func Handler() http.Handler {
	return promhttp.HandlerFor(registry, promhttp.HandlerOpts{ErrorLog: nil, ErrorHandling: promhttp.ContinueOnError})
}

func setup() error {
	initOnce.Do(func() {
		registry.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}), ours, pools)
		// The Temporal SDK's metrics go through OpenTelemetry into the
		// same registry: durations in seconds with buckets that suit
		// them, counters as monotonic sums (…_total).
		exp, err := otelprom.New(otelprom.WithRegisterer(registry), otelprom.WithoutScopeInfo(), otelprom.WithoutTargetInfo())
		if err != nil {
			initErr = fmt.Errorf("the Prometheus exporter could not start: %w", err)
			return
		}
		seconds := sdkmetric.NewView(sdkmetric.Instrument{Unit: "s"},
			sdkmetric.Stream{Aggregation: sdkmetric.AggregationExplicitBucketHistogram{Boundaries: secondsBuckets}})
		meters = sdkmetric.NewMeterProvider(sdkmetric.WithReader(exp), sdkmetric.WithView(seconds))
		// service.name is conduit unless OTEL_SERVICE_NAME (or
		// OTEL_RESOURCE_ATTRIBUTES) names the role.
		res, err := resource.Merge(resource.NewSchemaless(semconv.ServiceName("conduit")), resource.Environment())
		if err != nil {
			res = resource.NewSchemaless(semconv.ServiceName("conduit"))
		}
		tracers = sdktrace.NewTracerProvider(sdktrace.WithSampler(sampler{}), sdktrace.WithIDGenerator(ids{}), sdktrace.WithResource(res))
		otel.SetTracerProvider(tracers)
		otel.SetTextMapPropagator(propagator)
	})
	return initErr
}

// secondsBuckets suit request and task latencies: 5 ms to 2 minutes.
var secondsBuckets = []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120}

// Options are the process's telemetry settings (config metrics.*, tracing.*).
type Options struct {
	// TracingEndpoint is the OTLP/gRPC collector; empty: no export.
	TracingEndpoint string
	TracingInsecure bool
	SampleRatio     float64
	// Instrument puts the tracing instrumentation in place (Temporal
	// interceptor, SQL spans) without an exporter, so that a test can
	// record spans (Record). An endpoint implies it.
	Instrument bool
	Log        *slog.Logger
}

// Telemetry is one platform's hold on the process's telemetry.
type Telemetry struct {
	tracing bool
	export  sdktrace.SpanProcessor
}

// Start sets up the process's telemetry (once) and, with an endpoint,
// exports this platform's spans by OTLP until Shutdown.
func Start(ctx context.Context, o Options) (*Telemetry, error) {
	if err := setup(); err != nil {
		return nil, err
	}
	t := &Telemetry{tracing: o.Instrument || o.TracingEndpoint != ""}
	if o.TracingEndpoint == "" {
		return t, nil
	}
	opts := []otlptracegrpc.Option{otlptracegrpc.WithEndpoint(o.TracingEndpoint)}
	if o.TracingInsecure {
		opts = append(opts, otlptracegrpc.WithInsecure())
	}
	exp, err := otlptracegrpc.New(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("the OTLP trace exporter for %s could not start: %w", o.TracingEndpoint, err)
	}
	t.export = sdktrace.NewBatchSpanProcessor(exp)
	setRatio(o.SampleRatio)
	consume(t.export)
	if o.Log != nil {
		o.Log.Info("tracing on: spans are exported by OTLP", "endpoint", o.TracingEndpoint, "sample_ratio", o.SampleRatio)
	}
	return t, nil
}

// Tracing says the tracing instrumentation is in place.
func (t *Telemetry) Tracing() bool { return t != nil && t.tracing }

// Shutdown flushes and stops this platform's span export.
func (t *Telemetry) Shutdown(ctx context.Context) error {
	if t == nil || t.export == nil {
		return nil
	}
	unconsume(t.export)
	err := t.export.Shutdown(ctx)
	t.export = nil
	return err
}

// Listen opens the metrics listener, with a clear sentence when the
// address is taken.
func Listen(addr string) (net.Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("the metrics endpoint cannot listen on %s (set CONDUIT_METRICS_ADDR to a free address): %w", addr, err)
	}
	return ln, nil
}

// Serve answers GET /metrics on ln until ctx ends. It is never mounted on
// the API's router: operators expose it to their scraper only.
func Serve(ctx context.Context, ln net.Listener) error {
	mux := http.NewServeMux()
	mux.Handle("GET "+MetricsPath, Handler())
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, WriteTimeout: 30 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := srv.Shutdown(sctx)
	if serr := <-errc; serr != nil && !errors.Is(serr, http.ErrServerClosed) {
		return serr
	}
	return err
}
