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

	sqlConf := &config.SQL{PluginName: sqliteplugin.PluginName, ConnectAttributes: map[string]string{}}
	if o.DBFile == "" {
		sqlConf.ConnectAttributes["mode"] = "memory"
		sqlConf.ConnectAttributes["cache"] = "shared"
		sqlConf.DatabaseName = "conduit-" + strconv.FormatUint(rand.Uint64(), 36)
	} else {
		abs, err := filepath.Abs(o.DBFile)
		if err != nil {
			return nil, err
		}
		if err := os.MkdirAll(filepath.Dir(abs), 0o755); err != nil {
			return nil, fmt.Errorf("cannot create the Temporal data folder: %w", err)
		}
		sqlConf.ConnectAttributes["mode"] = "rwc"
		sqlConf.ConnectAttributes["_journal_mode"] = "WAL"
		sqlConf.ConnectAttributes["_synchronous"] = "NORMAL"
		sqlConf.DatabaseName = abs
		if _, err := os.Stat(abs); errors.Is(err, os.ErrNotExist) {
			if err := sqliteschema.SetupSchema(sqlConf); err != nil {
				return nil, fmt.Errorf("Temporal SQLite schema could not be created in %s: %w", abs, err)
			}
		} else if err := forgetMembers(abs); err != nil {
			return nil, fmt.Errorf("Temporal SQLite file %s could not be prepared: %w", abs, err)
		}
		// Histories hold payment payloads and prompts: owner only.
		if err := os.Chmod(abs, 0o600); err != nil {
			return nil, err
		}
	}

	cfg, err := serverConfig(sqlConf, port)
	if err != nil {
		return nil, err
	}
	ns, err := sqliteschema.NewNamespaceConfig(clusterName, o.Namespace, false, nil)
	if err != nil {
		return nil, err
	}
	if err := sqliteschema.CreateNamespaces(sqlConf, ns); err != nil {
		return nil, fmt.Errorf("Temporal namespace %q could not be created: %w", o.Namespace, err)
	}

	dc := dynamicconfig.StaticClient{
		dynamicconfig.ForceSearchAttributesCacheRefreshOnRead.Key(): []dynamicconfig.ConstrainedValue{{Value: true}},
		dynamicconfig.EnableServerVersionCheck.Key():                []dynamicconfig.ConstrainedValue{{Value: false}},
		dynamicconfig.FrontendPersistenceMaxQPS.Key():               []dynamicconfig.ConstrainedValue{{Value: 10000}},
		dynamicconfig.HistoryPersistenceMaxQPS.Key():                []dynamicconfig.ConstrainedValue{{Value: 45000}},
	}
	if o.TimerResolution > 0 {
		dc[dynamicconfig.TimerProcessorMaxTimeShift.Key()] = []dynamicconfig.ConstrainedValue{{Value: o.TimerResolution}}
	}
	srv, err := temporal.NewServer(
		temporal.WithConfig(cfg),
		temporal.ForServices(temporal.DefaultServices),
		temporal.WithLogger(serverLogger(o.LogLevel)),
		temporal.WithDynamicConfigClient(dc),
	)
	if err != nil {
		return nil, fmt.Errorf("Temporal server could not be configured: %w", err)
	}
	if err := srv.Start(); err != nil {
		return nil, fmt.Errorf("Temporal server could not start: %w", err)
	}
	t := &Temporal{Address: cfg.PublicClient.HostPort, Namespace: o.Namespace, server: srv, codecEndpoint: o.CodecEndpoint}
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

func serverConfig(sqlConf *config.SQL, port int) (*config.Config, error) {
	const ip = "127.0.0.1"
	svc := func(grpcPort int) (config.Service, error) {
		var err error
		if grpcPort == 0 {
			if grpcPort, err = pg.FreePort(); err != nil {
				return config.Service{}, err
			}
		}
		member, err := pg.FreePort()
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
		Global: config.Global{Membership: config.Membership{MaxJoinDuration: 30 * time.Second, BroadcastAddress: ip}},
		Persistence: config.Persistence{
			DefaultStore:     sqliteplugin.PluginName,
			VisibilityStore:  sqliteplugin.PluginName,
			NumHistoryShards: 1,
			DataStores:       map[string]config.DataStore{sqliteplugin.PluginName: {SQL: sqlConf}},
		},
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
		c, err := client.DialContext(ctx, client.Options{HostPort: t.Address, Namespace: t.Namespace, Logger: quietLogger{}})
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
