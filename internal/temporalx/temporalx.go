// Package temporalx dials Temporal the same way for the worker, the frontend
// and the tests, with the SDK's logs going to slog.
package temporalx

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"go.temporal.io/sdk/client"
	sdklog "go.temporal.io/sdk/log"
)

// Dial connects to the frontend at address and checks that it answers, so a
// wrong address fails at start-up with one sentence instead of on first use.
func Dial(ctx context.Context, address, namespace string, log *slog.Logger) (client.Client, error) {
	dialCtx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	c, err := client.DialContext(dialCtx, client.Options{
		HostPort:  address,
		Namespace: namespace,
		Logger:    sdklog.NewStructuredLogger(log.With("component", "temporal-sdk")),
	})
	if err != nil {
		return nil, fmt.Errorf("Temporal at %s is not reachable: %w", address, err)
	}
	if _, err := c.CheckHealth(dialCtx, &client.CheckHealthRequest{}); err != nil {
		c.Close()
		return nil, fmt.Errorf("Temporal at %s does not answer health checks: %w", address, err)
	}
	return c, nil
}
