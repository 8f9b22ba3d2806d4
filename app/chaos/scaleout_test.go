package chaos_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	mrand "math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/workflowservice/v1"

	"conduit/app/apptest"
	"conduit/frontend"
	"conduit/internal/devstack/pg"
	"conduit/internal/money"
	"conduit/internal/payments"
	"conduit/internal/x402"
	"conduit/workflows"
)

// TestScaleOut is the deployment shape as separate OS processes of the
// production binary: two `conduit frontend` and two `conduit worker`
// against one Temporal server and one PostgreSQL (the harness's). A mixed
// load — invokes across both frontends, chat streams, paid renders and
// credit top-ups — runs while one frontend and then one worker are
// SIGKILLed, the worker while it holds a workflow task. Afterwards: every
// request that got a 2xx ended with its run finished exactly once and its
// money right (checkCampaign, shared with the kill campaign); every
// stream completed with the whole answer or ended with an error event
// (only the killed frontend's streams may be cut); nothing was charged
// twice; and the surviving frontend and worker served everything asked
// after the kills.
func TestScaleOut(t *testing.T) {
	ctx := context.Background()
	rng := mrand.New(mrand.NewPCG(uint64(time.Now().UnixNano()), 7))
	began := time.Now()

	// Only the child processes poll; no in-process API is asked.
	env.StopWorker()
	childEnv := workerEnv(env.Config)
	logDir := t.TempDir()
	workers := make([]*workerProc, 2)
	for i := range workers {
		dir := filepath.Join(logDir, "worker-"+strconv.Itoa(i))
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		workers[i] = &workerProc{t: t, env: childEnv, logDir: dir}
		t.Cleanup(workers[i].stop)
		workers[i].start()
	}
	lb := &balancer{}
	for i := range 2 {
		f := startFrontend(t, childEnv, logDir, i)
		t.Cleanup(f.kill)
		lb.fronts = append(lb.fronts, f)
	}
	const survivor, doomed = 0, 1
	t.Logf("scale-out: 2 frontends (%s, %s) and 2 workers up after %v", lb.fronts[0].url, lb.fronts[1].url, time.Since(began).Round(time.Millisecond))

	acct, key := env.NewAccount(t)
	initial, err := env.Platform.Store.Balance(ctx, acct)
	if err != nil {
		t.Fatal(err)
	}
	chatAcct, chatKey := env.NewAccount(t)
	chatInitial, err := env.Platform.Store.Balance(ctx, chatAcct)
	if err != nil {
		t.Fatal(err)
	}
	since := time.Now()
	fast := createPipelineVia(t, lb.via(survivor), key, echoGraph("Q: {{question}}", "local-echo"))
	slow := createPipelineVia(t, lb.via(doomed), key, echoGraph("Slowly: {{question}}", "local-echo-slow"))
	chat := createPipelineVia(t, lb.via(survivor), chatKey, echoGraph("{{question}}", "local-echo-slow"))
	topUp := challengeVia(t, lb.via(doomed), payments.TopUpPath, nil)
	solOffer := solanaOffer(t, topUp)

	var (
		invokes []*invokeReq
		paid    []*paidReq
		streams []*streamReq
		kills   []kill
		wg      sync.WaitGroup
		n       int
	)
	// invoke sends a pipeline run to frontend pref (its retries go to a
	// live one). Requests to the frontend that will be killed carry an
	// Idempotency-Key: a client that wants exactly once after a lost
	// answer sends one; an unkeyed request's outcome must never be lost.
	invoke := func(pref int, slowly, keyed bool) {
		n++
		r := &invokeReq{pipeline: fast, question: words(rng, 3+rng.IntN(8)), via: lb.via(pref)}
		if slowly {
			r.pipeline, r.slow, r.question = slow, true, words(rng, 30+rng.IntN(40))
		}
		if keyed || pref == doomed {
			r.key = fmt.Sprintf("scaleout-%d-%d", since.UnixNano(), n)
		}
		invokes = append(invokes, r)
		wg.Add(1)
		go func() { defer wg.Done(); runInvoke(t, key, r) }()
	}
	stream := func(pref int) {
		s := &streamReq{front: pref, question: words(rng, 25+rng.IntN(25)), started: time.Now()}
		streams = append(streams, s)
		wg.Add(1)
		go func() { defer wg.Done(); runStream(lb.fronts[pref].url, chatKey, chat, s) }()
	}
	render := func(pref int, round int) {
		body := map[string]any{"text": "Scale-out " + strconv.Itoa(round) + ": " + words(rng, 2+rng.IntN(5)), "async": true}
		p := &paidReq{kind: "render", wallet: newWallet(t, money.USD), minted: money.USD, body: body, via: lb.via(pref)}
		p.header = solPay(t, p.wallet, solanaOffer(t, challengeVia(t, lb.via(pref), frontend.SpeechPath, body)))
		paid = append(paid, p)
		wg.Add(1)
		go func() { defer wg.Done(); runPaid(t, key, p, frontend.SpeechPath) }()
	}
	topup := func(pref int) {
		p := &paidReq{kind: "topup", wallet: newWallet(t, 6*money.USD), minted: 6 * money.USD, bearer: rng.IntN(2) == 0, via: lb.via(pref)}
		p.header = solPay(t, p.wallet, solOffer)
		paid = append(paid, p)
		wg.Add(1)
		go func() { defer wg.Done(); runPaid(t, key, p, payments.TopUpPath) }()
	}

	// Phase 1: everything on both frontends; the doomed frontend is
	// killed while its streams are open.
	for i := range 6 {
		invoke(i%2, i%3 == 0, i%2 == 0 && rng.IntN(2) == 0)
	}
	stream(doomed)
	stream(doomed)
	stream(survivor)
	render(doomed, 1)
	render(survivor, 1)
	topup(doomed)
	topup(survivor)
	apptest.Eventually(t, 60*time.Second, "a stream on the doomed frontend to be under way", func() error {
		for _, s := range streams {
			if s.front == doomed && s.begun() {
				return nil
			}
		}
		return fmt.Errorf("none has begun")
	})
	kills = append(kills, kill{round: 0, after: time.Since(since), open: openWorkflows(t, since)})
	lb.fronts[doomed].kill()
	t.Logf("killed frontend %d with %d workflows open", doomed, kills[0].open)

	// Phase 2: more slow work, then the second worker is killed while it
	// holds a workflow task (a model call runs inside it).
	for i := range 4 {
		invoke(survivor, true, i%2 == 0)
	}
	stream(survivor)
	stream(survivor)
	victim := workers[1]
	identity := strconv.Itoa(victim.cmd.Process.Pid) + "@"
	// Either worker may take any task: keep slow work coming until the
	// victim holds one, so the kill lands on an open workflow.
	held := false
	for deadline := time.Now().Add(90 * time.Second); !held && time.Now().Before(deadline); {
		if held = waitFor(time.Second, func() bool { return holdsTask(t, since, identity) }); !held {
			invoke(survivor, true, rng.IntN(2) == 0)
		}
	}
	if !held {
		t.Logf("worker 1 held no workflow task within 90 s; killing it anyway")
	}
	// Killed first and counted after, so the kill lands while the task
	// found is still held (the kill closes no workflow: the count is the
	// same).
	after := time.Since(since)
	victim.kill()
	killedAt := time.Now()
	kills = append(kills, kill{round: 1, after: after, open: openWorkflows(t, since)})
	t.Logf("killed worker 1 with %d workflows open", kills[1].open)

	// Phase 3: the survivors serve a whole mix on their own.
	for i := range 4 {
		invoke(survivor, i%2 == 1, i%2 == 0)
	}
	stream(survivor)
	render(survivor, 3)
	topup(survivor)

	waited := make(chan struct{})
	go func() { wg.Wait(); close(waited) }()
	select {
	case <-waited:
	case <-time.After(4 * time.Minute):
		t.Fatal("requests still unanswered 4 minutes after the kills")
	}
	apptest.Eventually(t, 3*time.Minute, "every workflow to close", func() error {
		if n := openWorkflows(t, since); n != 0 {
			return fmt.Errorf("%d still open", n)
		}
		return nil
	})
	t.Logf("load drained %v after the worker's kill", time.Since(killedAt).Round(time.Millisecond))

	// Runs, renders, top-ups and the money: exactly once.
	checkCampaign(t, campaign{account: acct, key: key, initial: initial, since: since, invokes: invokes, paid: paid, kills: kills, offer: solOffer})
	checkStreams(t, lb, streams, chatAcct, chatInitial, since)
	// The survivor answers for every run, whichever frontend admitted it.
	for _, a := range []struct{ key, acct string }{{key, acct}, {chatKey, chatAcct}} {
		runs := accountRuns(t, a.acct)
		for _, r := range runs {
			got := mustSendVia(t, lb.via(survivor), "GET", "/api/pipelines/"+r.pipeline+"/invoke?runId="+url.QueryEscape(r.id), nil, http.StatusOK, "Authorization", "Bearer "+a.key)
			if got.json["status"] != r.status {
				t.Errorf("run %s: the surviving frontend says %v, PostgreSQL %s", r.id, got.json["status"], r.status)
			}
		}
	}
	t.Logf("scale-out checked after %v: %d invokes, %d paid requests, %d streams", time.Since(began).Round(time.Millisecond), len(invokes), len(paid), len(streams))
}

