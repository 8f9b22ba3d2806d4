// Package apptest is the integration-test harness: once per test package it
// starts a real PostgreSQL (a throwaway cluster, or a fresh database on the
// server named by CONDUIT_TEST_DATABASE_URL) and a real in-process Temporal
// server, runs the real worker and the real API on a free loopback port, and
// hands tests an HTTP client to it. Nothing of ours is mocked.
package apptest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/crypto"

	"conduit/app"
	"conduit/internal/accounts"
	"conduit/internal/apikey"
	"conduit/internal/codec"
	"conduit/internal/config"
	"conduit/internal/devstack"
	"conduit/internal/devstack/pg"
	"conduit/internal/enclaves/build/gittest"
	"conduit/internal/enclaves/provider/local"
	"conduit/internal/logging"
	"conduit/internal/telemetry"
	"conduit/worker"
	"conduit/workflows"
)

// Env is the running platform a test package talks to.
type Env struct {
	// URL is the API's base address, e.g. http://127.0.0.1:41234.
	URL      string
	HTTP     *http.Client
	Platform *app.Platform
	Config   *config.Config
	Stack    *devstack.Stack
	// Internet is what the image fetcher reaches (see Internet).
	Internet *Internet
	// Studio is the hosted video API the queue renderer reaches.
	Studio *Studio
	// Faults sits between the worker and the local facilitator.
	Faults *Faults
	// Registry is the loopback OCI registry enclaves pull from
	// ("127.0.0.1:port"); empty when enclaves are off (no bubblewrap).
	Registry string
	// Git is the loopback git host github sources are cloned from (real
	// git repositories served by git http-backend); builds push to
	// Registry/builds. Nil when enclaves are off.
	Git *gittest.Server
	// MetricsURL is the platform's GET /metrics (its own listener, as
	// metrics.addr gives production).
	MetricsURL string

	mu     sync.Mutex
	worker *worker.Worker
	logs   *syncBuffer
	// db is the platform's own database (nil when it shares another
	// platform's); dbDown says StopDatabase took it away.
	db     *pg.TestDB
	dbDown bool
}

// Logs returns everything the platform logged so far.
func (e *Env) Logs() string { return e.logs.String() }

type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// Main runs the package's tests against a fresh platform and exits. Use it
// from TestMain:
//
//	var env *apptest.Env
//	func TestMain(m *testing.M) { apptest.Main(m, &env) }
func Main(m *testing.M, env **Env) {
	os.Exit(run(m, env))
}

// Run is Main without the exit: it returns the tests' exit code, so a
// TestMain can remove what it prepared beside the platform (a binary it
// built) once the platform has stopped.
func Run(m *testing.M, env **Env) int {
	return run(m, env)
}

func run(m *testing.M, out **Env) int {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// Everything is logged at debug level into memory, so tests can check
	// what the logs contain (no secrets, say); CONDUIT_TEST_LOG=1 also
	// prints it.
	logs := &syncBuffer{}
	var w io.Writer = logs
	if os.Getenv("CONDUIT_TEST_LOG") != "" {
		w = io.MultiWriter(logs, os.Stderr)
	}
	log := logging.New(w, "debug", "json")
	slog.SetDefault(log)

	env, cleanup, err := start(ctx, log, options{})
	if err != nil {
		fmt.Fprintf(os.Stderr, "apptest: the test platform could not start: %v\n", err)
		cleanup()
		return 1
	}
	env.logs = logs
	*out = env
	code := m.Run()
	if dir := os.Getenv(CaptureEnv); dir != "" && code == 0 {
		if err := captureHistories(ctx, env.Platform.Temporal, dir); err != nil {
			fmt.Fprintf(os.Stderr, "apptest: capturing histories: %v\n", err)
			code = 1
		}
	}
	cleanup()
	return code
}

// StartPlay brings up one more platform for a single test, configured as
// the dev command configures its own: agent payments on the play networks
// (config.PlayNetwork, config.PlaySolanaNetwork) and no main-network
// override. It has its own in-process Temporal server, worker and API, on
// this platform's PostgreSQL database, and stops when the test ends.
func (e *Env) StartPlay(t testing.TB) *Env {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	play, cleanup, err := start(ctx, e.Platform.Log, options{databaseURL: e.Config.Database.URL, play: true})
	t.Cleanup(func() { cleanup(); cancel() })
	if err != nil {
		t.Fatalf("apptest: the play platform could not start: %v", err)
	}
	play.logs = e.logs
	return play
}

