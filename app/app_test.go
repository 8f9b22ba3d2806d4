package app_test

import (
	"context"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/client"

	"conduit/app"
	"conduit/app/apptest"
	"conduit/frontend"
	"conduit/internal/devstack/pg"
	"conduit/internal/store"
	"conduit/workflows"
)

var env *apptest.Env

func TestMain(m *testing.M) { apptest.Main(m, &env) }

func TestHealthzReportsBothDependencies(t *testing.T) {
	r := env.Do(t, http.MethodGet, "/healthz", nil)
	if r.Status != http.StatusOK {
		t.Fatalf("healthz: %d %s", r.Status, r.Body)
	}
	body := r.JSON(t)
	if body["status"] != "ok" || body["postgres"] != "ok" || body["temporal"] != "ok" {
		t.Fatalf("healthz body: %s", r.Body)
	}
	if r.Header.Get(frontend.RequestIDHeader) == "" {
		t.Fatal("every answer carries a request id")
	}
}

func TestUnknownRouteIsSpecShaped(t *testing.T) {
	r := env.Do(t, http.MethodGet, "/api/nope", nil)
	if r.Status != http.StatusNotFound || r.JSON(t)["error"] != "no route for GET /api/nope" {
		t.Fatalf("%d %s", r.Status, r.Body)
	}
	r = env.Do(t, http.MethodPost, "/healthz", nil)
	if r.Status != http.StatusMethodNotAllowed {
		t.Fatalf("%d %s", r.Status, r.Body)
	}
}

// The trivial workflow crosses every boundary: Temporal schedules it, the
// real worker runs its activity, the activity writes PostgreSQL.
func TestPingWorkflowRunsThroughTheRealStack(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	id := workflows.PingWorkflowID(t.Name())
	run, err := env.Platform.Temporal.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: workflows.SystemQueue}, workflows.Ping, "hello")
	if err != nil {
		t.Fatal(err)
	}
	var res workflows.PingResult
	if err := run.Get(ctx, &res); err != nil {
		t.Fatal(err)
	}
	if res.Message != "hello" || res.RecordedAt.IsZero() {
		t.Fatalf("result: %+v", res)
	}
	msg, err := env.Platform.Store.PingMessage(ctx, id)
	if err != nil || msg != "hello" {
		t.Fatalf("row: %q %v", msg, err)
	}
}

// With PostgreSQL gone the health check says so with a 503, and recovers
// when it is back: a second, private cluster is stopped under a frontend.
func TestHealthzIs503WhenPostgresIsDown(t *testing.T) {
	ctx := context.Background()
	pg, err := pg.Start(ctx, pg.Options{Dir: filepath.Join(t.TempDir(), "pg"), Database: "probe"})
	if err != nil {
		t.Fatal(err)
	}
	defer pg.Stop()
	st, err := store.Open(ctx, pg.URL, 4, env.Platform.Log)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	deps := env.Platform.FrontendDeps()
	deps.Store = st
	srv := httpServe(t, frontend.New(deps).Handler())

	if code := get(t, srv+"/healthz"); code != http.StatusOK {
		t.Fatalf("before: %d", code)
	}
	if err := pg.Stop(); err != nil {
		t.Fatal(err)
	}
	resp, err := http.Get(srv + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	buf := make([]byte, 200)
	n, _ := resp.Body.Read(buf)
	if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(string(buf[:n]), `"postgres":"unreachable"`) {
		t.Fatalf("after: %d %s", resp.StatusCode, buf[:n])
	}
}

func TestListenOnBusyAddressIsOneSentence(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	cfg := *env.Config
	cfg.HTTP.Addr = ln.Addr().String()
	_, err = app.Listen(&cfg)
	if err == nil || !strings.Contains(err.Error(), "the API cannot listen on "+cfg.HTTP.Addr) || strings.Contains(err.Error(), "\n") {
		t.Fatalf("want one clear sentence, got %v", err)
	}
}

func TestOpenWithUnreachableDatabaseFailsFast(t *testing.T) {
	port, err := pg.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	cfg := *env.Config
	cfg.Database.URL = "postgres://x:y@127.0.0.1:" + itoa(port) + "/none?sslmode=disable&connect_timeout=2"
	start := time.Now()
	_, err = app.Open(context.Background(), &cfg, env.Platform.Log)
	if err == nil || !strings.Contains(err.Error(), "PostgreSQL at 127.0.0.1:"+itoa(port)+" is not reachable") {
		t.Fatalf("want a clear sentence, got %v", err)
	}
	if time.Since(start) > 15*time.Second {
		t.Fatalf("took %s", time.Since(start))
	}
}

func TestOpenWithUnreachableTemporalFailsFast(t *testing.T) {
	port, err := pg.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	cfg := *env.Config
	cfg.Temporal.Address = "127.0.0.1:" + itoa(port)
	_, err = app.Open(context.Background(), &cfg, env.Platform.Log)
	if err == nil || !strings.Contains(err.Error(), "Temporal at 127.0.0.1:"+itoa(port)+" is not reachable") {
		t.Fatalf("want a clear sentence, got %v", err)
	}
}
