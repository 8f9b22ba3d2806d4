package telemetry

import (
	"net/http"
	"time"

	"github.com/gin-gonic/gin"
	"go.opentelemetry.io/contrib/instrumentation/github.com/gin-gonic/gin/otelgin"
	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// TraceparentHeader carries the W3C trace context in both directions.
const TraceparentHeader = "traceparent"

// GinTrace starts each request's server span, named by its route
// template, as the child of the caller's traceparent when it sends one,
// and answers with the request's own traceparent. It runs first, so the
// request's logger and everything after it see the span.
func GinTrace() gin.HandlerFunc {
	_ = setup()
	span := otelgin.Middleware("conduit", otelgin.WithTracerProvider(tracers), otelgin.WithPropagators(propagator),
		otelgin.WithSpanNameFormatter(func(c *gin.Context) string {
			if r := c.FullPath(); r != "" {
				return c.Request.Method + " " + r
			}
			return c.Request.Method + " unmatched"
		}))
	return span
}

// GinEcho writes the request span's traceparent on the answer; it runs
// right after GinTrace.
func GinEcho() gin.HandlerFunc {
	return func(c *gin.Context) {
		if sc := trace.SpanContextFromContext(c.Request.Context()); sc.IsValid() {
			propagator.Inject(c.Request.Context(), traceparentOnly{c.Writer.Header()})
		}
		c.Next()
	}
}

// traceparentOnly writes the trace context and no baggage onto an answer:
// a caller's baggage is not echoed back.
type traceparentOnly struct{ h http.Header }

func (t traceparentOnly) Get(string) string { return "" }
func (t traceparentOnly) Set(k, v string) {
	if k == TraceparentHeader {
		t.h.Set(k, v)
	}
}
func (t traceparentOnly) Keys() []string { return nil }

// GinMetrics counts requests by route template, method and status class,
// and times them (conduit_http_*). A path no route matches is "unmatched",
// so no caller can add series.
func GinMetrics() gin.HandlerFunc {
	return func(c *gin.Context) {
		start := time.Now()
		httpInFlight.Inc()
		defer httpInFlight.Dec()
		c.Next()
		route := c.FullPath()
		if route == "" {
			route = "unmatched"
		}
		method := boundedMethod(c.Request.Method)
		httpRequests.WithLabelValues(method, route, statusClass(c.Writer.Status())).Inc()
		httpDuration.WithLabelValues(method, route).Observe(time.Since(start).Seconds())
	}
}

func boundedMethod(m string) string {
	switch m {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete, http.MethodOptions:
		return m
	}
	return "other"
}

func statusClass(code int) string {
	switch {
	case code >= 500:
		return "5xx"
	case code >= 400:
		return "4xx"
	case code >= 300:
		return "3xx"
	case code >= 200:
		return "2xx"
	}
	return "1xx"
}

// Transport traces outgoing requests (model providers, facilitators,
// hosted renderers) and passes the trace context on. A nil base is
// http.DefaultTransport.
func Transport(base http.RoundTripper) http.RoundTripper {
	if base == nil {
		base = http.DefaultTransport
	}
	return otelhttp.NewTransport(base, otelhttp.WithTracerProvider(tracerProvider{}), otelhttp.WithPropagators(propagator))
}

// ExternalTransport traces requests to addresses a caller named (image
// fetches) without telling them our trace context.
func ExternalTransport(base http.RoundTripper) http.RoundTripper {
	if base == nil {
		base = http.DefaultTransport
	}
	return otelhttp.NewTransport(base, otelhttp.WithTracerProvider(tracerProvider{}), otelhttp.WithPropagators(propagation.NewCompositeTextMapPropagator()))
}

// tracerProvider is the process's provider, looked up when first used, so
// clients built at package init (before setup) trace too.
type tracerProvider struct{ trace.TracerProvider }

func (tracerProvider) Tracer(name string, opts ...trace.TracerOption) trace.Tracer {
	_ = setup()
	return tracers.Tracer(name, opts...)
}