// frontendProc is `conduit frontend` as its own OS process.
type frontendProc struct {
	t    *testing.T
	url  string
	log  string
	cmd  *exec.Cmd
	done chan struct{}
	mu   sync.Mutex
	dead bool
}

// startFrontend launches a frontend on a free port, configured like the
// workers, and waits until its readiness (/healthz) answers 200.
func startFrontend(t *testing.T, childEnv []string, logDir string, i int) *frontendProc {
	t.Helper()
	port, err := pg.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	addr := "127.0.0.1:" + strconv.Itoa(port)
	f := &frontendProc{t: t, url: "http://" + addr, log: filepath.Join(logDir, fmt.Sprintf("frontend-%d.log", i)), done: make(chan struct{})}
	logFile, err := os.Create(f.log)
	if err != nil {
		t.Fatal(err)
	}
	f.cmd = exec.Command(bin, "frontend")
	// Every replica has the same public address, as behind one load
	// balancer (payment challenges name it).
	f.cmd.Env = append(slices.Clone(childEnv), "CONDUIT_HTTP_ADDR="+addr, "CONDUIT_X402_RATE_LIMIT="+env.Config.X402.RateLimit)
	f.cmd.Stdout, f.cmd.Stderr = logFile, logFile
	f.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := f.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = f.cmd.Wait(); logFile.Close(); close(f.done) }()
	apptest.Eventually(t, 60*time.Second, "frontend "+strconv.Itoa(i)+" to be ready", func() error {
		select {
		case <-f.done:
			t.Fatalf("frontend %d exited; its log:\n%s", i, readFile(f.log))
		default:
		}
		resp, err := http.Get(f.url + "/healthz")
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("/healthz answers %d", resp.StatusCode)
		}
		return nil
	})
	return f
}

