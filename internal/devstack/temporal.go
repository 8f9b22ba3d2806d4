package devstack

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"conduit/internal/devstack/pg"
	uiserver "github.com/temporalio/ui-server/v2/server"
	uiconfig "github.com/temporalio/ui-server/v2/server/config"
	uioptions "github.com/temporalio/ui-server/v2/server/server_options"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/server/common/cluster"
	"go.temporal.io/server/common/config"
	"go.temporal.io/server/common/dynamicconfig"
	tlog "go.temporal.io/server/common/log"
	sqliteplugin "go.temporal.io/server/common/persistence/sql/sqlplugin/sqlite"
	sqliteschema "go.temporal.io/server/schema/sqlite"
	"go.temporal.io/server/temporal"
)

// TemporalOptions describes an in-process Temporal server.
type TemporalOptions struct {
	// DBFile is the SQLite file that keeps history between runs; empty keeps
	// everything in memory (tests).
	DBFile string
	// Port is the gRPC frontend port; 0 picks a free one.
	Port int
	// UIPort serves the Temporal Web UI; 0 means no UI.
	UIPort int
	// Namespace is created if missing.
	Namespace string
	// TimerResolution bounds how late a timer may fire. The server's default
	// is about a second; tests lower it so deadlines and sleeps stay fast.
	TimerResolution time.Duration
	// LogLevel of the server's own logs (written to stderr): debug, info,
	// warn, error. Empty silences them.
	LogLevel string
	// CodecEndpoint is where the UI decodes sealed payloads (empty: none).
	CodecEndpoint string
	// Store is where the server keeps its state: StoreSQLite (the default:
	// DBFile, or memory) or StorePostgres (two databases beside
	// PostgresURL's, the production-shaped option).
	Store string
	// PostgresURL names a database on the server that holds Temporal's
	// databases under StorePostgres: <name>_temporal and
	// <name>_temporal_visibility are created there when missing.
	PostgresURL string
	// Shards is the number of history shards; 0 is 1 on SQLite and
	// DefaultPostgresShards on PostgreSQL. A store keeps the count it was
	// created with (the server ignores a different one later).
	Shards int
	// TLS, when set, secures the frontend (tls.go).
	TLS *ServerTLS
	// SearchAttributes are registered with the namespace when the store
	// creates it, so they are usable from the first request (the server
	// is not told to re-read them on every use; see dynamicConfig). A
	// store made before an attribute was added gets it through the
	// operator API (temporalx.EnsureSearchAttributes).
	SearchAttributes map[string]enumspb.IndexedValueType
}

// The stores the embedded server can keep its state in.
const (
	StoreSQLite   = "sqlite"
	StorePostgres = "postgres"
)

// DefaultPostgresShards is the history shard count of a PostgreSQL store
// when none is asked for: a few shards let the one-shard queue readers and
// the shard's lock work in parallel, as in a production cluster.
const DefaultPostgresShards = 8

func (o TemporalOptions) shards() int32 {
	switch {
	case o.Shards > 0:
		return int32(o.Shards)
	case o.Store == StorePostgres:
		return DefaultPostgresShards
	}
	return 1
}

// Temporal is a running in-process server.
type Temporal struct {
	Address   string
	UIAddress string
	Namespace string
	server    temporal.Server
	ui        *uiserver.Server
	// codecEndpoint decodes sealed payloads for the UI (TemporalOptions).
	codecEndpoint string
	// probe adds TLS to the readiness probe's client (tls.go).
	probe func(*client.Options)
	// memdb names the in-memory store's database (sqlitePersistence).
	memdb string
}

const clusterName = "active"

