package devstack

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/server/common/dynamicconfig"
	tlog "go.temporal.io/server/common/log"
	sqliteplugin "go.temporal.io/server/common/persistence/sql/sqlplugin/sqlite"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

// The settings that make the embedded server's floor the real one (issue
// #26), read back through the server's own dynamic-config collection, so a
// renamed key or a value of the wrong type fails here.
func TestDynamicConfigLiftsTheOneShardLimits(t *testing.T) {
	c := dynamicconfig.NewCollection(dynamicConfig(TemporalOptions{TimerResolution: 10 * time.Millisecond}), tlog.NewNoopLogger())
	for name, got := range map[string]int{
		"history.transferProcessorMaxPollRPS":   dynamicconfig.TransferProcessorMaxPollRPS.Get(c)(),
		"history.timerProcessorMaxPollRPS":      dynamicconfig.TimerProcessorMaxPollRPS.Get(c)(),
		"history.visibilityProcessorMaxPollRPS": dynamicconfig.VisibilityProcessorMaxPollRPS.Get(c)(),
		"history.outboundProcessorMaxPollRPS":   dynamicconfig.OutboundProcessorMaxPollRPS.Get(c)(),
	} {
		if got < 10000 {
			t.Errorf("%s = %d, want no practical limit (≥ 10000; the default 20 is the 50 ms floor)", name, got)
		}
	}
	for _, typ := range []enumspb.TaskQueueType{enumspb.TASK_QUEUE_TYPE_WORKFLOW, enumspb.TASK_QUEUE_TYPE_ACTIVITY} {
		if got := dynamicconfig.MatchingNumTaskqueueWritePartitions.Get(c)("default", "system", typ); got != 1 {
			t.Errorf("matching.numTaskqueueWritePartitions (%s) = %d, want 1", typ, got)
		}
		if got := dynamicconfig.MatchingNumTaskqueueReadPartitions.Get(c)("default", "system", typ); got != 4 {
			t.Errorf("matching.numTaskqueueReadPartitions (%s) = %d, want the default 4 (an older database's backlog)", typ, got)
		}
	}
	if got := dynamicconfig.HistoryLongPollExpirationInterval.Get(c)("default"); got != time.Second {
		t.Errorf("history.longPollExpirationInterval = %s, want 1s (bounds the missed-close stall)", got)
	}
	if got := dynamicconfig.QueueShrinkPredicateMaxPendingKeys.Get(c)(); got != 0 {
		t.Errorf("history.queueShrinkPredicateMaxPendingKeys = %d, want 0 (a narrowed slice makes every new task's merge walk all pending tasks)", got)
	}
	if got := dynamicconfig.HistoryCacheHostLevelMaxSize.Get(c)(); got > 4096 {
		t.Errorf("history.hostLevelCacheMaxSize = %d, want a few thousand at most (the default 128,000 kept every workflow's state for an hour)", got)
	}
	if dynamicconfig.ForceSearchAttributesCacheRefreshOnRead.Get(c)() {
		t.Error("system.forceSearchAttributesCacheRefreshOnRead is on: every search attribute use and every listed row re-reads the store (the UI's slow workflow list)")
	}
	if got := dynamicconfig.FrontendMaxNamespaceVisibilityRPSPerInstance.Get(c)("default"); got < 100 {
		t.Errorf("frontend.namespaceRPS.visibility = %d, want ≥ 100 (the UI's page load is a burst of lists and counts)", got)
	}
	if got := dynamicconfig.TimerProcessorMaxTimeShift.Get(c)(); got != 10*time.Millisecond {
		t.Errorf("history.timerProcessorMaxTimeShift = %s, want the asked 10ms", got)
	}
	if got := dynamicconfig.TimerProcessorMaxTimeShift.Get(dynamicconfig.NewCollection(dynamicConfig(TemporalOptions{}), tlog.NewNoopLogger()))(); got != time.Second {
		t.Errorf("history.timerProcessorMaxTimeShift = %s without a resolution, want the default 1s", got)
	}
}

func TestShardCounts(t *testing.T) {
	for _, c := range []struct {
		o    TemporalOptions
		want int32
	}{
		{TemporalOptions{}, 1},
		{TemporalOptions{Store: StoreSQLite}, 1},
		{TemporalOptions{Store: StorePostgres}, DefaultPostgresShards},
		{TemporalOptions{Store: StorePostgres, Shards: 16}, 16},
		{TemporalOptions{Shards: 4}, 4},
	} {
		if got := c.o.shards(); got != c.want {
			t.Errorf("%+v: %d shards, want %d", c.o, got, c.want)
		}
	}
}

