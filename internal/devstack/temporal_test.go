package devstack

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/server/common/dynamicconfig"
	tlog "go.temporal.io/server/common/log"
	sqliteplugin "go.temporal.io/server/common/persistence/sql/sqlplugin/sqlite"
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