// StartTemporal builds the server configuration in code (no YAML), creates
// the SQLite schema and namespace on first use, starts all four services in
// this process and, when asked, the Web UI next to them.
func StartTemporal(ctx context.Context, o TemporalOptions) (*Temporal, error) {
	if o.Namespace == "" {
		o.Namespace = "default"
	}
	port := o.Port
	if port == 0 {
		var err error
		if port, err = pg.FreePort(); err != nil {
			return nil, err
		}
	} else if err := pg.CheckPortFree(port); err != nil {
		return nil, fmt.Errorf("Temporal port %d is already in use; stop what holds it or set CONDUIT_DEV_TEMPORAL_PORT", port)
	}
	if o.UIPort != 0 {
		if err := pg.CheckPortFree(o.UIPort); err != nil {
			return nil, fmt.Errorf("Temporal UI port %d is already in use; stop what holds it or set CONDUIT_DEV_TEMPORAL_UI_PORT", o.UIPort)
		}
	}

	var (
		pers config.Persistence
		err  error
	)
	switch o.Store {
	case "", StoreSQLite:
		pers, err = sqlitePersistence(o)
	case StorePostgres:
		pers, err = postgresPersistence(ctx, o)
	default:
		err = fmt.Errorf("unknown Temporal store %q (sqlite or postgres)", o.Store)
	}
	if err != nil {
		return nil, err
	}
	pers.NumHistoryShards = o.shards()

	// The PostgreSQL schema keeps a member's port in a SMALLINT.
	memberPort := pg.FreePort
	if o.Store == StorePostgres {
		memberPort = freeSmallPort
	}
	cfg, err := serverConfig(pers, port, memberPort)
	if err != nil {
		return nil, err
	}
	ns, err := sqliteschema.NewNamespaceConfig(clusterName, o.Namespace, false, o.SearchAttributes)
	if err != nil {
		return nil, err
	}
	// The namespace rows are plain SQL through the server's own plugin, so
	// this helper of the SQLite schema package serves PostgreSQL too.
	if err := sqliteschema.CreateNamespaces(pers.DataStores[pers.DefaultStore].SQL, ns); err != nil {
		return nil, fmt.Errorf("Temporal namespace %q could not be created: %w", o.Namespace, err)
	}

	secure, probe, err := o.TLS.apply(cfg, o.Namespace)
	if err != nil {
		return nil, err
	}
	dc := dynamicConfig(o)
	srv, err := temporal.NewServer(append([]temporal.ServerOption{
		temporal.WithConfig(cfg),
		temporal.ForServices(temporal.DefaultServices),
		temporal.WithLogger(serverLogger(o.LogLevel)),
		temporal.WithDynamicConfigClient(dc),
	}, secure...)...)
	if err != nil {
		return nil, fmt.Errorf("Temporal server could not be configured: %w", err)
	}
	if err := srv.Start(); err != nil {
		return nil, fmt.Errorf("Temporal server could not start: %w", err)
	}
	t := &Temporal{Address: cfg.PublicClient.HostPort, Namespace: o.Namespace, server: srv, codecEndpoint: o.CodecEndpoint, probe: probe}
	if sc := pers.DataStores[pers.DefaultStore].SQL; sc.ConnectAttributes["vfs"] == "memdb" {
		t.memdb = sc.DatabaseName
	}
	if err := t.waitReady(ctx); err != nil {
		_ = srv.Stop()
		return nil, err
	}
	if o.UIPort != 0 {
		t.startUI(o.UIPort)
		if err := waitHTTP(ctx, "http://"+t.UIAddress+"/healthz"); err != nil {
			t.Stop()
			return nil, fmt.Errorf("Temporal UI did not come up on %s: %w", t.UIAddress, err)
		}
	}
	return t, nil
}

