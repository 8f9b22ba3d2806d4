package config

import (
	"fmt"
)

// Metrics configures the Prometheus endpoint (docs/operations.md,
// "Metrics and alerts").
type Metrics struct {
	// Addr is where GET /metrics listens (host:port), on its own listener,
	// never the API's. Empty: no metrics endpoint (the production roles'
	// default; the dev command serves one on DevMetricsAddr).
	Addr string `mapstructure:"addr"`
}

// Tracing configures OpenTelemetry traces (docs/operations.md, "Tracing").
type Tracing struct {
	// Endpoint is the OTLP/gRPC collector (host:port). Empty: tracing is
	// off; requests still get a trace id (logged, echoed as traceparent).
	Endpoint string `mapstructure:"endpoint"`
	// Insecure sends to the collector without TLS (a sidecar on loopback).
	Insecure bool `mapstructure:"insecure"`
	// SampleRatio is the share of new traces kept (0..1]; a caller's
	// sampled traceparent is always followed. The spans' service.name is
	// conduit unless OTEL_SERVICE_NAME names the role.
	SampleRatio float64 `mapstructure:"sample_ratio"`
}

// DevMetricsAddr is the dev command's default metrics address (loopback).
const DevMetricsAddr = "127.0.0.1:9464"

var telemetryDefaults = map[string]any{
	"metrics.addr":         "",
	"tracing.endpoint":     "",
	"tracing.insecure":     false,
	"tracing.sample_ratio": 1.0,
}

// checkTelemetry checks metrics.* and tracing.*.
func (c *Config) checkTelemetry() []error {
	var errs []error
	if c.Metrics.Addr != "" {
		if err := checkHostPort(c.Metrics.Addr); err != nil {
			errs = append(errs, fmt.Errorf("metrics.addr (%s_METRICS_ADDR) %q is not a valid listen address: %v", EnvPrefix, c.Metrics.Addr, err))
		} else if c.Metrics.Addr == c.HTTP.Addr {
			errs = append(errs, fmt.Errorf("metrics.addr (%s_METRICS_ADDR) must differ from http.addr: /metrics is never served on the public API port", EnvPrefix))
		}
	}
	if c.Tracing.Endpoint != "" {
		if err := checkHostPort(c.Tracing.Endpoint); err != nil {
			errs = append(errs, fmt.Errorf("tracing.endpoint (%s_TRACING_ENDPOINT) %q must be the collector's host:port: %v", EnvPrefix, c.Tracing.Endpoint, err))
		}
	}
	if r := c.Tracing.SampleRatio; r < 0 || r > 1 {
		errs = append(errs, fmt.Errorf("tracing.sample_ratio (%s_TRACING_SAMPLE_RATIO) %v must be between 0 and 1", EnvPrefix, r))
	}
	return errs
}
