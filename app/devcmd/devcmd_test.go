package devcmd_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"html"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.temporal.io/sdk/client"

	"conduit/internal/codec"
	"conduit/internal/config"
	"conduit/internal/devstack/pg"
	"conduit/workflows"
)

// httpClient gives up on a dev server that accepts but never answers, so a
// wedged start fails the test instead of hanging it.
var httpClient = &http.Client{Timeout: 30 * time.Second}

// bin is the real entry point (`go run . dev` builds the same), built once
// for the package.
var bin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "conduit-bin-")
	if err != nil {
		panic(err)
	}
	bin = filepath.Join(dir, "conduit")
	build := exec.Command("go", "build", "-o", bin, ".")
	build.Dir = "../.."
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "building the dev binary failed: %v\n%s", err, out)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// TestDevCommandEndToEnd builds the real entry point and runs `dev` the way
// a newcomer does: it must come up, answer /healthz and serve the Temporal
// UI, stop cleanly on Ctrl-C (SIGINT) and keep its data for the next start.
func TestDevCommandEndToEnd(t *testing.T) {
	dataDir := filepath.Join(t.TempDir(), "data")
	ports := freePorts(t, 6)
	envVars := append(os.Environ(),
		"CONDUIT_X402_SOLANA_RPC_ADDR=127.0.0.1:"+strconv.Itoa(ports[4]),
		"CONDUIT_DEV_REGISTRY_PORT="+strconv.Itoa(ports[5]),
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
	banner, stop := startDev(t, bin, envVars)
	if code := httpGet(t, api+"/healthz"); code != http.StatusOK {
		t.Fatalf("healthz: %d", code)
	}
	if code := httpGet(t, "http://127.0.0.1:"+strconv.Itoa(ports[3])+"/"); code != http.StatusOK {
		t.Fatalf("Temporal UI: %d", code)
	}
	// Payloads are sealed with the key the dev command keeps; a client
	// reads them with it, as an operator's would.
	cd, err := codec.Parse(readKey(t, filepath.Join(dataDir, "temporal-codec.key")))
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.Dial(client.Options{HostPort: temporalAddr, DataConverter: cd.DataConverter()})
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

	// The dev account's all-scopes key is printed and kept in the data folder.
	devKey := readKey(t, filepath.Join(dataDir, "dev-api-key"))
	if bal := balanceOf(t, api, devKey); bal != "5" {
		t.Fatalf("dev account balance %s, want 5", bal)
	}
	// Operators mint accounts and record packs with the same binary.
	pw := readKey(t, filepath.Join(dataDir, "postgres.password"))
	dbURL := "postgres://conduit:" + pw + "@127.0.0.1:" + strconv.Itoa(ports[1]) + "/conduit?sslmode=disable"
	// Free credit follows a verified email: an account without one gets
	// it only when the operator vouches for it (-verified).
	out := runCLI(t, bin, dbURL, "account", "create", "-name", "ops0")
	m := regexp.MustCompile(`account (acct_[0-9a-f]+) .*\nkey key_[0-9a-f]+: (cnd_\S+)`).FindStringSubmatch(out)
	if m == nil || balanceOf(t, api, m[2]) != "0" {
		t.Fatalf("account create without -verified printed:\n%s", out)
	}
	out = runCLI(t, bin, dbURL, "account", "create", "-name", "ops", "-verified")
	m = regexp.MustCompile(`account (acct_[0-9a-f]+) .*\nkey key_[0-9a-f]+: (cnd_\S+)`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("account create printed:\n%s", out)
	}
	if bal := balanceOf(t, api, m[2]); bal != "5" {
		t.Fatalf("new account balance %s", bal)
	}
	for range 2 {
		runCLI(t, bin, dbURL, "account", "pack", "-account", m[1], "-paid", "50", "-reference", "card-pay-1")
	}
	if bal := balanceOf(t, api, m[2]); bal != "57.5" {
		t.Fatalf("after one pack recorded twice: %s", bal)
	}
	// Enclaves and tasks are on wherever the sandbox runs (the test
	// command installs bubblewrap), with a registry to push to.
	if !strings.Contains(banner, "go run . enclave push app.tar 127.0.0.1:"+strconv.Itoa(ports[5])+"/app:1") {
		t.Errorf("the banner offers no way to push an image:\n%s", banner)
	}
	for _, path := range []string{"/api/enclaves", "/api/tasks"} {
		req, _ := http.NewRequest("GET", api+path, nil)
		req.Header.Set("Authorization", "Bearer "+devKey)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("GET %s under the dev command: %d, want 200", path, resp.StatusCode)
		}
	}
	playNetworks(t, banner, api)
	if want := "Solana RPC    http://127.0.0.1:" + strconv.Itoa(ports[4]); !strings.Contains(banner, want) {
		t.Errorf("the banner does not say %q:\n%s", want, banner)
	}
	// A published pipeline on the built-in local model, to call after the
	// restart.
	pipeline := publishEcho(t, api, devKey)

	// The dev login is printed and kept in the data folder, and signs in.
	devPassword := readKey(t, filepath.Join(dataDir, "dev-login-password"))
	if !strings.Contains(banner, "dev login     dev@conduit.local / "+devPassword) {
		t.Errorf("the banner does not show the dev login:\n%s", banner)
	}
	if !signsIn(t, api, "dev@conduit.local", devPassword) {
		t.Fatal("the dev login does not sign in")
	}
	// account create -email takes the password from the environment or
	// standard input, never a flag.
	out = runCLIWith(t, bin, dbURL, []string{"CONDUIT_ACCOUNT_PASSWORD=ops password from env"}, "", "account", "create", "-name", "ops2", "-email", "Ops2@Example.com", "-verified")
	m = regexp.MustCompile(`key key_[0-9a-f]+: (cnd_\S+)\nlogin login_[0-9a-f]+: ops2@example.com signs in`).FindStringSubmatch(out)
	if m == nil || !signsIn(t, api, "ops2@example.com", "ops password from env") || balanceOf(t, api, m[1]) != "5" {
		t.Fatalf("account create -email -verified (env):\n%s", out)
	}
	// Without -verified the link is mailed (the dev mailbox shows it) and
	// the credit waits for it; the command needs sign-up's secret for that.
	signupEnv := []string{"CONDUIT_SIGNUP_SECRET=" + readKey(t, filepath.Join(dataDir, "signup-secret")), "CONDUIT_MAIL_SENDER=mailbox"}
	out = runCLIWith(t, bin, dbURL, signupEnv, "ops password from stdin\n", "account", "create", "-name", "ops3", "-email", "ops3@example.com")
	m = regexp.MustCompile(`key key_[0-9a-f]+: (cnd_\S+)\n`).FindStringSubmatch(out)
	if m == nil || !signsIn(t, api, "ops3@example.com", "ops password from stdin") || balanceOf(t, api, m[1]) != "0" {
		t.Fatalf("account create -email (stdin):\n%s", out)
	}
	if !strings.Contains(banner, "mailbox       "+api+"/dev/mailbox") {
		t.Errorf("the banner does not show the mailbox:\n%s", banner)
	}
	link := regexp.MustCompile(`href="(http[^"]*/verify-email\?[^"]*ops3%40example.com[^"]*)"`).FindStringSubmatch(get(t, api+"/dev/mailbox"))
	if link == nil {
		t.Fatal("the mailbox shows no link for ops3@example.com")
	}
	u, _ := url.Parse(html.UnescapeString(link[1]))
	if page := get(t, api+u.RequestURI()); !strings.Contains(page, "Email confirmed") || balanceOf(t, api, m[1]) != "5" {
		t.Fatalf("the mailed link: %s", page)
	}
	stop()

	// Second start on the same data folder. #14 item 7: the first workflow
	// task after a restart on existing data used to wait about 48 s for
	// the previous process's Temporal cluster members to be given up on;
	// the first run now finishes within seconds. The bound is generous
	// (a loaded 2-core machine answers in well under a second): it catches
	// the stall, it is not a performance figure. Nothing before this call
	// starts a workflow on this start.
	_, stop = startDev(t, bin, envVars)
	defer stop()
	// The same key, read from the data folder again, still works.
	if again := readKey(t, filepath.Join(dataDir, "dev-api-key")); again != devKey || balanceOf(t, api, devKey) != "5" {
		t.Fatal("the dev key did not survive the restart")
	}
	const question = "Still there after the restart?"
	took, answer := chat(t, api, devKey, pipeline, question)
	t.Logf("the first chat completion after the restart took %s", took.Round(time.Millisecond))
	if took > 15*time.Second {
		t.Fatalf("the first chat completion after the restart took %s (bound 15s): the first workflow task stalled", took)
	}
	if answer != question {
		t.Fatalf("the first chat completion after the restart answered %q, want %q", answer, question)
	}

	// The workflow of the first start is still known.
	c, err = client.Dial(client.Options{HostPort: temporalAddr, DataConverter: cd.DataConverter()})
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
	// The dev login keeps its password across restarts.
	if !signsIn(t, api, "dev@conduit.local", readKey(t, filepath.Join(dataDir, "dev-login-password"))) {
		t.Fatal("the dev login does not sign in after the restart")
	}
	// The Temporal file is in WAL mode: bytes 18 and 19 of an SQLite
	// header are 2 for WAL, 1 for a rollback journal (issue #26).
	f, err := os.Open(filepath.Join(dataDir, "temporal.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	header := make([]byte, 20)
	if _, err := f.ReadAt(header, 0); err != nil {
		t.Fatal(err)
	}
	if string(header[:15]) != "SQLite format 3" || header[18] != 2 || header[19] != 2 {
		t.Fatalf("the dev Temporal file's header is %q: not an SQLite file in WAL mode", header)
	}
}

// publishEcho creates and publishes question → prompt → local-echo →
// answer (frontend's echoGraph) with key and returns the pipeline's id.
func publishEcho(t *testing.T, api, key string) string {
	t.Helper()
	graph := map[string]any{
		"nodes": []map[string]any{
			{"id": "question", "type": "input", "key": "question"},
			{"id": "prompt", "type": "prompt", "template": "{{question}}"},
			{"id": "llm", "type": "model", "model": "local-echo", "prompt": "{{prompt}}", "maxTokens": 400},
			{"id": "answer", "type": "output", "key": "answer", "from": "llm"},
		},
		"edges": []map[string]any{
			{"from": "question", "to": "prompt"}, {"from": "prompt", "to": "llm"}, {"from": "llm", "to": "answer"},
		},
	}
	var created struct{ ID string }
	if code := postJSON(t, httpClient, api+"/api/pipelines", key, map[string]any{"name": "restart", "draft": graph}, &created); code != http.StatusCreated || created.ID == "" {
		t.Fatalf("create pipeline: %d %+v", code, created)
	}
	if code := postJSON(t, httpClient, api+"/api/pipelines/"+created.ID+"/publish", key, nil, nil); code != http.StatusOK {
		t.Fatalf("publish pipeline: %d", code)
	}
	return created.ID
}

// chat asks the pipeline one question through its chat-completions
// endpoint, requires a 200, and returns how long the call took and the
// answer. The client waits up to two minutes, so a stall is measured, not
// cut off.
func chat(t *testing.T, api, key, pipeline, question string) (time.Duration, string) {
	t.Helper()
	var resp struct {
		Choices []struct {
			Message struct{ Content string }
		}
	}
	body := map[string]any{"model": "local-echo", "messages": []map[string]any{{"role": "user", "content": question}}}
	start := time.Now()
	code := postJSON(t, &http.Client{Timeout: 2 * time.Minute}, api+"/api/pipelines/"+pipeline+"/chat/completions", key, body, &resp)
	took := time.Since(start)
	if code != http.StatusOK || len(resp.Choices) != 1 {
		t.Fatalf("chat completion after %s: %d %+v", took, code, resp)
	}
	return took, resp.Choices[0].Message.Content
}

// postJSON posts body as JSON with key and decodes the answer into out
// (when not nil), returning the status.
func postJSON(t *testing.T, hc *http.Client, url, key string, body, out any) int {
	t.Helper()
	var rd io.Reader = http.NoBody
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			t.Fatal(err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(http.MethodPost, url, rd)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatalf("POST %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if out != nil && resp.StatusCode < 300 {
		if err := json.Unmarshal(b, out); err != nil {
			t.Fatalf("POST %s: %d %v: %s", url, resp.StatusCode, err, b)
		}
	}
	if resp.StatusCode >= 300 {
		t.Logf("POST %s: %d %s", url, resp.StatusCode, b)
	}
	return resp.StatusCode
}

// playNetworks: the embedded networks present themselves under the play
// ids, never a main network's, in the banner and in what they sign and
// settle; the dev tools mint play tokens there, and the Go payer pays.
func playNetworks(t *testing.T, banner, api string) {
	t.Helper()
	for _, want := range []string{
		"x402 networks " + config.PlayNetwork + " (play EVM chain, token 0x",
		config.PlaySolanaNetwork + " (play Solana ledger, mint ",
		"x402 mint     POST " + api + "/dev/x402/mint",
	} {
		if !strings.Contains(banner, want) {
			t.Errorf("the banner does not say %q:\n%s", want, banner)
		}
	}
	if strings.Contains(banner, "eip155:8453") || strings.Contains(banner, "solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp") {
		t.Errorf("the banner names a main network:\n%s", banner)
	}
	out := runCLI(t, bin, "", "x402", "mint", "-api", api, "-usd", "6")
	m := regexp.MustCompile(`new wallet (0x[0-9a-fA-F]{40}), key (0x[0-9a-f]{64})`).FindStringSubmatch(out)
	if m == nil || !strings.Contains(out, `"network":"`+config.PlayNetwork+`"`) {
		t.Fatalf("x402 mint printed:\n%s", out)
	}
	out = runCLI(t, bin, "", "x402", "pay", "-url", api+"/api/billing/credits/x402", "-key", m[2])
	if !strings.Contains(out, "status 200") || !regexp.MustCompile(`settled 0x[0-9a-f]{64} on `+config.PlayNetwork+` by `+m[1]).MatchString(out) {
		t.Fatalf("x402 pay printed:\n%s", out)
	}
}

func readKey(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

func balanceOf(t *testing.T, api, key string) string {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, api+"/api/account/balance", nil)
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := httpClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body map[string]json.RawMessage
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil || resp.StatusCode != 200 {
		t.Fatalf("balance: %d %v", resp.StatusCode, err)
	}
	return string(body["balanceUsd"])
}

func runCLI(t *testing.T, bin, dbURL string, args ...string) string {
	t.Helper()
	return runCLIWith(t, bin, dbURL, nil, "", args...)
}

// runCLIWith runs the binary with more environment and standard input.
func runCLIWith(t *testing.T, bin, dbURL string, env []string, stdin string, args ...string) string {
	t.Helper()
	cmd := exec.Command(bin, args...)
	// Only what the test names: never a password from the caller's shell.
	cmd.Env = slices.DeleteFunc(os.Environ(), func(v string) bool { return strings.HasPrefix(v, "CONDUIT_ACCOUNT_PASSWORD=") })
	cmd.Env = append(cmd.Env, env...)
	cmd.Stdin = strings.NewReader(stdin)
	if dbURL != "" {
		cmd.Env = append(cmd.Env, "CONDUIT_DATABASE_URL="+dbURL)
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v: %v\n%s", args, err, out)
	}
	return string(out)
}

// signsIn goes through the sign-in form as a browser would and reports
// whether it ended signed in.
func signsIn(t *testing.T, api, email, password string) bool {
	t.Helper()
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar, Timeout: 30 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.Get(api + "/signin")
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	m := regexp.MustCompile(`name="csrf" value="([^"]+)"`).FindSubmatch(page)
	if m == nil {
		t.Fatalf("sign-in page: %s", page)
	}
	resp, err = c.PostForm(api+"/signin", url.Values{"csrf": {string(m[1])}, "email": {email}, "password": {password}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusSeeOther && strings.Contains(strings.Join(resp.Header.Values("Set-Cookie"), ";"), "conduit_session=")
}

// TestDevCommandRefusesBusyPort: a taken port fails fast with one sentence.
func TestDevCommandRefusesBusyPort(t *testing.T) {
	ports := freePorts(t, 3)
	busy, err := pg.FreePort()
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

func startDev(t *testing.T, bin string, envVars []string) (banner string, stop func()) {
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
	up := make(chan string, 1)
	go func() {
		var printed strings.Builder
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			printed.WriteString(sc.Text() + "\n")
			if strings.Contains(sc.Text(), "Press Ctrl-C") {
				up <- printed.String()
			}
		}
	}()
	go func() { exited <- cmd.Wait() }()
	select {
	case banner = <-up:
	case err := <-exited:
		b, _ := os.ReadFile(stderr.Name())
		t.Fatalf("dev exited before coming up: %v\n%s", err, b)
	case <-time.After(120 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatal("dev did not come up within 120s")
	}
	return banner, func() {
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
	resp, err := httpClient.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// get is a page's body (200 only).
func get(t *testing.T, u string) string {
	t.Helper()
	resp, err := httpClient.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %s", u, resp.StatusCode, b)
	}
	return string(b)
}
