// Package devstack starts the embedded stack the dev command and the tests
// run on: a PostgreSQL cluster from the OS's binaries (package pg) and an
// in-process Temporal server (with its Web UI). It knows nothing of the
// worker or the frontend; the command at the top composes them.
package devstack

import (
	"conduit/internal/devstack/pg"

	"context"
	"log/slog"
	"path/filepath"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
)

// Options chooses what the stack starts. A configured DatabaseURL or
// TemporalAddress means that component is external and nothing is started
// for it.
type Options struct {
	// DataDir keeps the cluster (DataDir/postgres) and the Temporal SQLite
	// file (DataDir/temporal.db).
	DataDir string
	// EphemeralTemporal keeps Temporal in memory (tests).
	EphemeralTemporal bool

	DatabaseURL     string
	TemporalAddress string
	Namespace       string

	PostgresPort    int
	TemporalPort    int
	TemporalUIPort  int
	TimerResolution time.Duration
	InstallPostgres bool
	TemporalLog     string
	Log             *slog.Logger
	// TemporalCodecEndpoint is the UI's codec endpoint (empty: none).
	TemporalCodecEndpoint string
	// TemporalStore is where the embedded server keeps its state:
	// StoreSQLite (default) or StorePostgres (databases beside
	// DatabaseURL's); TemporalShards its history shard count (0: the
	// store's default). See TemporalOptions.
	TemporalStore  string
	TemporalShards int
	// SearchAttributes are registered when the Temporal store is created
	// (TemporalOptions.SearchAttributes).
	SearchAttributes map[string]enumspb.IndexedValueType
}

// Stack is what Start brought up, with the addresses to reach it.
type Stack struct {
	DatabaseURL     string
	TemporalAddress string
	// TemporalUI is the Web UI address, when one was started.
	TemporalUI string
	// Started lists what this process runs itself, for the banner.
	Started []string

	pg *pg.Cluster
	tp *Temporal
}

// Start brings up whatever Options does not point elsewhere.
func Start(ctx context.Context, o Options) (*Stack, error) {
	if o.Log == nil {
		o.Log = slog.Default()
	}
	s := &Stack{DatabaseURL: o.DatabaseURL, TemporalAddress: o.TemporalAddress}
	if s.DatabaseURL == "" {
		cluster, err := pg.Start(ctx, pg.Options{
			Dir:      filepath.Join(o.DataDir, "postgres"),
			Port:     o.PostgresPort,
			Database: "conduit",
			Install:  o.InstallPostgres,
			Log:      o.Log,
		})
		if err != nil {
			return nil, err
		}
		s.pg, s.DatabaseURL = cluster, cluster.URL
		s.Started = append(s.Started, "postgres")
	}
	if s.TemporalAddress == "" {
		topts := TemporalOptions{
			Port:             o.TemporalPort,
			UIPort:           o.TemporalUIPort,
			CodecEndpoint:    o.TemporalCodecEndpoint,
			Namespace:        o.Namespace,
			TimerResolution:  o.TimerResolution,
			LogLevel:         o.TemporalLog,
			Store:            o.TemporalStore,
			PostgresURL:      s.DatabaseURL,
			Shards:           o.TemporalShards,
			SearchAttributes: o.SearchAttributes,
		}
		if !o.EphemeralTemporal {
			topts.DBFile = filepath.Join(o.DataDir, "temporal.db")
		}
		tp, err := StartTemporal(ctx, topts)
		if err != nil {
			s.Stop()
			return nil, err
		}
		s.tp, s.TemporalAddress, s.TemporalUI = tp, tp.Address, tp.UIAddress
		s.Started = append(s.Started, "temporal")
	}
	return s, nil
}

// Stop stops Temporal, then PostgreSQL (the reverse of Start).
func (s *Stack) Stop() {
	if s == nil {
		return
	}
	s.tp.Stop()
	if err := s.pg.Stop(); err != nil {
		slog.Warn("stopping PostgreSQL", "err", err)
	}
}