// The environment that puts the harness's Temporal server on the
// production-shaped store (the bench runs on both): TemporalStoreEnv is
// sqlite (the default, in memory) or postgres (databases beside the
// platform's), TemporalShardsEnv the history shard count (0 or unset: the
// store's default).
const (
	TemporalStoreEnv  = "CONDUIT_TEST_TEMPORAL_STORE"
	TemporalShardsEnv = "CONDUIT_TEST_TEMPORAL_SHARDS"
)

func temporalStore() (store string, shards int, err error) {
	switch store = os.Getenv(TemporalStoreEnv); store {
	case "":
		store = devstack.StoreSQLite
	case devstack.StoreSQLite, devstack.StorePostgres:
	default:
		return "", 0, fmt.Errorf("%s=%q: want sqlite or postgres", TemporalStoreEnv, store)
	}
	if v := os.Getenv(TemporalShardsEnv); v != "" {
		if shards, err = strconv.Atoi(v); err != nil || shards < 0 {
			return "", 0, fmt.Errorf("%s=%q: want a shard count", TemporalShardsEnv, v)
		}
	}
	return store, shards, nil
}

// options vary the platform start brings up.
type options struct {
	// databaseURL shares a database; empty makes a fresh one.
	databaseURL string
	// play runs payments on the play networks, as the dev command does.
	play bool
}