// sqlitePersistence keeps the server's state in one SQLite file (DBFile),
// created with its schema on first use, or in memory.
func sqlitePersistence(o TemporalOptions) (config.Persistence, error) {
	sqlConf := &config.SQL{PluginName: sqliteplugin.PluginName, ConnectAttributes: map[string]string{}}
	if o.DBFile == "" {
		// In memory through SQLite's memdb VFS, not mode=memory: there the
		// database is its page cache, and each commit's truncation of that
		// cache came to walk all of it, a cost that grew with the store
		// (docs/operations.md). The leading slash shares the database by
		// name within the process; it lives while the plugin's connection
		// does (its pool never closes one). Only the main file goes through
		// memdb, so the journal is kept in memory too; "setup" makes the
		// schema on connect.
		sqlConf.ConnectAttributes["vfs"] = "memdb"
		sqlConf.ConnectAttributes["journal_mode"] = "memory"
		sqlConf.ConnectAttributes["setup"] = "true"
		sqlConf.DatabaseName = "/conduit-" + strconv.FormatUint(rand.Uint64(), 36)
	} else {
		abs, err := filepath.Abs(o.DBFile)
		if err != nil {
			return config.Persistence{}, err
		}
		if err := os.MkdirAll(filepath.Dir(abs), 0o755); err != nil {
			return config.Persistence{}, fmt.Errorf("cannot create the Temporal data folder: %w", err)
		}
		sqlConf.ConnectAttributes["mode"] = "rwc"
		// The plugin turns every key it does not know into a pragma of that
		// name, so these must be the pragmas' own names (an underscore
		// prefix made pragmas SQLite silently ignores). WAL lets readers
		// work beside the writer; NORMAL syncs at checkpoints, not at every
		// commit, which WAL keeps safe against a crash of this process.
		sqlConf.ConnectAttributes["journal_mode"] = "wal"
		sqlConf.ConnectAttributes["synchronous"] = "NORMAL"
		sqlConf.DatabaseName = abs
		if _, err := os.Stat(abs); errors.Is(err, os.ErrNotExist) {
			if err := sqliteschema.SetupSchema(sqlConf); err != nil {
				return config.Persistence{}, fmt.Errorf("Temporal SQLite schema could not be created in %s: %w", abs, err)
			}
		} else if err := forgetMembers(abs); err != nil {
			return config.Persistence{}, fmt.Errorf("Temporal SQLite file %s could not be prepared: %w", abs, err)
		}
		// Histories hold payment payloads and prompts: owner only.
		if err := os.Chmod(abs, 0o600); err != nil {
			return config.Persistence{}, err
		}
	}
	return config.Persistence{
		DefaultStore:    sqliteplugin.PluginName,
		VisibilityStore: sqliteplugin.PluginName,
		DataStores:      map[string]config.DataStore{sqliteplugin.PluginName: {SQL: sqlConf}},
	}, nil
}

// unlimited stands for "no limit" in the dynamic config below: far above
// anything one process can ask of a shard.
const unlimited = 100_000

// historyCacheEntries bounds the history service's cache of workflow
// states (dynamicConfig).
const historyCacheEntries = 2048

