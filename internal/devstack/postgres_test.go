package devstack

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"conduit/internal/devstack/pg"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
)

// The production-shaped store: the server creates its two databases and
// schema beside a platform database, runs a workflow across several
// shards, and starts again on what it wrote.
func TestPostgresStore(t *testing.T) {
	ctx := context.Background()
	db, err := pg.NewTestDB(ctx, slog.Default())
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	defer func() {
		if err := DropPostgresStore(ctx, db.URL); err != nil {
			t.Error(err)
		}
	}()
	for i := range 2 { // the second start finds the schema in place
		tmp, err := StartTemporal(ctx, TemporalOptions{Store: StorePostgres, PostgresURL: db.URL, Shards: 4, LogLevel: "error"})
		if err != nil {
			t.Fatalf("start %d: %v", i+1, err)
		}
		c, err := client.Dial(client.Options{HostPort: tmp.Address, Namespace: tmp.Namespace, Logger: quietLogger{}})
		if err != nil {
			t.Fatal(err)
		}
		w := worker.New(c, "pg", worker.Options{})
		w.RegisterWorkflowWithOptions(nop, workflow.RegisterOptions{Name: "nop"})
		if err := w.Start(); err != nil {
			t.Fatal(err)
		}
		runCtx, cancel := context.WithTimeout(ctx, time.Minute)
		for range 4 { // workflow ids spread over the shards
			run, err := c.ExecuteWorkflow(runCtx, client.StartWorkflowOptions{TaskQueue: "pg"}, "nop")
			if err != nil {
				t.Fatalf("start %d, get: %v", i+1, err)
			}
			if err := run.Get(runCtx, nil); err != nil {
				t.Fatal(err)
			}
		}
		cancel()
		w.Stop()
		c.Close()
		tmp.Stop()
	}
}