// The dev file is in WAL mode: its header says so (bytes 18 and 19 are 2
// for WAL, 1 for a rollback journal) and so does the pragma.
func TestDevFileIsInWALMode(t *testing.T) {
	db := filepath.Join(t.TempDir(), "temporal.db")
	tmp, err := StartTemporal(context.Background(), TemporalOptions{DBFile: db})
	if err != nil {
		t.Fatal(err)
	}
	tmp.Stop()
	f, err := os.Open(db)
	if err != nil {
		t.Fatal(err)
	}
	header := make([]byte, 100)
	_, err = f.ReadAt(header, 0)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	if string(header[:15]) != "SQLite format 3" {
		t.Fatalf("%s is not an SQLite file", db)
	}
	if header[18] != 2 || header[19] != 2 {
		t.Fatalf("file format versions %d/%d, want 2/2 (WAL)", header[18], header[19])
	}
	conn, err := sql.Open(sqliteplugin.PluginName, db)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	var mode string
	if err := conn.QueryRow(`PRAGMA journal_mode`).Scan(&mode); err != nil {
		t.Fatal(err)
	}
	if mode != "wal" {
		t.Fatalf("PRAGMA journal_mode = %q, want wal", mode)
	}
}

// The in-memory store is a memdb database, not a mode=memory one (whose
// commits slow down as it grows: sqlitePersistence): another connection of
// this process opens it by name through that VFS and finds the server's
// namespace there, and nothing is on disk under its name.
func TestInMemoryStoreIsAMemdbDatabase(t *testing.T) {
	tmp, err := StartTemporal(context.Background(), TemporalOptions{Namespace: "memdb-probe"})
	if err != nil {
		t.Fatal(err)
	}
	defer tmp.Stop()
	if tmp.memdb == "" {
		t.Fatal("the in-memory store is not a memdb database")
	}
	conn, err := sql.Open(sqliteplugin.PluginName, "file:"+tmp.memdb+"?vfs=memdb")
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	var n int
	if err := conn.QueryRow(`SELECT count(*) FROM namespaces WHERE name = 'memdb-probe'`).Scan(&n); err != nil || n != 1 {
		t.Fatalf("the server's namespace through a second memdb connection: %d rows (%v), want 1", n, err)
	}
	if _, err := os.Stat(tmp.memdb); !os.IsNotExist(err) {
		t.Fatalf("%s exists on disk (%v): the store is a file, not memdb", tmp.memdb, err)
	}
}

// Search attributes given to StartTemporal are usable by the first
// request, without the server re-reading them on every use: a start that
// sets them is accepted at once, a list filters on them and answers them
// under their names, and the burst of lists and counts a UI page sends is
// answered in full.
func TestSearchAttributesUsableFromTheStart(t *testing.T) {
	ctx := context.Background()
	tmp, err := StartTemporal(ctx, TemporalOptions{SearchAttributes: map[string]enumspb.IndexedValueType{
		"PipelineId": enumspb.INDEXED_VALUE_TYPE_KEYWORD, "PipelineVersion": enumspb.INDEXED_VALUE_TYPE_INT,
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer tmp.Stop()
	c, err := client.Dial(client.Options{HostPort: tmp.Address, Namespace: tmp.Namespace, Logger: quietLogger{}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	pipeline, version := temporal.NewSearchAttributeKeyKeyword("PipelineId"), temporal.NewSearchAttributeKeyInt64("PipelineVersion")
	for i := range 3 {
		// No worker: the workflows stay open, which is all a list needs.
		if _, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
			ID: fmt.Sprintf("sa-%d", i), TaskQueue: "nobody",
			TypedSearchAttributes: temporal.NewSearchAttributes(pipeline.ValueSet(fmt.Sprintf("p%d", i%2)), version.ValueSet(int64(i))),
		}, "Probe"); err != nil {
			t.Fatalf("start %d with search attributes: %v", i, err)
		}
	}
	// Visibility records are written by a queue after the start: poll.
	var resp *workflowservice.ListWorkflowExecutionsResponse
	for deadline := time.Now().Add(20 * time.Second); ; {
		resp, err = c.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{Query: "PipelineId = 'p0' AND PipelineVersion >= 1"})
		if err != nil {
			t.Fatal(err)
		}
		if len(resp.Executions) > 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if len(resp.Executions) != 1 || resp.Executions[0].Execution.WorkflowId != "sa-2" {
		t.Fatalf("PipelineId = 'p0' AND PipelineVersion >= 1 listed %v, want sa-2 alone", resp.Executions)
	}
	var got string
	if err := converter.GetDefaultDataConverter().FromPayload(resp.Executions[0].SearchAttributes.IndexedFields["PipelineId"], &got); err != nil || got != "p0" {
		t.Fatalf("listed PipelineId %q (%v), want p0 under its own name", got, err)
	}

	// A plain gRPC client, as the UI server is: the SDK's retries a
	// refused call and would hide the refusal.
	conn, err := grpc.NewClient(tmp.Address, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ws := workflowservice.NewWorkflowServiceClient(conn)
	errs := make(chan error, 30)
	for range cap(errs) {
		go func() {
			_, err := ws.CountWorkflowExecutions(ctx, &workflowservice.CountWorkflowExecutionsRequest{Namespace: tmp.Namespace, Query: "PipelineId = 'p1'"})
			errs <- err
		}()
	}
	for range cap(errs) {
		if err := <-errs; err != nil {
			t.Fatalf("a count in a burst of %d: %v", cap(errs), err)
		}
	}
}