func start(ctx context.Context, log *slog.Logger, o options) (*Env, func(), error) {
	var cleanups []func()
	cleanup := func() {
		for i := len(cleanups) - 1; i >= 0; i-- {
			cleanups[i]()
		}
	}
	dir, err := os.MkdirTemp("", "conduit-test-")
	if err != nil {
		return nil, cleanup, err
	}
	cleanups = append(cleanups, func() { os.RemoveAll(dir) })

	// One database per test package keeps packages independent.
	dbURL := o.databaseURL
	var db *pg.TestDB
	if dbURL == "" {
		var err error
		if db, err = pg.NewTestDB(ctx, log); err != nil {
			return nil, cleanup, err
		}
		dbURL = db.URL
		cleanups = append(cleanups, db.Close)
	}
	store, shards, err := temporalStore()
	if err != nil {
		return nil, cleanup, err
	}
	if o.databaseURL != "" {
		// A second platform on the same database must not share its
		// Temporal databases with the first one's server.
		store, shards = devstack.StoreSQLite, 0
	}
	if store == devstack.StorePostgres {
		// Its databases sit beside the platform's; removed after the
		// server stops (cleanups run in reverse).
		cleanups = append(cleanups, func() { _ = devstack.DropPostgresStore(context.Background(), dbURL) })
	}
	stack, err := devstack.Start(ctx, devstack.Options{
		DataDir:           dir,
		EphemeralTemporal: true,
		DatabaseURL:       dbURL,
		Namespace:         "default",
		TimerResolution:   10 * time.Millisecond,
		Log:               log,
		TemporalStore:     store,
		TemporalShards:    shards,
		SearchAttributes:  workflows.SearchAttributes(),
	})
	if err != nil {
		return nil, cleanup, err
	}
	cleanups = append(cleanups, stack.Stop)

	cfg, err := config.Load("")
	if err != nil {
		return nil, cleanup, err
	}
	cfg.HTTP.Addr = "127.0.0.1:0"
	cfg.Database.URL = stack.DatabaseURL
	cfg.Temporal.Address = stack.TemporalAddress
	cfg.Temporal.Namespace = "default"
	ln, err := app.Listen(cfg)
	if err != nil {
		return nil, cleanup, err
	}
	// Agent payments on the embedded networks, settled by the local
	// facilitator with a fresh key.
	key, err := crypto.GenerateKey()
	if err != nil {
		return nil, cleanup, err
	}
	cfg.X402.Enabled, cfg.X402.Facilitator, cfg.X402.LocalKey = true, "local", hexutil.Encode(crypto.FromECDSA(key))
	// The spec's default network ids, which the tests assert: main
	// networks under the local facilitator, so the harness sets the
	// dev-only override; StartPlay's platform needs none.
	cfg.X402.Network = "eip155:8453"
	cfg.X402.AllowLocalOnMainNetwork = true
	// The embedded Solana network's JSON-RPC, on a free port
	// (Env.Platform.Payments.SolanaRPC).
	cfg.X402.SolanaRPCAddr = "127.0.0.1:0"
	if o.play {
		cfg.X402.Network, cfg.X402.SolanaNetwork = config.PlayNetwork, config.PlaySolanaNetwork
		cfg.X402.AllowLocalOnMainNetwork = false
	}
	// Every test calls from 127.0.0.1; the limit itself has its own tests.
	cfg.X402.RateLimit = "100000-M"
	cfg.SignIn.RateLimit = "100000-M"
	cfg.OAuth.RegisterRateLimit = "100000-M"
	cfg.Media.Images.UnpaidRateLimit = "100000-M"
	// Card payments for credit packs: the local TEST MODE checkout, with a
	// fresh webhook secret.
	cfg.Checkout.Provider = "local"
	cfg.Checkout.WebhookSecret = "whsec_" + hexutil.Encode(crypto.Keccak256([]byte("checkout " + dir)))[2:]
	// Sign-up on: verification links signed with a fresh secret, mailed
	// into the dev mailbox (/dev/mailbox).
	cfg.SignUp.Secret = hexutil.Encode(crypto.Keccak256([]byte("signup " + dir)))
	cfg.Mail.Sender = "mailbox"
	// OAuth on, with a fresh secret.
	cfg.OAuth.Secret = hexutil.Encode(crypto.Keccak256([]byte("oauth " + dir)))
	// Pay-per-call: a fresh signing secret, files under the test folder,
	// a heartbeat timeout short enough that a killed worker's render moves
	// on quickly, and longer than vista-3.1's whole budget below (9 s): the
	// SDK sends heartbeats only every 80% of the timeout, so a short one
	// failed late renders' attempts whenever the machine was busy, with no
	// time left to retry them.
	cfg.Media.Secret = hexutil.Encode(crypto.Keccak256([]byte(dir)))
	cfg.Media.Blob.Dir = filepath.Join(dir, "blobs")
	cfg.Media.HeartbeatTimeout = 10 * time.Second
	// Two models render at the fake hosted studio, which holds every job
	// until the test releases it: kine-3.0 on its usual deadline, and
	// vista-3.1 with a deadline of 3 s (collected for 6 s more), so tests
	// see late and abandoned renders.
	studio := newStudio()
	cleanups = append(cleanups, studio.close)
	cfg.Media.Queue.BaseURL, cfg.Media.Queue.APIKey, cfg.Media.Queue.PollEvery = studio.URL, StudioKey, 100*time.Millisecond
	for i, m := range cfg.Media.Video {
		switch m.ID {
		case "kine-3.0":
			cfg.Media.Video[i].Provider, cfg.Media.Video[i].Upstream = "queue", "vendor/kine/v3/text-to-video"
		case "vista-3.1":
			cfg.Media.Video[i].Provider, cfg.Media.Video[i].Upstream = "queue", "vendor/vista/v3.1"
			cfg.Media.Video[i].Deadline = 3 * time.Second
		}
	}
	// A stopped worker is a crashed one here (tests kill workers
	// mid-render); draining on stop is the production default, which
	// StartDrainingWorker gives a test.
	cfg.Temporal.StopTimeout = 0
	// Every payload the tests' workflows write is sealed, as in production;
	// when histories are captured, with the key kept beside them so the
	// replay suite can open them.
	cfg.Temporal.CodecKeys = codec.NewKey("test")
	if dir := os.Getenv(CaptureEnv); dir != "" {
		if cfg.Temporal.CodecKeys, err = captureKey(dir); err != nil {
			return nil, cleanup, err
		}
	}
	// Enclaves on the real local provider, pulling from a loopback
	// registry, when bubblewrap is here; fast log copies and heartbeats.
	var reg *local.Registry
	var git *gittest.Server
	if _, err := exec.LookPath("bwrap"); err == nil {
		if reg, err = local.StartRegistry(local.RegistryOptions{}); err != nil {
			return nil, cleanup, err
		}
		cleanups = append(cleanups, func() { _ = reg.Close() })
		cfg.Enclaves.Enabled = true
		// Searchable by other uids, so that a root worker runs each enclave as a uid of its own,
		// as in production (docs/enclaves.md, "Limits").
		if err := os.Chmod(dir, 0o711); err != nil {
			return nil, cleanup, err
		}
		cfg.Enclaves.DataDir = filepath.Join(dir, "enclaves")
		cfg.Enclaves.AttestationDir = filepath.Join(dir, "attestation")
		cfg.Enclaves.LogEvery = 300 * time.Millisecond
		cfg.Enclaves.HeartbeatTimeout = 5 * time.Second
		// Small image limits, so that a bomb image is quick to make.
		cfg.Enclaves.Limits.LayerBytes, cfg.Enclaves.Limits.ImageBytes = 64<<20, 128<<20
		if git, err = gittest.New(filepath.Join(dir, "git")); err != nil {
			return nil, cleanup, err
		}
		cleanups = append(cleanups, git.Close)
		cfg.Enclaves.GitBaseURL = git.URL
		cfg.Enclaves.BuildRegistry = reg.Host + "/builds"
	}
	cfg.Admin.Token = AdminToken
	// Tasks fire every second in tests (production's minimum is a
	// minute), unless the environment names another minimum.
	if os.Getenv(config.EnvPrefix+"_QUOTA_MIN_TASK_INTERVAL") == "" {
		cfg.Quota.MinTaskInterval = time.Second
	}
	// A test starts a batch's proof jobs together, but on a loaded machine
	// their statements can reach the aggregation seconds apart: a window
	// well past that spread keeps one test's jobs in one batch.
	if os.Getenv(config.EnvPrefix+"_ZKAGG_BATCH_WAIT") == "" {
		cfg.ZKAgg.BatchWait = 15 * time.Second
	}
	cfg.HTTP.Addr = ln.Addr().String()
	cfg.HTTP.PublicURL = "http://" + ln.Addr().String()
	if err := cfg.ValidateProduction(); err != nil {
		return nil, cleanup, err
	}

	p, err := app.Open(ctx, cfg, log)
	if err != nil {
		return nil, cleanup, err
	}
	cleanups = append(cleanups, p.Close)
	if p.MetricsListener, err = telemetry.Listen("127.0.0.1:0"); err != nil {
		return nil, cleanup, err
	}

	inet, err := newInternet()
	if err != nil {
		return nil, cleanup, err
	}
	p.Media.Images.Resolver, p.Media.Images.Dial, p.Media.Images.RootCAs = inet, inet.Dial, inet.Pool
	faults := &Faults{inner: p.Payments.Facilitator}
	p.Payments.Facilitator = faults
	env := &Env{URL: cfg.BaseURL(), HTTP: &http.Client{Timeout: 60 * time.Second}, Platform: p, Config: cfg, Stack: stack, Internet: inet, Studio: studio, Faults: faults, db: db}
	if reg != nil {
		env.Registry = reg.Host
		env.Git = git
	}
	env.MetricsURL = "http://" + p.MetricsListener.Addr().String() + telemetry.MetricsPath
	if err := env.StartWorker(); err != nil {
		return nil, cleanup, err
	}
	cleanups = append(cleanups, env.StopWorker)

	srvCtx, stopSrv := context.WithCancel(ctx)
	done := make(chan error, 1)
	// The dev tools too: tests mint play tokens as the dev command's user does.
	go func() { done <- p.Run(srvCtx, app.Roles{Frontend: true, DevTools: true}, ln) }()
	cleanups = append(cleanups, func() { stopSrv(); <-done })
	return env, cleanup, nil
}

