package temporalx_test

import (
	"context"
	"log/slog"
	"testing"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"conduit/internal/devstack"
	"conduit/internal/temporalx"
)

// A store created before an attribute existed gets it from
// EnsureSearchAttributes, and a start that sets it succeeds as soon as
// that returns: the server does not re-read attributes on every use
// (docs/operations.md), so Ensure waits until the frontend knows them.
func TestEnsureSearchAttributesUsableOnReturn(t *testing.T) {
	ctx := context.Background()
	tmp, err := devstack.StartTemporal(ctx, devstack.TemporalOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer tmp.Stop()
	c, err := temporalx.Dial(ctx, tmp.Address, tmp.Namespace, "", slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	attrs := map[string]enumspb.IndexedValueType{"ProbeKey": enumspb.INDEXED_VALUE_TYPE_KEYWORD, "ProbeCount": enumspb.INDEXED_VALUE_TYPE_INT}
	if err := temporalx.EnsureSearchAttributes(ctx, c, tmp.Namespace, attrs); err != nil {
		t.Fatal(err)
	}
	if _, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID: "probe", TaskQueue: "nobody",
		TypedSearchAttributes: temporal.NewSearchAttributes(temporal.NewSearchAttributeKeyKeyword("ProbeKey").ValueSet("k"), temporal.NewSearchAttributeKeyInt64("ProbeCount").ValueSet(1)),
	}, "Probe"); err != nil {
		t.Fatalf("a start with attributes Ensure registered: %v", err)
	}
}