// dynamicConfig is what the embedded server is told beyond its defaults.
// The defaults fit a cluster of many shards; on this one-process server
// several of them are rate limits, not costs, and set the floor every run
// stands on (issue #26; docs/operations.md says which a cluster needs).
func dynamicConfig(o TemporalOptions) dynamicconfig.StaticClient {
	dc := dynamicconfig.StaticClient{
		// Off (the default), and said so because it used to be on: it
		// makes every use of a search attribute re-read the cluster
		// metadata and the namespace from the store, under one lock: a
		// workflow start with attributes, every upsert command (each
		// GetVersion is one), every visibility record written, and every
		// row of a workflow list read. On SQLite, whose one connection
		// serves the whole server, the UI's list of 1,000 workflows took
		// 1.3-1.9 s instead of 0.2 s beside a running workload (the dev
		// stack's 5 s list, issue #30), and a pipeline run 0.9 ms more CPU
		// (bench/README.md). The attributes are registered with the
		// namespace when the store is created instead
		// (TemporalOptions.SearchAttributes).
		dynamicconfig.ForceSearchAttributesCacheRefreshOnRead.Key(): false,
		// Visibility calls (lists and counts) per namespace and second:
		// the default 10, burst 10, refuses part of the burst the UI's
		// workflow page sends on load (the list, its count, the count by
		// status, the views' counts) with "namespace rate limit exceeded"
		// once anything else reads too. The store is local; the cap only
		// stops a runaway client.
		dynamicconfig.FrontendMaxNamespaceVisibilityRPSPerInstance.Key(): 200,
		dynamicconfig.EnableServerVersionCheck.Key():                     false,
		dynamicconfig.FrontendPersistenceMaxQPS.Key():                    10000,
		dynamicconfig.HistoryPersistenceMaxQPS.Key():                     45000,
		// Every workflow and activity task reaches matching through its
		// shard's transfer queue, and each read of a queue waits on a
		// limiter of this many reads a second per shard (default 20, burst
		// 20). With one shard a busy caller waits up to 50 ms at every
		// step: that was the "bare round trip". Reads are driven by new
		// tasks, so lifting the cap costs nothing when idle. The timer,
		// visibility and outbound queues have the same per-shard cap
		// (timers, run lists, Nexus callbacks).
		dynamicconfig.TransferProcessorMaxPollRPS.Key():   unlimited,
		dynamicconfig.TimerProcessorMaxPollRPS.Key():      unlimited,
		dynamicconfig.VisibilityProcessorMaxPollRPS.Key(): unlimited,
		dynamicconfig.OutboundProcessorMaxPollRPS.Key():   unlimited,
		// A task written to one of a queue's four partitions where no
		// poller waits is forwarded to the root at most 10 times a second
		// (matching.forwarderMaxRatePerSecond): a 60-90 ms p90 on a server
		// with a handful of pollers. One write partition removes the hop;
		// reads stay on all four, so a backlog an older dev database wrote
		// to the other partitions is still served.
		dynamicconfig.MatchingNumTaskqueueWritePartitions.Key(): 1,
		// A long poll for a workflow's result can miss the close when two
		// notifications for that workflow arrive back to back (the
		// waiter's channel holds one); it then waits out this interval
		// (20 s by default) before the SDK polls again. One second bounds
		// that stall; an idle waiter costs one cheap read a second.
		dynamicconfig.HistoryLongPollExpirationInterval.Key(): time.Second,
		// At each checkpoint a queue slice narrows its predicate to the
		// namespaces its pending tasks belong to, when there are at most
		// this many (default 10; here one or two, so always). The next
		// new range, whose predicate is everything, then cannot be merged
		// by range: it is merged by splitting the slice, which walks every
		// task the slice tracks, at every new task. Under a sustained load
		// that is quadratic: the history service spent 3.3 ms of CPU per
		// workflow in it once a few thousand tasks were pending
		// (bench/README.md). Narrowing serves a cluster's many namespaces;
		// here it only costs. Zero narrows a slice only once it is empty.
		dynamicconfig.QueueShrinkPredicateMaxPendingKeys.Key(): 0,
		// The history service caches up to 128,000 workflow states for an
		// hour, closed ones included: on this one-process server that is
		// heap the collector marks at every cycle (about 20 KB per
		// workflow, docs/operations.md). Its open workflows are dozens; an
		// evicted one is read back from the store at its next task.
		dynamicconfig.HistoryCacheHostLevelMaxSize.Key(): historyCacheEntries,
	}
	if o.TimerResolution > 0 {
		dc[dynamicconfig.TimerProcessorMaxTimeShift.Key()] = o.TimerResolution
	}
	return dc
}

// forgetMembers drops the cluster members an earlier process recorded.
// This server is the only node of its cluster, and its services listen on
// new ports at every start, so every recorded member is a dead address;
// left in place, the ring bootstraps from them and the first workflow
// task after a restart waits about a minute for them to be given up on.
func forgetMembers(file string) error {
	db, err := sql.Open(sqliteplugin.PluginName, file)
	if err != nil {
		return err
	}
	defer db.Close()
	_, err = db.Exec(`DELETE FROM cluster_membership`)
	return err
}

// freeSmallPort finds a free loopback port below 32768, where the
// kernel's own picks (the ephemeral range) never are.
func freeSmallPort() (int, error) {
	for range 100 {
		p := 20000 + rand.IntN(12000)
		if pg.CheckPortFree(p) == nil {
			return p, nil
		}
	}
	return 0, errors.New("no free TCP port below 32768 on 127.0.0.1")
}