// kill SIGKILLs the frontend's process group (the one this test started).
func (f *frontendProc) kill() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.dead {
		return
	}
	f.dead = true
	if err := syscall.Kill(-f.cmd.Process.Pid, syscall.SIGKILL); err != nil {
		f.t.Errorf("killing frontend %d: %v", f.cmd.Process.Pid, err)
	}
	select {
	case <-f.done:
	case <-time.After(30 * time.Second):
		f.t.Errorf("frontend %d did not die", f.cmd.Process.Pid)
	}
}

func (f *frontendProc) alive() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return !f.dead
}

// balancer sends each attempt to its preferred frontend while that one
// lives, else to a live one: a load balancer's health checking.
type balancer struct{ fronts []*frontendProc }

func (b *balancer) via(pref int) func() string {
	return func() string {
		if b.fronts[pref].alive() {
			return b.fronts[pref].url
		}
		for _, f := range b.fronts {
			if f.alive() {
				return f.url
			}
		}
		return b.fronts[pref].url
	}
}

func mustSendVia(t *testing.T, via func() string, method, path string, body any, want int, headers ...string) *response {
	t.Helper()
	resp, err := sendVia(via, method, path, body, time.Minute, headers...)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	if resp.status != want {
		t.Fatalf("%s %s: %d, want %d: %s", method, path, resp.status, want, resp.body)
	}
	return resp
}

func createPipelineVia(t *testing.T, via func() string, key string, graph any) string {
	t.Helper()
	auth := []string{"Authorization", "Bearer " + key}
	id := mustSendVia(t, via, "POST", "/api/pipelines", map[string]any{"name": "scale-out", "draft": graph}, http.StatusCreated, auth...).json["id"].(string)
	mustSendVia(t, via, "POST", "/api/pipelines/"+id+"/publish", nil, http.StatusOK, auth...)
	return id
}

// challengeVia is challengeFor asked of a frontend process.
func challengeVia(t *testing.T, via func() string, path string, body any) x402.PaymentRequired {
	t.Helper()
	resp := mustSendVia(t, via, "POST", path, body, http.StatusPaymentRequired)
	pr, err := x402.DecodePaymentRequired(resp.header.Get(x402.HeaderPaymentRequired))
	if err != nil {
		t.Fatal(err)
	}
	return pr
}

