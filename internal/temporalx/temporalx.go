// Package temporalx dials Temporal the same way for the worker, the frontend
// and the tests, with the SDK's logs going to slog.
package temporalx

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/operatorservice/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	sdklog "go.temporal.io/sdk/log"
	"go.temporal.io/sdk/temporal"

	"conduit/internal/codec"
	"conduit/internal/config"
)

// Connect dials the Temporal frontend t names, with its TLS (mutual TLS,
// a private CA, a server name) and its API key (Temporal Cloud), and
// checks that it answers. Every production role and command dials this way.
func Connect(ctx context.Context, t config.Temporal, log *slog.Logger, configure ...func(*client.Options) error) (client.Client, error) {
	tlsConf, err := t.TLS.Config()
	if err != nil {
		return nil, err
	}
	return dial(ctx, t.Address, t.Namespace, t.CodecKeys, log, func(o *client.Options) {
		if tlsConf != nil {
			o.ConnectionOptions.TLS = tlsConf
		}
		if t.APIKey != "" {
			// The SDK turns TLS on (system roots) when none is set: a key
			// is never sent in the clear.
			o.Credentials = client.NewAPIKeyStaticCredentials(t.APIKey)
		}
	}, configure)
}

// Dial connects to the frontend at address and checks that it answers, so a
// wrong address fails at start-up with one sentence instead of on first use.
// A non-empty codecKeys seals every payload (internal/codec).
func Dial(ctx context.Context, address, namespace, codecKeys string, log *slog.Logger, configure ...func(*client.Options) error) (client.Client, error) {
	return dial(ctx, address, namespace, codecKeys, log, nil, configure)
}

func dial(ctx context.Context, address, namespace, codecKeys string, log *slog.Logger, secure func(*client.Options), configure []func(*client.Options) error) (client.Client, error) {
	dialCtx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	opts := client.Options{
		HostPort:  address,
		Namespace: namespace,
		Logger:    sdklog.NewStructuredLogger(log.With("component", "temporal-sdk")),
	}
	if secure != nil {
		secure(&opts)
	}
	if loopback(address) {
		// The SDK gzips every request (and the server its answers) by
		// default: worth it across a network, pure CPU to a server in this
		// process or on this host (a tenth of a millisecond per pipeline
		// run; bench/README.md).
		opts.ConnectionOptions.GrpcCompression = &client.GrpcCompressionNone{}
	}
	if codecKeys != "" {
		cd, err := codec.Parse(codecKeys)
		if err != nil {
			return nil, err
		}
		opts.DataConverter = cd.DataConverter()
		// Failures carry payloads too (error details, a timed-out
		// activity's last heartbeat): decoded with the same codec, or a
		// workflow cannot read them.
		opts.FailureConverter = temporal.NewDefaultFailureConverter(temporal.DefaultFailureConverterOptions{DataConverter: opts.DataConverter})
	}
	// The caller's additions (telemetry's metrics handler and tracing
	// interceptor).
	for _, f := range configure {
		if err := f(&opts); err != nil {
			return nil, err
		}
	}
	c, err := client.DialContext(dialCtx, opts)
	if err != nil {
		return nil, fmt.Errorf("Temporal at %s is not reachable: %w", address, err)
	}
	if _, err := c.CheckHealth(dialCtx, &client.CheckHealthRequest{}); err != nil {
		c.Close()
		return nil, fmt.Errorf("Temporal at %s does not answer health checks: %w", address, err)
	}
	return c, nil
}

