package frontend_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"

	"conduit/app"
	"conduit/app/apptest"
	"conduit/internal/codec"
	"conduit/internal/tasks"
)

// The tasks' enclave: one DEPLOYED enclave of one account, shared by the
// tests that do not move the enclave itself.
var (
	taskEnclaveOnce sync.Once
	taskKey         string
	taskEnclave     string
)

func sharedEnclave(t *testing.T) (key, enclaveID string) {
	t.Helper()
	taskEnclaveOnce.Do(func() {
		ref := env.PushEnclaveApp(t, "tasks/app", "v1")
		_, taskKey = env.NewAccount(t)
		created := wantStatus(t, do(t, "POST", "/api/enclaves", taskKey, enclaveBody(ref)), http.StatusAccepted)
		taskEnclave = created["id"].(string)
		waitEnclave(t, taskKey, taskEnclave, "DEPLOYED", 2*time.Minute)
	})
	if taskEnclave == "" {
		t.Fatal("the tasks' enclave could not be deployed (see the first test that asked for it)")
	}
	return taskKey, taskEnclave
}

func taskBody(enclaveID, schedule, path string) map[string]any {
	return map[string]any{"name": "tick " + path, "description": "calls " + path, "enclaveId": enclaveID, "schedule": schedule,
		"request": map[string]any{"method": "GET", "path": path, "timeoutSeconds": 5}}
}

// waitRuns waits until the number of the task's recorded runs is ok.
func waitRuns(t *testing.T, within time.Duration, key, id, what string, ok func(n int) bool) {
	t.Helper()
	apptest.Eventually(t, within, what, func() error {
		if rs := runs(t, key, id); !ok(len(rs)) {
			return fmt.Errorf("%d runs: %v", len(rs), rs)
		}
		return nil
	})
}

// waitTaskStatus waits until the task's status is want.
func waitTaskStatus(t *testing.T, within time.Duration, key, id, want string) {
	t.Helper()
	apptest.Eventually(t, within, "task "+id+" to be "+want, func() error {
		if g := getTask(t, key, id); g["status"] != want {
			return fmt.Errorf("task %v", g)
		}
		return nil
	})
}

// whileAnotherFires creates a witness task on enclave enc firing every
// second and waits until n of its runs were scheduled after since: proof
// that the scheduler kept firing meanwhile, however busy the machine. A
// test that says "nothing fired" says it over that span.
func whileAnotherFires(t *testing.T, key, enc string, since time.Time, n int) {
	t.Helper()
	id := wantStatus(t, do(t, "POST", "/api/tasks", key, taskBody(enc, "@every 1s", "/witness")), http.StatusCreated)["id"].(string)
	defer do(t, "DELETE", "/api/tasks/"+id, key, nil)
	apptest.Eventually(t, time.Minute, fmt.Sprintf("%d firings of a witness task", n), func() error {
		if got := runsAfter(t, key, id, since, ""); got < n {
			return fmt.Errorf("%d firings", got)
		}
		return nil
	})
}

func getTask(t *testing.T, key, id string) map[string]any {
	t.Helper()
	return wantStatus(t, do(t, "GET", "/api/tasks/"+id, key, nil), http.StatusOK)
}

func runs(t *testing.T, key, id string) []map[string]any {
	t.Helper()
	b := wantStatus(t, do(t, "GET", "/api/tasks/"+id+"/runs?limit=500", key, nil), http.StatusOK)
	var out []map[string]any
	for _, r := range b["runs"].([]any) {
		out = append(out, r.(map[string]any))
	}
	return out
}

// runsAfter counts the runs whose scheduled time is after at.
func runsAfter(t *testing.T, key, id string, at time.Time, outcome string) int {
	t.Helper()
	n := 0
	for _, r := range runs(t, key, id) {
		st, err := time.Parse(time.RFC3339, r["scheduledTime"].(string))
		if err != nil {
			t.Fatal(err)
		}
		if st.After(at) && (outcome == "" || r["outcome"] == outcome) {
			n++
		}
	}
	return n
}

func describe(t *testing.T, id string) *client.ScheduleDescription {
	t.Helper()
	d, err := env.Platform.Temporal.ScheduleClient().GetHandle(context.Background(), tasks.ScheduleID(id)).Describe(context.Background())
	if err != nil {
		t.Fatalf("describe task/%s: %v", id, err)
	}
	return d
}