func serverConfig(pers config.Persistence, port int, memberPort func() (int, error)) (*config.Config, error) {
	const ip = "127.0.0.1"
	svc := func(grpcPort int) (config.Service, error) {
		var err error
		if grpcPort == 0 {
			if grpcPort, err = pg.FreePort(); err != nil {
				return config.Service{}, err
			}
		}
		member, err := memberPort()
		if err != nil {
			return config.Service{}, err
		}
		return config.Service{RPC: config.RPC{GRPCPort: grpcPort, MembershipPort: member, BindOnIP: ip}}, nil
	}
	services := map[string]config.Service{}
	for i, name := range []string{"frontend", "history", "matching", "worker"} {
		p := 0
		if i == 0 {
			p = port
		}
		s, err := svc(p)
		if err != nil {
			return nil, err
		}
		services[name] = s
	}
	httpPort, err := pg.FreePort()
	if err != nil {
		return nil, err
	}
	fe := services["frontend"]
	fe.RPC.HTTPPort = httpPort
	services["frontend"] = fe

	hostPort := net.JoinHostPort(ip, strconv.Itoa(port))
	return &config.Config{
		Global:      config.Global{Membership: config.Membership{MaxJoinDuration: 30 * time.Second, BroadcastAddress: ip}},
		Persistence: pers,
		ClusterMetadata: &cluster.Config{
			FailoverVersionIncrement: 10,
			MasterClusterName:        clusterName,
			CurrentClusterName:       clusterName,
			ClusterInformation: map[string]cluster.ClusterInformation{
				clusterName: {Enabled: true, InitialFailoverVersion: 1, RPCAddress: hostPort, HTTPAddress: net.JoinHostPort(ip, strconv.Itoa(httpPort))},
			},
		},
		DCRedirectionPolicy: config.DCRedirectionPolicy{Policy: "noop"},
		Services:            services,
		Archival: config.Archival{
			History:    config.HistoryArchival{State: "disabled"},
			Visibility: config.VisibilityArchival{State: "disabled"},
		},
		NamespaceDefaults: config.NamespaceDefaults{Archival: config.ArchivalNamespaceDefaults{
			History:    config.HistoryArchivalNamespaceDefaults{State: "disabled"},
			Visibility: config.VisibilityArchivalNamespaceDefaults{State: "disabled"},
		}},
		PublicClient: config.PublicClient{HostPort: hostPort},
	}, nil
}

func serverLogger(level string) tlog.Logger {
	if level == "" {
		return tlog.NewNoopLogger()
	}
	return tlog.NewZapLogger(tlog.BuildZapLogger(tlog.Config{Level: level, Format: "json"}))
}

// waitReady dials until the frontend answers a health check.
func (t *Temporal) waitReady(ctx context.Context) error {
	deadline := time.Now().Add(60 * time.Second)
	for {
		opts := client.Options{HostPort: t.Address, Namespace: t.Namespace, Logger: quietLogger{}}
		if t.probe != nil {
			t.probe(&opts)
		}
		c, err := client.DialContext(ctx, opts)
		if err == nil {
			_, err = c.CheckHealth(ctx, &client.CheckHealthRequest{})
			c.Close()
			if err == nil {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("Temporal server did not answer within 60s: %w", err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func (t *Temporal) startUI(port int) {
	t.UIAddress = net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	t.ui = uiserver.NewServer(uioptions.WithConfigProvider(&uiconfig.Config{
		Codec:               uiconfig.Codec{Endpoint: t.codecEndpoint},
		Host:                "127.0.0.1",
		Port:                port,
		TemporalGRPCAddress: t.Address,
		EnableUI:            true,
		DefaultNamespace:    t.Namespace,
		DisableNewsFetch:    true,
		HideLogs:            true,
		CORS:                uiconfig.CORS{CookieInsecure: true},
	}))
	// Start blocks until Stop; its port was checked free above.
	go func() { _ = t.ui.Start() }()
}

func waitHTTP(ctx context.Context, url string) error {
	deadline := time.Now().Add(20 * time.Second)
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode < 500 {
				return nil
			}
			err = fmt.Errorf("status %d", resp.StatusCode)
		}
		if time.Now().After(deadline) {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// Stop stops the UI and the server.
func (t *Temporal) Stop() {
	if t == nil {
		return
	}
	if t.ui != nil {
		t.ui.Stop()
	}
	_ = t.server.Stop()
}

// quietLogger drops the SDK client's logs while probing readiness.
type quietLogger struct{}

func (quietLogger) Debug(string, ...interface{}) {}
func (quietLogger) Info(string, ...interface{})  {}
func (quietLogger) Warn(string, ...interface{})  {}
func (quietLogger) Error(string, ...interface{}) {}