// streamReq is one streamed chat completion and how it ended.
type streamReq struct {
	front    int
	question string
	started  time.Time

	mu sync.Mutex
	// status is the HTTP status; runID the run the answer named.
	status int
	runID  string
	text   string
	// outcome: "done" ([DONE] after the last chunk), "error-event" (a
	// last {"error": …} event), "refused" (an error answer before the
	// first token) or "cut" (the connection ended without either).
	outcome string
	err     error
	header  bool
}

func (s *streamReq) begun() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.header
}

// runStream reads one streamed chat completion as an OpenAI client does.
func runStream(base, key, pipeline string, s *streamReq) {
	finish := func(outcome string, err error) {
		s.mu.Lock()
		s.outcome, s.err = outcome, err
		s.mu.Unlock()
	}
	body, _ := json.Marshal(map[string]any{"stream": true, "messages": []map[string]string{{"role": "user", "content": s.question}}})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, "POST", base+"/api/pipelines/"+pipeline+"/chat/completions", bytes.NewReader(body))
	if err != nil {
		finish("cut", err)
		return
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := client.Do(req)
	if err != nil {
		finish("cut", err)
		return
	}
	defer resp.Body.Close()
	s.mu.Lock()
	s.status, s.runID, s.header = resp.StatusCode, resp.Header.Get(frontend.HeaderRunID), true
	s.mu.Unlock()
	if resp.StatusCode != http.StatusOK {
		var e map[string]any
		if err := json.NewDecoder(resp.Body).Decode(&e); err != nil || e["error"] == nil {
			finish("cut", fmt.Errorf("%d without an error body: %v", resp.StatusCode, err))
			return
		}
		finish("refused", fmt.Errorf("%d %v", resp.StatusCode, e["error"]))
		return
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		if data == "[DONE]" {
			finish("done", nil)
			return
		}
		var ev struct {
			Error   map[string]any `json:"error"`
			Choices []struct {
				Delta struct {
					Content string `json:"content"`
				} `json:"delta"`
			} `json:"choices"`
		}
		if err := json.Unmarshal([]byte(data), &ev); err != nil {
			finish("cut", fmt.Errorf("an event that is not JSON: %q", data))
			return
		}
		if ev.Error != nil {
			finish("error-event", fmt.Errorf("%v", ev.Error))
			return
		}
		if len(ev.Choices) > 0 {
			s.mu.Lock()
			s.text += ev.Choices[0].Delta.Content
			s.mu.Unlock()
		}
	}
	finish("cut", fmt.Errorf("the stream ended without [DONE] or an error event: %v", sc.Err()))
}

