package chaos_test

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"conduit/activities"
	"conduit/internal/config"
	"conduit/worker"
)

// workerProc is the platform's worker as its own OS process: `conduit
// worker` from the production binary, configured like the harness's
// in-process worker (same PostgreSQL, Temporal server and namespace, codec
// keys, local facilitator key, media secret and blob folder), so it picks
// up exactly the work the harness's API starts.
type workerProc struct {
	t      *testing.T
	env    []string
	logDir string

	mu     sync.Mutex
	cmd    *exec.Cmd
	done   chan struct{} // closed when the current process has been reaped
	starts int
}

// workerEnv is the child's environment: this process's, without any
// CONDUIT_ setting of its own, plus the harness's configuration as
// CONDUIT_ variables (internal/config names every key's variable).
func workerEnv(cfg *config.Config) []string {
	var out []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(name, config.EnvPrefix+"_") || name == "DATABASE_URL" || name == "TEMPORAL_ADDRESS" {
			continue
		}
		out = append(out, kv)
	}
	set := func(key, value string) { out = append(out, config.EnvPrefix+"_"+key+"="+value) }
	set("DATABASE_URL", cfg.Database.URL)
	set("TEMPORAL_ADDRESS", cfg.Temporal.Address)
	set("TEMPORAL_NAMESPACE", cfg.Temporal.Namespace)
	set("TEMPORAL_CODEC_KEYS", cfg.Temporal.CodecKeys)
	set("TEMPORAL_POLLERS", strconv.Itoa(cfg.Temporal.Pollers))
	set("TEMPORAL_RENDER_CONCURRENCY", strconv.Itoa(cfg.Temporal.RenderConcurrency))
	set("TEMPORAL_STOP_TIMEOUT", cfg.Temporal.StopTimeout.String())
	set("HTTP_PUBLIC_URL", cfg.BaseURL())
	set("X402_ENABLED", strconv.FormatBool(cfg.X402.Enabled))
	set("X402_FACILITATOR", cfg.X402.Facilitator)
	set("X402_LOCAL_KEY", cfg.X402.LocalKey)
	set("X402_NETWORK", cfg.X402.Network)
	set("X402_SOLANA_NETWORK", cfg.X402.SolanaNetwork)
	set("X402_ALLOW_LOCAL_ON_MAIN_NETWORK", strconv.FormatBool(cfg.X402.AllowLocalOnMainNetwork))
	set("X402_TOPUP_USD", cfg.X402.TopUpUSD)
	set("MEDIA_SECRET", cfg.Media.Secret)
	set("MEDIA_BLOB_BACKEND", cfg.Media.Blob.Backend)
	set("MEDIA_BLOB_DIR", cfg.Media.Blob.Dir)
	set("MEDIA_HEARTBEAT_TIMEOUT", cfg.Media.HeartbeatTimeout.String())
	set("RUNS_MODEL_ATTEMPTS", strconv.Itoa(cfg.Runs.ModelAttempts))
	set("RUNS_MODEL_TIMEOUT", cfg.Runs.ModelTimeout.String())
	if cfg.Enclaves.Enabled {
		set("ENCLAVES_ENABLED", "true")
		set("ENCLAVES_DATA_DIR", cfg.Enclaves.DataDir)
		set("ENCLAVES_ATTESTATION_DIR", cfg.Enclaves.AttestationDir)
		set("ENCLAVES_LOG_EVERY", cfg.Enclaves.LogEvery.String())
		set("ENCLAVES_HEARTBEAT_TIMEOUT", cfg.Enclaves.HeartbeatTimeout.String())
	}
	set("LOG_LEVEL", "info")
	set("LOG_FORMAT", "json")
	return out
}

// queues is how many task queues the child polls (renders, and enclaves
// when the harness has them): the SDK logs "Started Worker" once for each.
func queues() int {
	d := worker.Deps{Renders: &activities.Renders{}}
	if env.Config.Enclaves.Enabled {
		d.Enclaves = &activities.Enclaves{}
	}
	return len(worker.Registry(d))
}

// start launches a worker process and waits until it polls every queue.
func (w *workerProc) start() {
	w.t.Helper()
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.cmd != nil {
		w.t.Fatal("a worker process is already running")
	}
	w.starts++
	logPath := filepath.Join(w.logDir, fmt.Sprintf("worker-%02d.log", w.starts))
	logFile, err := os.Create(logPath)
	if err != nil {
		w.t.Fatal(err)
	}
	cmd := exec.Command(bin, "worker")
	cmd.Env = w.env
	// Its own process group: the kill takes the worker's renderer
	// processes (espeak-ng, ffmpeg) with it, as a machine's death would.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		w.t.Fatal(err)
	}
	cmd.Stdout = logFile
	if err := cmd.Start(); err != nil {
		w.t.Fatal(err)
	}
	want := queues()
	ready := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer logFile.Close()
		started := 0
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			fmt.Fprintln(logFile, line)
			if strings.Contains(line, `"msg":"Started Worker"`) {
				if started++; started == want {
					close(ready)
				}
			}
		}
		_ = cmd.Wait()
	}()
	w.cmd, w.done = cmd, done
	select {
	case <-ready:
	case <-done:
		w.cmd = nil
		w.t.Fatalf("the worker process exited before it polled; its log:\n%s", readFile(logPath))
	case <-time.After(60 * time.Second):
		w.t.Fatalf("the worker process did not poll every queue within 60 s; its log:\n%s", readFile(logPath))
	}
}

// kill SIGKILLs the worker process (and its renderers), as a crash does:
// nothing is drained, nothing is told.
func (w *workerProc) kill() {
	w.t.Helper()
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.cmd == nil {
		return
	}
	// The process group this test started for the worker, by its id.
	if err := syscall.Kill(-w.cmd.Process.Pid, syscall.SIGKILL); err != nil {
		w.t.Errorf("killing the worker process %d: %v", w.cmd.Process.Pid, err)
	}
	select {
	case <-w.done:
	case <-time.After(30 * time.Second):
		w.t.Errorf("the worker process %d did not die", w.cmd.Process.Pid)
	}
	w.cmd = nil
}

// stop ends the campaign's last worker (test cleanup).
func (w *workerProc) stop() { w.kill() }

func readFile(path string) string {
	b, _ := os.ReadFile(path)
	return string(b)
}
