package devcmd

import (
	"log/slog"
	"testing"

	"conduit/internal/config"
	"conduit/internal/devstack"
)

// The dev keys for the embedded Temporal server's store reach the stack.
func TestStackOptionsCarryTheTemporalStore(t *testing.T) {
	cfg, err := config.Load("")
	if err != nil {
		t.Fatal(err)
	}
	if o := stackOptions(cfg, "/data", slog.Default()); o.TemporalStore != devstack.StoreSQLite || o.TemporalShards != 0 {
		t.Fatalf("defaults: store %q, %d shards; want sqlite and the store's default", o.TemporalStore, o.TemporalShards)
	}
	cfg.Dev.TemporalStore, cfg.Dev.TemporalShards = "postgres", 16
	if o := stackOptions(cfg, "/data", slog.Default()); o.TemporalStore != devstack.StorePostgres || o.TemporalShards != 16 || o.DataDir != "/data" {
		t.Fatalf("postgres, 16 shards asked: %+v", o)
	}
}