func memoString(t *testing.T, d *client.ScheduleDescription, field string) string {
	t.Helper()
	cd, err := codec.Parse(env.Config.Temporal.CodecKeys)
	if err != nil {
		t.Fatal(err)
	}
	p := d.Memo.GetFields()[field]
	if p == nil {
		t.Fatalf("the schedule's memo has no %s: %v", field, d.Memo)
	}
	var s string
	if err := cd.DataConverter().FromPayload(p, &s); err != nil {
		t.Fatal(err)
	}
	return s
}

func TestTaskFiresStopsResumesAndDeletes(t *testing.T) {
	key, enc := sharedEnclave(t)
	created := wantStatus(t, do(t, "POST", "/api/tasks", key, taskBody(enc, "@every 1s", "/tick")), http.StatusCreated)
	id := created["id"].(string)
	if created["status"] != "running" || created["scheduleId"] != "task/"+id || created["enclaveId"] != enc ||
		created["walletAddress"] == nil || len(created["nextRuns"].([]any)) == 0 || created["lastRun"] != nil {
		t.Fatalf("created: %v", created)
	}

	// The schedule is visible through the Temporal API, with the task's
	// name in its memo, active, on an interval of a second.
	d := describe(t, id)
	if memoString(t, d, "taskName") != "tick /tick" || d.Schedule.State.Paused || len(d.Schedule.Spec.Intervals) != 1 || d.Schedule.Spec.Intervals[0].Every != time.Second {
		t.Fatalf("schedule: paused %v spec %+v", d.Schedule.State.Paused, d.Schedule.Spec)
	}

	// It fires: lastRun and the runs list update, the enclave's lambda
	// log has the runs.
	waitRuns(t, 30*time.Second, key, id, "two runs", func(n int) bool { return n >= 2 })
	got := getTask(t, key, id)
	last := got["lastRun"].(map[string]any)
	if last["outcome"] != "success" || last["result"] != "hello from the enclave" || last["httpStatus"] != float64(200) || got["consecutiveFailures"] != float64(0) {
		t.Fatalf("lastRun: %v", got)
	}
	r := runs(t, key, id)[0]
	if !strings.HasPrefix(r["id"].(string), "task-run/"+id+"-") || r["outcome"] != "success" {
		t.Fatalf("run: %v", r)
	}
	logs := wantStatus(t, do(t, "GET", "/api/enclaves/"+enc+"/logs?logType=lambda", key, nil), http.StatusOK)
	if text := fmt.Sprint(logs["logs"]); !strings.Contains(text, id) || !strings.Contains(text, "success, HTTP 200") {
		t.Fatalf("lambda logs: %s", text)
	}

	// Stopped: the schedule pauses, and nothing fires after it.
	stopped := wantStatus(t, do(t, "PATCH", "/api/tasks/"+id, key, map[string]any{"status": "stopped"}), http.StatusOK)
	stopAt := time.Now()
	if stopped["status"] != "stopped" || len(stopped["nextRuns"].([]any)) != 0 || !describe(t, id).Schedule.State.Paused {
		t.Fatalf("stopped: %v", stopped)
	}
	whileAnotherFires(t, key, enc, stopAt.Add(time.Second), 4)
	if n := runsAfter(t, key, id, stopAt.Add(time.Second), ""); n != 0 {
		t.Fatalf("%d runs fired after the task was stopped", n)
	}

	// Run now fires a stopped task once.
	before := len(runs(t, key, id))
	wantStatus(t, do(t, "POST", "/api/tasks/"+id+"/run", key, nil), http.StatusAccepted)
	waitRuns(t, 20*time.Second, key, id, "the triggered run", func(n int) bool { return n == before+1 })

	// Running again: firings resume.
	resumed := wantStatus(t, do(t, "PATCH", "/api/tasks/"+id, key, map[string]any{"status": "running"}), http.StatusOK)
	resumeAt := time.Now()
	if resumed["status"] != "running" || describe(t, id).Schedule.State.Paused {
		t.Fatalf("resumed: %v", resumed)
	}
	apptest.Eventually(t, 20*time.Second, "two runs after resuming", func() error {
		if n := runsAfter(t, key, id, resumeAt, "success"); n < 2 {
			return fmt.Errorf("%d successful runs after resuming", n)
		}
		return nil
	})

	// A cron update changes the schedule in place, time zone included.
	upd := wantStatus(t, do(t, "PATCH", "/api/tasks/"+id, key, map[string]any{"schedule": "*/5 * * * *", "timezone": "Asia/Kolkata"}), http.StatusOK)
	d = describe(t, id)
	if upd["schedule"] != "*/5 * * * *" || upd["timezone"] != "Asia/Kolkata" || d.Schedule.Spec.TimeZoneName != "Asia/Kolkata" ||
		len(d.Schedule.Spec.Intervals) != 0 || len(d.Schedule.Spec.Calendars)+len(d.Schedule.Spec.CronExpressions) == 0 || d.Schedule.State.Paused {
		t.Fatalf("updated: %v; spec %+v", upd, d.Schedule.Spec)
	}
	next := upd["nextRuns"].([]any)
	if len(next) != tasks.NextRuns {
		t.Fatalf("next runs: %v", next)
	}
	kolkata, _ := time.LoadLocation("Asia/Kolkata")
	for _, n := range next {
		at, _ := time.Parse(time.RFC3339, n.(string))
		if at.In(kolkata).Minute()%5 != 0 || at.Second() != 0 {
			t.Fatalf("next run %s is not on the cron spec", n)
		}
	}

	// Delete removes the schedule; the runs stay readable.
	wantStatus(t, do(t, "DELETE", "/api/tasks/"+id, key, nil), http.StatusNoContent)
	_, err := env.Platform.Temporal.ScheduleClient().GetHandle(context.Background(), tasks.ScheduleID(id)).Describe(context.Background())
	var nf *serviceerror.NotFound
	if !errors.As(err, &nf) {
		t.Fatalf("the schedule after delete: %v", err)
	}
	wantStatus(t, do(t, "GET", "/api/tasks/"+id, key, nil), http.StatusNotFound)
	if b := wantStatus(t, do(t, "GET", "/api/tasks/"+id+"/runs", key, nil), http.StatusOK); b["deleted"] != true || len(b["runs"].([]any)) < 4 {
		t.Fatalf("runs after delete: %v", b)
	}
}