// StartWorker starts the real worker (no-op when it runs).
func (e *Env) StartWorker() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.worker != nil {
		return nil
	}
	w, err := e.Platform.StartWorker(context.Background())
	if err != nil {
		return err
	}
	e.worker = w
	return nil
}

// StartDrainingWorker starts the real worker (no-op when one runs) with
// temporal.stop_timeout set to stopTimeout, as production sets it: the
// next StopWorker then stops polling and waits up to stopTimeout for the
// running activities to finish before cancelling them, as a deploy does,
// where the harness's own worker (stop timeout 0) is stopped like a crash.
// After that stop, StartWorker starts the harness's usual worker again.
func (e *Env) StartDrainingWorker(stopTimeout time.Duration) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.worker != nil {
		return nil
	}
	// The platform's worker reads its settings from the configuration:
	// hand it a copy of both that differs only in the stop timeout.
	cfg := *e.Config
	cfg.Temporal.StopTimeout = stopTimeout
	p := *e.Platform
	p.Config = &cfg
	w, err := p.StartWorker(context.Background())
	if err != nil {
		return err
	}
	e.worker = w
	return nil
}

// StopWorker stops the worker, as a crash or a deploy would (see
// StartDrainingWorker); it returns when the worker has stopped.
func (e *Env) StopWorker() {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.worker != nil {
		e.worker.Stop()
		e.worker = nil
	}
}

