package devcmd_test

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.temporal.io/sdk/client"

	"conduit/internal/devstack"
	"conduit/workflows"
)

// TestDevCommandEndToEnd builds the real entry point and runs `dev` the way
// a newcomer does: it must come up, answer /healthz and serve the Temporal
// UI, stop cleanly on Ctrl-C (SIGINT) and keep its data for the next start.
func TestDevCommandEndToEnd(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), "conduit")
	build := exec.Command("go", "build", "-o", bin, ".")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	dataDir := filepath.Join(t.TempDir(), "data")
	ports := freePorts(t, 4)
	envVars := append(os.Environ(),
		"CONDUIT_DEV_DATA_DIR="+dataDir,
		"CONDUIT_HTTP_ADDR=127.0.0.1:"+strconv.Itoa(ports[0]),
		"CONDUIT_DEV_POSTGRES_PORT="+strconv.Itoa(ports[1]),
		"CONDUIT_DEV_TEMPORAL_PORT="+strconv.Itoa(ports[2]),
		"CONDUIT_DEV_TEMPORAL_UI_PORT="+strconv.Itoa(ports[3]),
		"CONDUIT_DATABASE_URL=", "DATABASE_URL=", "CONDUIT_TEMPORAL_ADDRESS=", "TEMPORAL_ADDRESS=",
	)
	api := "http://127.0.0.1:" + strconv.Itoa(ports[0])
	temporalAddr := "127.0.0.1:" + strconv.Itoa(ports[2])
	wfID := workflows.PingWorkflowID("dev-restart")

	// First start: run a workflow whose history and row must survive.
	stop := startDev(t, bin, envVars)
	if code := httpGet(t, api+"/healthz"); code != http.StatusOK {
		t.Fatalf("healthz: %d", code)
	}
	if code := httpGet(t, "http://127.0.0.1:"+strconv.Itoa(ports[3])+"/"); code != http.StatusOK {
		t.Fatalf("Temporal UI: %d", code)
	}
	c, err := client.Dial(client.Options{HostPort: temporalAddr})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: wfID, TaskQueue: workflows.SystemQueue}, workflows.Ping, "kept")
	if err != nil {
		t.Fatal(err)
	}
	if err := run.Get(ctx, nil); err != nil {
		t.Fatal(err)
	}
	c.Close()
	stop()

	// Second start on the same data folder: the workflow is still known.
	stop = startDev(t, bin, envVars)
	defer stop()
	c, err = client.Dial(client.Options{HostPort: temporalAddr})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var res workflows.PingResult
	if err := c.GetWorkflow(ctx, wfID, "").Get(ctx, &res); err != nil || res.Message != "kept" {
		t.Fatalf("workflow history lost across restart: %+v %v", res, err)
	}
	if code := httpGet(t, api+"/healthz"); code != http.StatusOK {
		t.Fatalf("healthz after restart: %d", code)
	}
}

// TestDevCommandRefusesBusyPort: a taken port fails fast with one sentence.
func TestDevCommandRefusesBusyPort(t *testing.T) {
	root, _ := filepath.Abs("../..")
	bin := filepath.Join(t.TempDir(), "conduit")
	build := exec.Command("go", "build", "-o", bin, ".")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	ports := freePorts(t, 3)
	busy, err := devstack.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	holder := listenOn(t, busy)
	defer holder.Close()
	cmd := exec.Command(bin, "dev")
	cmd.Env = append(os.Environ(),
		"CONDUIT_DEV_DATA_DIR="+filepath.Join(t.TempDir(), "data"),
		"CONDUIT_HTTP_ADDR=127.0.0.1:"+strconv.Itoa(ports[0]),
		"CONDUIT_DEV_POSTGRES_PORT="+strconv.Itoa(ports[1]),
		"CONDUIT_DEV_TEMPORAL_PORT="+strconv.Itoa(busy),
		"CONDUIT_DEV_TEMPORAL_UI_PORT="+strconv.Itoa(ports[2]),
		"CONDUIT_DATABASE_URL=", "DATABASE_URL=", "CONDUIT_TEMPORAL_ADDRESS=", "TEMPORAL_ADDRESS=",
	)
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatal("dev started on a busy port")
	}
	want := "conduit: Temporal port " + strconv.Itoa(busy) + " is already in use; stop what holds it or set CONDUIT_DEV_TEMPORAL_PORT"
	if !strings.Contains(string(out), want) || strings.Contains(string(out), "goroutine ") {
		t.Fatalf("want %q, got:\n%s", want, out)
	}

	// A malformed setting never gets as far as starting anything.
	cmd = exec.Command(bin, "dev")
	cmd.Env = append(os.Environ(), "CONDUIT_HTTP_ADDR=127.0.0.1:99999")
	out, err = cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "http.addr (CONDUIT_HTTP_ADDR)") {
		t.Fatalf("bad port accepted: %v\n%s", err, out)
	}
}

func startDev(t *testing.T, bin string, envVars []string) (stop func()) {
	t.Helper()
	cmd := exec.Command(bin, "dev")
	cmd.Env = envVars
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr, err := os.CreateTemp(t.TempDir(), "stderr")
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	up := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if strings.Contains(sc.Text(), "Press Ctrl-C") {
				close(up)
			}
		}
	}()
	go func() { exited <- cmd.Wait() }()
	select {
	case <-up:
	case err := <-exited:
		b, _ := os.ReadFile(stderr.Name())
		t.Fatalf("dev exited before coming up: %v\n%s", err, b)
	case <-time.After(120 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatal("dev did not come up within 120s")
	}
	return func() {
		_ = cmd.Process.Signal(syscall.SIGINT)
		select {
		case err := <-exited:
			if err != nil {
				b, _ := os.ReadFile(stderr.Name())
				t.Fatalf("dev did not stop cleanly: %v\n%s", err, b)
			}
		case <-time.After(60 * time.Second):
			_ = cmd.Process.Kill()
			t.Fatal("dev did not stop within 60s of Ctrl-C")
		}
	}
}

func httpGet(t *testing.T, url string) int {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}