// loopback: address names this host (the embedded server, or one beside it).
func loopback(address string) bool {
	host, _, err := net.SplitHostPort(address)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// EnsureSearchAttributes registers custom search attributes on the
// namespace, leaving ones that exist alone, so every worker start (and the
// embedded dev server) converges on the same set.
func EnsureSearchAttributes(ctx context.Context, c client.Client, namespace string, attrs map[string]enumspb.IndexedValueType) error {
	resp, err := c.OperatorService().ListSearchAttributes(ctx, &operatorservice.ListSearchAttributesRequest{Namespace: namespace})
	if err != nil {
		return fmt.Errorf("listing search attributes: %w", err)
	}
	missing := map[string]enumspb.IndexedValueType{}
	for name, typ := range attrs {
		if _, ok := resp.CustomAttributes[name]; !ok {
			missing[name] = typ
		}
	}
	if len(missing) == 0 {
		return nil
	}
	_, err = c.OperatorService().AddSearchAttributes(ctx, &operatorservice.AddSearchAttributesRequest{Namespace: namespace, SearchAttributes: missing})
	var exists *serviceerror.AlreadyExists
	if err != nil && !errors.As(err, &exists) {
		return fmt.Errorf("registering search attributes: %w", err)
	}
	awaitSearchAttributes(ctx, c, namespace, missing)
	return nil
}

// awaitSearchAttributes waits, for at most 10 s, until the frontend
// resolves every attribute in attrs: a server learns a namespace's new
// attributes at its namespace cache's next refresh (every 2 s by default),
// and a start that names one before then is refused. Past the bound the
// caller goes on; the refresh comes anyway.
func awaitSearchAttributes(ctx context.Context, c client.Client, namespace string, attrs map[string]enumspb.IndexedValueType) {
	deadline := time.Now().Add(10 * time.Second)
	for name, typ := range attrs {
		lit := "''"
		switch typ {
		case enumspb.INDEXED_VALUE_TYPE_TEXT:
			continue // no cheap equality to probe with; none of ours is Text
		case enumspb.INDEXED_VALUE_TYPE_INT, enumspb.INDEXED_VALUE_TYPE_DOUBLE:
			lit = "0"
		case enumspb.INDEXED_VALUE_TYPE_BOOL:
			lit = "false"
		case enumspb.INDEXED_VALUE_TYPE_DATETIME:
			lit = "'2000-01-01T00:00:00Z'"
		}
		for {
			_, err := c.CountWorkflow(ctx, &workflowservice.CountWorkflowExecutionsRequest{Namespace: namespace, Query: name + " = " + lit})
			var invalid *serviceerror.InvalidArgument
			if !errors.As(err, &invalid) || time.Now().After(deadline) {
				break
			}
			select {
			case <-ctx.Done():
				return
			case <-time.After(100 * time.Millisecond):
			}
		}
	}
}

// AskOpen answers an open workflow's query into out, giving up after a
// second: callers that poll answer from PostgreSQL instead of waiting on
// Temporal (a closed workflow's history may be archived, a busy one slow).
func AskOpen(ctx context.Context, c client.Client, workflowID, query string, out any) bool {
	qctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	v, err := c.QueryWorkflow(qctx, workflowID, "", query)
	return err == nil && v.Get(out) == nil
}

// ErrNeedCodecKeys: a command without the codec keys was about to act on a
// workflow whose payloads are sealed, and could not have read the answer.
var ErrNeedCodecKeys = errors.New("this workflow's payloads are sealed by the payload codec: set temporal.codec_keys (CONDUIT_TEMPORAL_CODEC_KEYS) to the platform's codec keys and run the command again; nothing was done")

// RequireCodec checks, before a command acts on workflowID, that it can read
// the workflow's payloads: with codec keys configured it always can;
// without, only if the workflow's input is not sealed. A workflow that
// does not exist passes (the command says so itself).
func RequireCodec(ctx context.Context, c client.Client, workflowID, codecKeys string) error {
	if codecKeys != "" {
		return nil
	}
	ev, err := c.GetWorkflowHistory(ctx, workflowID, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT).Next()
	var nf *serviceerror.NotFound
	if errors.As(err, &nf) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading workflow %s: %w", workflowID, err)
	}
	for _, p := range ev.GetWorkflowExecutionStartedEventAttributes().GetInput().GetPayloads() {
		if string(p.GetMetadata()["encoding"]) == codec.Encoding {
			return ErrNeedCodecKeys
		}
	}
	return nil
}

// Admit starts a workflow with its admission update (Update-with-Start)
// and waits for the update's answer, the workflow's first step: its row
// written, or why not.
func Admit[T any](ctx context.Context, c client.Client, start client.WithStartWorkflowOperation, update client.UpdateWorkflowOptions) (T, error) {
	var out T
	update.WaitForStage = client.WorkflowUpdateStageCompleted
	h, err := c.UpdateWithStartWorkflow(ctx, client.UpdateWithStartWorkflowOptions{StartWorkflowOperation: start, UpdateOptions: update})
	if err == nil {
		err = h.Get(ctx, &out)
	}
	return out, err
}