// StopDatabase takes the platform's PostgreSQL away, as an outage would:
// the throwaway cluster shuts down (on a shared server, the database stops
// accepting connections). Temporal, the worker and the API keep running.
// The test's cleanup ends the outage if the test did not, so the tests
// after it find the database back and healthy.
func (e *Env) StopDatabase(t testing.TB) {
	t.Helper()
	if e.db == nil {
		t.Fatal("apptest: this platform shares another platform's database and cannot stop it")
	}
	e.mu.Lock()
	err := e.db.Stop()
	e.dbDown = err == nil
	e.mu.Unlock()
	if err != nil {
		t.Fatalf("apptest: stopping PostgreSQL: %v", err)
	}
	t.Cleanup(func() { e.StartDatabase(t) })
}

// StartDatabase ends an outage StopDatabase began (no-op otherwise) and
// waits until the platform's store and /healthz answer again.
func (e *Env) StartDatabase(t testing.TB) {
	t.Helper()
	e.mu.Lock()
	defer e.mu.Unlock()
	if !e.dbDown {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := e.db.Start(ctx); err != nil {
		t.Errorf("apptest: restarting PostgreSQL: %v", err)
		return
	}
	e.dbDown = false
	for {
		err := e.Platform.Store.Ping(ctx)
		if err == nil {
			var resp *http.Response
			if resp, err = e.HTTP.Get(e.URL + "/healthz"); err == nil {
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					err = fmt.Errorf("/healthz answers %d", resp.StatusCode)
				}
			}
		}
		if err == nil {
			return
		}
		select {
		case <-ctx.Done():
			t.Errorf("apptest: the platform did not recover after PostgreSQL came back: %v", err)
			return
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// Response is an answered request with its body read.
type Response struct {
	Status int
	Header http.Header
	Body   []byte
}

// JSON decodes the body into a map, failing the test when it is not JSON.
func (r *Response) JSON(t testing.TB) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(r.Body, &m); err != nil {
		t.Fatalf("response body is not a JSON object (%v): %s", err, r.Body)
	}
	return m
}

// Do sends a request to the API. body may be nil, a string or []byte (sent
// as is) or any value (sent as JSON); headers come in name, value pairs.
func (e *Env) Do(t testing.TB, method, path string, body any, headers ...string) *Response {
	t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	case []byte:
		rd = bytes.NewReader(b)
	default:
		buf, err := json.Marshal(b)
		if err != nil {
			t.Fatal(err)
		}
		rd = bytes.NewReader(buf)
	}
	req, err := http.NewRequest(method, e.URL+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := e.HTTP.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: reading body: %v", method, path, err)
	}
	return &Response{Status: resp.StatusCode, Header: resp.Header, Body: b}
}

// NewAccount opens a fresh account (with its free credit) and returns its
// id and an API key holding scopes (every scope when none are named).
func (e *Env) NewAccount(t testing.TB, scopes ...string) (accountID, key string) {
	t.Helper()
	ctx := context.Background()
	svc := e.Platform.Accounts()
	acct, err := svc.CreateAccount(ctx, t.Name(), true)
	if err != nil {
		t.Fatal(err)
	}
	if len(scopes) == 0 {
		scopes = apikey.AllScopes()
	}
	_, plain, err := svc.CreateKey(ctx, acct.ID, accounts.KeyRequest{Name: "test", Permissions: scopes})
	if err != nil {
		t.Fatal(err)
	}
	return acct.ID, plain
}

// NewLogin opens a fresh account with an email sign-in whose login may
// grant scopes (every scope when none are named), and returns the
// account, the email and the password.
func (e *Env) NewLogin(t testing.TB, scopes ...string) (accountID, email, password string) {
	t.Helper()
	ctx := context.Background()
	acct, err := e.Platform.Accounts().CreateAccount(ctx, t.Name(), true)
	if err != nil {
		t.Fatal(err)
	}
	var perms []string
	if len(scopes) > 0 {
		perms = scopes
	}
	email = strings.ToLower(strings.ReplaceAll(acct.ID, "_", "-")) + "@test.conduit.local"
	password = "pw-" + acct.ID + "-long-enough"
	if _, err := e.Platform.Humans().CreateLogin(ctx, acct.ID, email, password, perms); err != nil {
		t.Fatal(err)
	}
	return acct.ID, email, password
}

// Bearer is the Authorization header pair for Do.
func Bearer(key string) []string { return []string{"Authorization", "Bearer " + key} }