// checkStreams: a stream the surviving frontend served completed with the
// whole answer or ended with an error; only the killed frontend's streams
// may have been cut. Every run of the chat account ended once, charged at
// most once, and the account's balance is its ledger.
func checkStreams(t *testing.T, lb *balancer, streams []*streamReq, account string, initial money.Micros, since time.Time) {
	ctx := context.Background()
	db, err := pgx.Connect(ctx, env.Config.Database.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close(ctx)
	runs := map[string]accountRun{}
	for _, r := range accountRuns(t, account) {
		runs[r.id] = r
	}
	outcomes := map[string]int{}
	for i, s := range streams {
		outcomes[fmt.Sprintf("frontend %d: %s", s.front, s.outcome)]++
		switch s.outcome {
		case "done":
			r, ok := runs[s.runID]
			if !ok || r.status != workflows.StatusSuccess || s.text != s.question {
				t.Errorf("stream %d completed, but its run %q is %+v and it streamed %q for %q", i, s.runID, r, s.text, s.question)
			}
		case "error-event", "refused":
			t.Logf("stream %d (frontend %d) ended with an error: %v", i, s.front, s.err)
		case "cut":
			if s.front == 0 {
				t.Errorf("stream %d on the surviving frontend was cut: %v", i, s.err)
			}
		default:
			t.Errorf("stream %d never ended", i)
		}
	}
	t.Logf("streams: %v", outcomes)

	execs := listExecutions(t, since)
	byWorkflow := map[string][]execution{}
	for _, e := range execs {
		byWorkflow[e.id] = append(byWorkflow[e.id], e)
	}
	var charged money.Micros
	for _, r := range runs {
		if r.status == workflows.StatusRunning {
			t.Errorf("chat run %s is still running", r.id)
			continue
		}
		charged += checkHold(t, ctx, db, "chat run "+r.id, r.hold, r.status == workflows.StatusSuccess, r.cost)
		var ended []string
		for _, e := range byWorkflow[r.workflow] {
			if e.status != enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED {
				t.Errorf("chat run %s: workflow %s closed as %s", r.id, e.id, e.status)
			}
			if e.runStatus != workflows.StatusDuplicate && e.runStatus != workflows.StatusRefused {
				ended = append(ended, e.runStatus)
			}
		}
		if len(ended) > 1 || len(ended) == 1 && ended[0] != r.status {
			t.Errorf("chat run %s (%s) was ended by %d executions: %v", r.id, r.status, len(ended), ended)
		}
	}
	bal, err := env.Platform.Store.Balance(ctx, account)
	if err != nil {
		t.Fatal(err)
	}
	sum, err := env.Platform.Store.LedgerSum(ctx, account)
	if err != nil {
		t.Fatal(err)
	}
	if bal != initial-charged || sum != bal {
		t.Errorf("chat account balance %s (ledger %s), want %s − %s charged", bal, sum, initial, charged)
	}
	// Every stream that got an answer (whole, or an error event after its
	// first token) had a run of its own.
	answered := map[string]bool{}
	for _, s := range streams {
		if s.outcome == "done" || s.outcome == "error-event" {
			answered[s.runID] = true
		}
	}
	for id := range answered {
		if _, ok := runs[id]; !ok {
			t.Errorf("stream run %q is not a run of the chat account", id)
		}
	}
}

// accountRun is one pipeline run as PostgreSQL has it.
type accountRun struct {
	id, pipeline, status, workflow, hold string
	cost                                 money.Micros
}

func accountRuns(t *testing.T, account string) []accountRun {
	t.Helper()
	ctx := context.Background()
	db, err := pgx.Connect(ctx, env.Config.Database.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close(ctx)
	rows, err := db.Query(ctx, `SELECT run_id, pipeline_id, status, workflow_id, hold_id, cost_micros FROM runs WHERE account_id = $1`, account)
	if err != nil {
		t.Fatal(err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (accountRun, error) {
		var x accountRun
		return x, r.Scan(&x.id, &x.pipeline, &x.status, &x.workflow, &x.hold, &x.cost)
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// holdsTask says whether a worker whose identity starts with identity is
// running a workflow task or an activity of an open pipeline run now,
// started moments ago (the SDK's default identity is "<pid>@<host>@"). A
// slow run's model call takes a second or two (inline in its workflow
// task, or an activity), so work found fresh is still held when the kill
// lands; a short task of another
// workflow, or one near its end, would be over by then and leave no trace
// for checkNotVacuous.
func holdsTask(t *testing.T, since time.Time, identity string) bool {
	const fresh = 300 * time.Millisecond
	resp, err := env.Platform.Temporal.ListWorkflow(context.Background(), &workflowservice.ListWorkflowExecutionsRequest{
		Query: "WorkflowType = '" + workflows.WfPipelineRun + "' AND ExecutionStatus = 'Running' AND StartTime > '" + since.UTC().Format(time.RFC3339Nano) + "'", PageSize: 1000,
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range resp.Executions {
		on := false
		it := env.Platform.Temporal.GetWorkflowHistory(context.Background(), e.GetExecution().GetWorkflowId(), e.GetExecution().GetRunId(), false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
		for it.HasNext() {
			ev, err := it.Next()
			if err != nil {
				break
			}
			switch ev.GetEventType() {
			case enumspb.EVENT_TYPE_WORKFLOW_TASK_STARTED:
				on = strings.HasPrefix(ev.GetWorkflowTaskStartedEventAttributes().GetIdentity(), identity) &&
					time.Since(ev.GetEventTime().AsTime()) < fresh
			case enumspb.EVENT_TYPE_WORKFLOW_TASK_COMPLETED, enumspb.EVENT_TYPE_WORKFLOW_TASK_FAILED, enumspb.EVENT_TYPE_WORKFLOW_TASK_TIMED_OUT:
				on = false
			}
		}
		if on {
			return true
		}
		// A model call too long to run inline is an activity of its own.
		d, err := env.Platform.Temporal.DescribeWorkflowExecution(context.Background(), e.GetExecution().GetWorkflowId(), e.GetExecution().GetRunId())
		if err != nil {
			continue
		}
		for _, a := range d.GetPendingActivities() {
			if a.GetState() == enumspb.PENDING_ACTIVITY_STATE_STARTED && strings.HasPrefix(a.GetLastWorkerIdentity(), identity) &&
				time.Since(a.GetLastStartedTime().AsTime()) < fresh {
				return true
			}
		}
	}
	return false
}

// waitFor polls cond every 50 ms for at most within.
func waitFor(within time.Duration, cond func() bool) bool {
	for end := time.Now().Add(within); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
		if cond() {
			return true
		}
	}
	return false
}