func TestTaskFailsAfterThreshold(t *testing.T) {
	key, enc := sharedEnclave(t)
	body := taskBody(enc, "@every 1s", "/status/500")
	body["failureThreshold"] = 2
	id := wantStatus(t, do(t, "POST", "/api/tasks", key, body), http.StatusCreated)["id"].(string)
	t.Cleanup(func() { do(t, "DELETE", "/api/tasks/"+id, key, nil) })

	waitTaskStatus(t, 30*time.Second, key, id, "failed")
	got := getTask(t, key, id)
	last := got["lastRun"].(map[string]any)
	if got["consecutiveFailures"] != float64(2) || last["outcome"] != "failure" || last["httpStatus"] != float64(500) ||
		!strings.Contains(got["statusReason"].(string), "2 consecutive failed runs") ||
		// The application saw the run's id header.
		last["result"] != "status 500 for run "+last["runId"].(string) || !strings.HasPrefix(last["runId"].(string), "task-run/"+id+"-") {
		t.Fatalf("failed: %v", got)
	}
	d := describe(t, id)
	if !d.Schedule.State.Paused || !strings.Contains(d.Schedule.State.Note, "consecutive failed runs") {
		t.Fatalf("schedule state: %+v", d.Schedule.State)
	}
	// The schedule stays paused: no more failures are counted.
	whileAnotherFires(t, key, enc, time.Now(), 3)
	if g := getTask(t, key, id); g["consecutiveFailures"] != float64(2) || g["status"] != "failed" {
		t.Fatalf("after failing: %v", g)
	}
	logs := wantStatus(t, do(t, "GET", "/api/enclaves/"+enc+"/logs?logType=errors", key, nil), http.StatusOK)
	if text := fmt.Sprint(logs["logs"]); !strings.Contains(text, id) || !strings.Contains(text, "failure, HTTP 500") {
		t.Fatalf("errors logs: %s", text)
	}

	// Fixing the request and setting running resumes with a fresh count.
	fixed := wantStatus(t, do(t, "PATCH", "/api/tasks/"+id, key, map[string]any{"status": "running",
		"request": map[string]any{"method": "GET", "path": "/status/204"}}), http.StatusOK)
	if fixed["status"] != "running" || fixed["consecutiveFailures"] != float64(0) || fixed["statusReason"] != nil {
		t.Fatalf("fixed: %v", fixed)
	}
	apptest.Eventually(t, 20*time.Second, "a successful run of the fixed request", func() error {
		g := getTask(t, key, id)
		if l, _ := g["lastRun"].(map[string]any); l == nil || l["outcome"] != "success" || l["httpStatus"] != float64(204) {
			return fmt.Errorf("task %v", g)
		}
		return nil
	})
}

