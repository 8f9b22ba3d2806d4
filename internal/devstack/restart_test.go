package devstack

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
)

func nop(workflow.Context) error { return nil }

// firstRun starts the embedded server on the file, runs one workflow with a
// fresh worker and reports how long that first run took.
func firstRun(t *testing.T, db string) time.Duration {
	t.Helper()
	ctx := context.Background()
	tmp, err := StartTemporal(ctx, TemporalOptions{DBFile: db, LogLevel: "error"})
	if err != nil {
		t.Fatal(err)
	}
	defer tmp.Stop()
	c, err := client.Dial(client.Options{HostPort: tmp.Address, Namespace: tmp.Namespace, Logger: quietLogger{}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	w := worker.New(c, "restart", worker.Options{})
	w.RegisterWorkflowWithOptions(nop, workflow.RegisterOptions{Name: "nop"})
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	start := time.Now()
	runCtx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	run, err := c.ExecuteWorkflow(runCtx, client.StartWorkflowOptions{TaskQueue: "restart"}, "nop")
	if err != nil {
		t.Fatal(err)
	}
	if err := run.Get(runCtx, nil); err != nil {
		t.Fatal(err)
	}
	return time.Since(start)
}

// After a restart on existing data the first workflow must not wait for
// the previous process's cluster members to be given up on.
func TestFirstRunAfterRestartIsPrompt(t *testing.T) {
	db := filepath.Join(t.TempDir(), "temporal.db")
	t.Logf("first start: %s", firstRun(t, db))
	d := firstRun(t, db)
	t.Logf("after restart: %s", d)
	if fi, err := os.Stat(db); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("the SQLite file is %v (%v), want 0600", fi.Mode().Perm(), err)
	}
	if d > 10*time.Second {
		t.Fatalf("the first run after a restart took %s", d)
	}
}