func TestTaskTimeout(t *testing.T) {
	key, enc := sharedEnclave(t)
	body := taskBody(enc, "@hourly", "/status/200?sleep=3000")
	body["request"].(map[string]any)["timeoutSeconds"] = 1
	body["status"] = "stopped"
	id := wantStatus(t, do(t, "POST", "/api/tasks", key, body), http.StatusCreated)["id"].(string)
	t.Cleanup(func() { do(t, "DELETE", "/api/tasks/"+id, key, nil) })
	wantStatus(t, do(t, "POST", "/api/tasks/"+id+"/run", key, nil), http.StatusAccepted)
	waitRuns(t, 20*time.Second, key, id, "the run", func(n int) bool { return n == 1 })
	if r := runs(t, key, id)[0]; r["outcome"] != "timeout" || !strings.Contains(r["result"].(string), "within 1s") {
		t.Fatalf("run: %v", r)
	}
	if g := getTask(t, key, id); g["consecutiveFailures"] != float64(1) || g["status"] != "stopped" {
		t.Fatalf("task: %v", g)
	}
}

func TestTaskPendingFollowsTheEnclave(t *testing.T) {
	ref := env.PushEnclaveApp(t, "tasks/pending", "v1")
	// The enclave pulls through a gate that holds its image until the
	// test opens it: until then it cannot reach DEPLOYED.
	gate := make(chan struct{})
	open := sync.OnceFunc(func() { close(gate) })
	t.Cleanup(open)
	upstream := &url.URL{Scheme: "http", Host: env.Registry}
	proxy := httputil.NewSingleHostReverseProxy(upstream)
	held := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.Contains(r.URL.Path, "/manifests/") {
			select {
			case <-gate:
			case <-r.Context().Done():
				return
			}
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(held.Close)
	ref = strings.Replace(ref, env.Registry, strings.TrimPrefix(held.URL, "http://"), 1)
	_, key := env.NewAccount(t)
	enc := wantStatus(t, do(t, "POST", "/api/enclaves", key, enclaveBody(ref)), http.StatusAccepted)["id"].(string)
	created := wantStatus(t, do(t, "POST", "/api/tasks", key, taskBody(enc, "@every 1s", "/pending")), http.StatusCreated)
	id := created["id"].(string)
	if created["status"] != "pending" || !strings.Contains(created["statusReason"].(string), "DEPLOYED") || !describe(t, id).Schedule.State.Paused {
		t.Fatalf("created before the enclave deployed: %v", created)
	}
	if b := wantStatus(t, do(t, "POST", "/api/tasks/"+id+"/run", key, nil), http.StatusConflict); b["status"] != "pending" {
		t.Fatalf("run while pending: %v", b)
	}

	// The enclave deploys: the task runs.
	open()
	waitEnclave(t, key, enc, "DEPLOYED", 2*time.Minute)
	waitTaskStatus(t, 30*time.Second, key, id, "running")
	// The sync moves the record, then unpauses the schedule: seen between
	// the two steps the schedule may still be paused for a moment.
	apptest.Eventually(t, 10*time.Second, "the schedule of the running task to be unpaused", func() error {
		if describe(t, id).Schedule.State.Paused {
			return fmt.Errorf("the schedule of a running task is paused")
		}
		return nil
	})
	waitRuns(t, 20*time.Second, key, id, "a run after deploying", func(n int) bool { return n > 0 })

	// Pausing the enclave holds the task; resuming it lets it run again.
	wantStatus(t, do(t, "POST", "/api/enclaves/"+enc+"/pause", key, nil), http.StatusOK)
	g := getTask(t, key, id)
	if g["status"] != "pending" || !strings.Contains(g["statusReason"].(string), "PAUSED") || !describe(t, id).Schedule.State.Paused {
		t.Fatalf("after the enclave paused: %v", g)
	}
	wantStatus(t, do(t, "POST", "/api/enclaves/"+enc+"/resume", key, nil), http.StatusOK)
	if g := getTask(t, key, id); g["status"] != "running" || describe(t, id).Schedule.State.Paused {
		t.Fatalf("after the enclave resumed: %v", g)
	}

	// A stopped task stays stopped through the enclave's moves.
	wantStatus(t, do(t, "PATCH", "/api/tasks/"+id, key, map[string]any{"status": "stopped"}), http.StatusOK)
	wantStatus(t, do(t, "POST", "/api/enclaves/"+enc+"/pause", key, nil), http.StatusOK)
	wantStatus(t, do(t, "POST", "/api/enclaves/"+enc+"/resume", key, nil), http.StatusOK)
	if g := getTask(t, key, id); g["status"] != "stopped" || !describe(t, id).Schedule.State.Paused {
		t.Fatalf("a stopped task moved with its enclave: %v", g)
	}
	wantStatus(t, do(t, "PATCH", "/api/tasks/"+id, key, map[string]any{"status": "running"}), http.StatusOK)

	// Destroyed: pending for good; running is refused, creating too.
	wantStatus(t, do(t, "POST", "/api/enclaves/"+enc+"/terminate", key, nil), http.StatusOK)
	g = getTask(t, key, id)
	if g["status"] != "pending" || !strings.Contains(g["statusReason"].(string), "DESTROYED") || !describe(t, id).Schedule.State.Paused {
		t.Fatalf("after the enclave was destroyed: %v", g)
	}
	wantStatus(t, do(t, "PATCH", "/api/tasks/"+id, key, map[string]any{"status": "stopped"}), http.StatusOK)
	if b := wantStatus(t, do(t, "PATCH", "/api/tasks/"+id, key, map[string]any{"status": "running"}), http.StatusConflict); !strings.Contains(b["error"].(string), "DESTROYED") {
		t.Fatalf("running on a destroyed enclave: %v", b)
	}
	wantStatus(t, do(t, "POST", "/api/tasks", key, taskBody(enc, "@daily", "/")), http.StatusConflict)
}

func TestTaskRefusals(t *testing.T) {
	key, enc := sharedEnclave(t)
	_, other := env.NewAccount(t)
	_, reader := env.NewAccount(t, "tasks:read")

	// Bad input is a 400 naming the field, and creates nothing.
	for field, body := range map[string]map[string]any{
		"schedule":     taskBody(enc, "*/5 * * *", "/"),
		"timezone":     func() map[string]any { b := taskBody(enc, "@daily", "/"); b["timezone"] = "Mars/Olympus"; return b }(),
		"request.path": taskBody(enc, "@daily", "http://example.com/"),
		"enclaveId":    taskBody("enc_0000000000000000", "@daily", "/"),
	} {
		b := wantStatus(t, do(t, "POST", "/api/tasks", key, body), http.StatusBadRequest)
		p := b["problems"].([]any)[0].(map[string]any)
		if p["field"] != field || !strings.Contains(b["error"].(string), field+": ") {
			t.Errorf("%s: %v", field, b)
		}
	}
	// Another account's enclave is not one to schedule on.
	if b := wantStatus(t, do(t, "POST", "/api/tasks", other, taskBody(enc, "@daily", "/")), http.StatusBadRequest); !strings.Contains(b["error"].(string), "enclaveId") {
		t.Fatalf("another account's enclave: %v", b)
	}
	if l := wantStatus(t, do(t, "GET", "/api/tasks", other, nil), http.StatusOK); len(l["tasks"].([]any)) != 0 {
		t.Fatalf("another account lists %v", l)
	}

	body := taskBody(enc, "@daily", "/")
	body["status"] = "stopped"
	id := wantStatus(t, do(t, "POST", "/api/tasks", key, body), http.StatusCreated)["id"].(string)
	t.Cleanup(func() { do(t, "DELETE", "/api/tasks/"+id, key, nil) })

	// Another account's task does not exist for it.
	for _, c := range []struct{ method, path string }{{"GET", ""}, {"PATCH", ""}, {"DELETE", ""}, {"POST", "/run"}, {"GET", "/runs"}} {
		wantStatus(t, do(t, c.method, "/api/tasks/"+id+c.path, other, map[string]any{"status": "running"}), http.StatusNotFound)
	}
	// A read-only key reads, and changes nothing.
	wantStatus(t, do(t, "GET", "/api/tasks", reader, nil), http.StatusOK)
	wantStatus(t, do(t, "POST", "/api/tasks", reader, body), http.StatusForbidden)
	// Bad patches change nothing.
	wantStatus(t, do(t, "PATCH", "/api/tasks/"+id, key, map[string]any{"status": "failed"}), http.StatusBadRequest)
	wantStatus(t, do(t, "PATCH", "/api/tasks/"+id, key, map[string]any{"schedule": "@sometimes"}), http.StatusBadRequest)
	if g := getTask(t, key, id); g["status"] != "stopped" || g["schedule"] != "@daily" {
		t.Fatalf("after refused patches: %v", g)
	}
	// A schedule deleted behind the record's back (in the Temporal UI)
	// is made again from the record on the next change.
	h := env.Platform.Temporal.ScheduleClient().GetHandle(context.Background(), tasks.ScheduleID(id))
	if err := h.Delete(context.Background()); err != nil {
		t.Fatal(err)
	}
	wantStatus(t, do(t, "PATCH", "/api/tasks/"+id, key, map[string]any{"description": "made again"}), http.StatusOK)
	if d := describe(t, id); !d.Schedule.State.Paused || memoString(t, d, "taskId") != id {
		t.Fatalf("the schedule made again: %+v", d.Schedule.State)
	}
	// Filters.
	l := wantStatus(t, do(t, "GET", "/api/tasks?status=stopped&enclaveId="+enc, key, nil), http.StatusOK)
	found := false
	for _, x := range l["tasks"].([]any) {
		found = found || x.(map[string]any)["id"] == id
		if x.(map[string]any)["status"] != "stopped" {
			t.Fatalf("filter: %v", x)
		}
	}
	if !found {
		t.Fatalf("the filtered list misses %s: %v", id, l)
	}
	wantStatus(t, do(t, "GET", "/api/tasks?status=sleeping", key, nil), http.StatusBadRequest)
}

func TestTaskBackfillCommand(t *testing.T) {
	key, enc := sharedEnclave(t)
	body := taskBody(enc, "0 * * * *", "/backfilled")
	body["status"] = "stopped"
	id := wantStatus(t, do(t, "POST", "/api/tasks", key, body), http.StatusCreated)["id"].(string)
	t.Cleanup(func() { do(t, "DELETE", "/api/tasks/"+id, key, nil) })

	// Three hours of an hourly task, run now, one after another.
	to := time.Now().UTC().Truncate(time.Hour)
	from := to.Add(-3 * time.Hour)
	var out bytes.Buffer
	cmdEnv := &app.Env{Config: env.Config, Log: env.Platform.Log, Stdout: &out}
	err := app.RunTaskCommand(context.Background(), env.Platform.Schedules(), cmdEnv,
		[]string{"backfill", id, "-from", from.Format(time.RFC3339), "-to", to.Format(time.RFC3339)})
	if err != nil || !strings.Contains(out.String(), "are started") {
		t.Fatalf("backfill: %v %s", err, out.String())
	}
	waitRuns(t, 30*time.Second, key, id, "the three backfilled runs", func(n int) bool { return n == 3 })
	seen := map[string]bool{}
	for _, r := range runs(t, key, id) {
		seen[r["scheduledTime"].(string)] = r["outcome"] == "success"
	}
	for h := from; h.Before(to); h = h.Add(time.Hour) {
		if !seen[h.Format(time.RFC3339)] {
			t.Fatalf("no successful run scheduled at %s: %v", h, seen)
		}
	}
	// trigger fires it once more, now.
	out.Reset()
	if err := app.RunTaskCommand(context.Background(), env.Platform.Schedules(), cmdEnv, []string{"trigger", id}); err != nil || !strings.Contains(out.String(), "triggered") {
		t.Fatalf("trigger: %v %s", err, out.String())
	}
	waitRuns(t, 30*time.Second, key, id, "the triggered run", func(n int) bool { return n == 4 })
	if err := app.RunTaskCommand(context.Background(), env.Platform.Schedules(), cmdEnv, []string{"trigger", "task_0000000000000000"}); err == nil || !strings.Contains(err.Error(), "does not exist") {
		t.Fatalf("trigger of a missing task: %v", err)
	}
	// The id comes first; a missing one is a sentence.
	if err := app.RunTaskCommand(context.Background(), env.Platform.Schedules(), cmdEnv, []string{"backfill", "-from", "x"}); err == nil || !strings.Contains(err.Error(), "task id first") {
		t.Fatalf("no id: %v", err)
	}
}

// A firing is a durable workflow: one that starts while no worker runs
// is carried out once a worker is back.
func TestTaskRunWaitsForTheWorker(t *testing.T) {
	key, enc := sharedEnclave(t)
	body := taskBody(enc, "@hourly", "/durable")
	body["status"] = "stopped"
	id := wantStatus(t, do(t, "POST", "/api/tasks", key, body), http.StatusCreated)["id"].(string)
	t.Cleanup(func() { do(t, "DELETE", "/api/tasks/"+id, key, nil) })

	env.StopWorker()
	t.Cleanup(func() { _ = env.StartWorker() })
	wantStatus(t, do(t, "POST", "/api/tasks/"+id+"/run", key, nil), http.StatusAccepted)
	// The run exists in Temporal, waiting for a worker.
	var wfID string
	apptest.Eventually(t, 20*time.Second, "the triggered run to start", func() error {
		d := describe(t, id)
		if len(d.Info.RunningWorkflows) != 1 {
			return fmt.Errorf("%d running workflows", len(d.Info.RunningWorkflows))
		}
		wfID = d.Info.RunningWorkflows[0].WorkflowID
		return nil
	})
	if !strings.HasPrefix(wfID, "task-run/"+id+"-") {
		t.Fatalf("the run's workflow id is %q", wfID)
	}
	if n := len(runs(t, key, id)); n != 0 {
		t.Fatalf("%d runs recorded without a worker", n)
	}
	if err := env.StartWorker(); err != nil {
		t.Fatal(err)
	}
	waitRuns(t, 30*time.Second, key, id, "a run after the worker came back", func(n int) bool { return n == 1 })
	if r := runs(t, key, id)[0]; r["id"] != wfID || r["outcome"] != "success" {
		t.Fatalf("run: %v", r)
	}
}

// Overlap skip (the default): a firing while the previous run still runs
// starts nothing, so runs never overlap.
func TestTaskRunsDoNotOverlap(t *testing.T) {
	key, enc := sharedEnclave(t)
	id := wantStatus(t, do(t, "POST", "/api/tasks", key, taskBody(enc, "@every 1s", "/status/200?sleep=2200")), http.StatusCreated)["id"].(string)
	t.Cleanup(func() { do(t, "DELETE", "/api/tasks/"+id, key, nil) })
	waitRuns(t, 40*time.Second, key, id, "three runs", func(n int) bool { return n >= 3 })
	wantStatus(t, do(t, "PATCH", "/api/tasks/"+id, key, map[string]any{"status": "stopped"}), http.StatusOK)
	rs := runs(t, key, id) // newest first
	for i := 0; i+1 < len(rs); i++ {
		newer, older := rs[i], rs[i+1]
		ns, _ := time.Parse(time.RFC3339Nano, newer["startedAt"].(string))
		os, _ := time.Parse(time.RFC3339Nano, older["startedAt"].(string))
		if end := os.Add(time.Duration(older["durationMs"].(float64)) * time.Millisecond); ns.Before(end) {
			t.Fatalf("run %s started at %s, before %s ended at %s", newer["id"], ns, older["id"], end)
		}
		if older["outcome"] != "success" || older["durationMs"].(float64) < 2200 {
			t.Fatalf("run: %v", older)
		}
	}
}
