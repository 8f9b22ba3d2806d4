package frontend_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"

	"conduit/app/apptest"
	"conduit/workflows"
)

// flakyRegistry is a registry that can be broken: a proxy in front of the
// harness's that answers 503 while down, counting what it refused.
type flakyRegistry struct {
	*httptest.Server
	down    atomic.Bool
	refused atomic.Int64
}

func newFlakyRegistry(t *testing.T, host string) *flakyRegistry {
	t.Helper()
	f := &flakyRegistry{}
	proxy := httputil.NewSingleHostReverseProxy(&url.URL{Scheme: "http", Host: host})
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if f.down.Load() {
			f.refused.Add(1)
			http.Error(w, "registry under maintenance", http.StatusServiceUnavailable)
			return
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(f.Close)
	return f
}

func (f *flakyRegistry) host() string { return strings.TrimPrefix(f.URL, "http://") }

func admin(t *testing.T, method, path string) *apptest.Response {
	t.Helper()
	return env.Do(t, method, path, nil, apptest.Bearer(apptest.AdminToken)...)
}

// The SRE runbook (docs/operations.md), as tested: the registry breaks, the
// deployment sticks in DEPLOYING with its last failure on the record and
// in Temporal; stuck lists it; the registry is fixed; resume retries at
// once (long before the next scheduled attempt) → DEPLOYED, the same
// enclave, one image, one deployment.
func TestEnclaveStuckDeploymentIsResumed(t *testing.T) {
	env.RequireEnclaves(t)
	productionBinary(t) // built before the clock below matters
	reg := newFlakyRegistry(t, env.Registry)
	env.PushEnclaveApp(t, "stuck/echo", "v1")
	ref := reg.host() + "/stuck/echo:v1"
	_, key := env.NewAccount(t)

	reg.down.Store(true)
	id := wantStatus(t, do(t, "POST", "/api/enclaves", key, enclaveBody(ref)), http.StatusAccepted)["id"].(string)

	// It keeps DEPLOYING, and says why.
	var rec map[string]any
	apptest.Eventually(t, time.Minute, "a third failed attempt on the record", func() error {
		rec = wantStatus(t, do(t, "GET", "/api/enclaves/"+id, key, nil), http.StatusOK)
		if lf, _ := rec["lastFailure"].(map[string]any); lf == nil || lf["attempt"].(float64) < 3 {
			return fmt.Errorf("record %v", rec)
		}
		return nil
	})
	if rec["status"] != "DEPLOYING" || rec["error_message"] != nil || !strings.Contains(rec["lastFailure"].(map[string]any)["message"].(string), "503") {
		t.Fatalf("stuck record: %v", rec)
	}

	// The operator finds it: the admin route needs its token, and lists the
	// enclave with its pending step and next attempt.
	if r := env.Do(t, "GET", "/admin/enclaves/stuck?for=0s", nil, apptest.Bearer(key)...); r.Status != http.StatusUnauthorized {
		t.Fatalf("an account key on the admin route: %d %s", r.Status, r.Body)
	}
	wantStatus(t, admin(t, "GET", "/admin/enclaves/stuck?for=forever"), http.StatusBadRequest)
	var stuck map[string]any
	apptest.Eventually(t, 30*time.Second, id+" listed as stuck", func() error {
		list := wantStatus(t, admin(t, "GET", "/admin/enclaves/stuck?for=0s"), http.StatusOK)["enclaves"].([]any)
		for _, e := range list {
			if e := e.(map[string]any); e["id"] == id && e["step"] == workflows.ActEnclavePrepare && e["attempt"].(float64) >= 3 {
				stuck = e
				return nil
			}
		}
		return fmt.Errorf("list %v", list)
	})
	if stuck["status"] != "DEPLOYING" || !strings.Contains(stuck["lastFailure"].(string), "503") {
		t.Fatalf("stuck entry: %v", stuck)
	}
	// Listed with an hour's threshold, it is not stuck yet.
	for _, e := range wantStatus(t, admin(t, "GET", "/admin/enclaves/stuck?for=1h"), http.StatusOK)["enclaves"].([]any) {
		if e.(map[string]any)["id"] == id {
			t.Fatal("listed as stuck for an hour")
		}
	}

	// Fixed, and resumed with the CLI: the step runs now, not at its next
	// scheduled attempt.
	reg.down.Store(false)
	next, err := time.Parse(time.RFC3339Nano, wantStatus(t, admin(t, "GET", "/admin/enclaves/stuck?for=0s"), http.StatusOK)["enclaves"].([]any)[0].(map[string]any)["nextAttempt"].(string))
	if err != nil {
		t.Fatalf("next attempt: %v", err)
	}
	// The runbook's own commands, exactly as docs/operations.md writes
	// them, with exactly the variables it exports.
	rb := readRunbook(t, "Runbook: an enclave stuck building or deploying")
	if len(rb.commands) != 2 || !strings.HasPrefix(rb.commands[0], "conduit enclave stuck") || !strings.HasPrefix(rb.commands[1], "conduit enclave resume") {
		t.Fatalf("the runbook's commands changed: %q", rb.commands)
	}
	if out, err := rb.run(t, rb.commands[0], id); err != nil || !strings.Contains(out, "building or deploying") && !strings.Contains(out, id) {
		t.Fatalf("%s: %v\n%s", rb.commands[0], err, out)
	}
	out, err := rb.run(t, rb.commands[1], id)
	if err != nil || !strings.Contains(out, workflows.ActEnclavePrepare+" retried now") {
		t.Fatalf("%s: %v\n%s", rb.commands[1], err, out)
	}
	waitEnclave(t, key, id, "DEPLOYED", time.Minute)
	if time.Now().After(next) {
		t.Fatalf("deployed only after the next scheduled attempt (%s): resume did not retry now", next)
	}
	rec = wantStatus(t, do(t, "GET", "/api/enclaves/"+id, key, nil), http.StatusOK)
	if rec["lastFailure"] != nil || rec["error_message"] != nil {
		t.Fatalf("deployed record: %v", rec)
	}
	if body, err := getText(t, "http://"+rec["endpoint"].(string)+"/"); err != nil || body != "hello from the enclave" {
		t.Fatalf("the application answered %q, %v", body, err)
	}

	// One deployment: the history has one completed deploy, and the
	// enclave log one "running".
	completed := map[string]int{}
	scheduled := map[int64]string{}
	iter := env.Platform.Temporal.GetWorkflowHistory(context.Background(), workflows.EnclaveWorkflowID(id), "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for iter.HasNext() {
		ev, err := iter.Next()
		if err != nil {
			t.Fatal(err)
		}
		if a := ev.GetActivityTaskScheduledEventAttributes(); a != nil {
			scheduled[ev.GetEventId()] = a.GetActivityType().GetName()
		}
		if a := ev.GetActivityTaskCompletedEventAttributes(); a != nil {
			completed[scheduled[a.GetScheduledEventId()]]++
		}
	}
	if completed[workflows.ActEnclaveDeploy] != 1 || completed[workflows.ActEnclavePrepare] != 1 {
		t.Fatalf("completed steps: %v", completed)
	}
	running := 0
	for _, l := range wantStatus(t, do(t, "GET", "/api/enclaves/"+id+"/logs?logType=ecs&limit=1000", key, nil), http.StatusOK)["logs"].([]any) {
		if strings.HasPrefix(l.(map[string]any)["message"].(string), "running ") {
			running++
		}
	}
	if running != 1 {
		t.Fatalf("%d deployments logged", running)
	}

	// Nothing waits any more: resume is a 409 naming the state, on the API
	// and on the admin route.
	if b := wantStatus(t, do(t, "POST", "/api/enclaves/"+id+"/retry", key, nil), http.StatusConflict); b["status"] != "DEPLOYED" {
		t.Fatalf("retry when deployed: %v", b)
	}
	wantStatus(t, admin(t, "POST", "/admin/enclaves/"+id+"/retry"), http.StatusConflict)
	wantStatus(t, admin(t, "POST", "/admin/enclaves/enc_nosuch/retry"), http.StatusNotFound)
	if reg.refused.Load() < 3 {
		t.Fatalf("the broken registry refused only %d requests", reg.refused.Load())
	}
	wantStatus(t, do(t, "POST", "/api/enclaves/"+id+"/terminate", key, nil), http.StatusOK)
}

// A stuck deployment can be terminated: the step waiting to be retried is
// cancelled, nothing is left running, and the enclave is DESTROYED.
func TestEnclaveStuckDeploymentCanBeTerminated(t *testing.T) {
	env.RequireEnclaves(t)
	reg := newFlakyRegistry(t, env.Registry)
	env.PushEnclaveApp(t, "stuck/term", "v1")
	_, key := env.NewAccount(t)
	reg.down.Store(true)
	id := wantStatus(t, do(t, "POST", "/api/enclaves", key, enclaveBody(reg.host()+"/stuck/term:v1")), http.StatusAccepted)["id"].(string)
	apptest.Eventually(t, time.Minute, "two refused pulls", func() error {
		if n := reg.refused.Load(); n < 2 {
			return fmt.Errorf("%d refused", n)
		}
		return nil
	})
	if b := wantStatus(t, do(t, "POST", "/api/enclaves/"+id+"/terminate", key, nil), http.StatusOK); b["status"] != "DESTROYED" {
		t.Fatalf("terminate while stuck: %v", b)
	}
	wantStatus(t, do(t, "DELETE", "/api/enclaves/"+id, key, nil), http.StatusNoContent)
}

// An application that ends on its own (here: over its memory limit) fails
// the enclave with the reason; its last output is in the log.
func TestEnclaveApplicationExitFailsIt(t *testing.T) {
	ref := env.PushEnclaveApp(t, "exit/echo", "v1")
	_, key := env.NewAccount(t)
	id := wantStatus(t, do(t, "POST", "/api/enclaves", key, enclaveBody(ref)), http.StatusAccepted)["id"].(string)
	e := waitEnclave(t, key, id, "DEPLOYED", 2*time.Minute)
	_, _ = getText(t, "http://"+e["endpoint"].(string)+"/alloc?mib=1024") // 128 MiB allowed
	e = waitEnclave(t, key, id, "FAILED", time.Minute)
	if msg, _ := e["error_message"].(string); !strings.Contains(msg, "the application exited") {
		t.Fatalf("failed record: %v", e)
	}
	logs := wantStatus(t, do(t, "GET", "/api/enclaves/"+id+"/logs?logType=application&limit=1000", key, nil), http.StatusOK)["logs"].([]any)
	found := false
	for _, l := range logs {
		found = found || strings.Contains(l.(map[string]any)["message"].(string), "allocating 1024 MiB")
	}
	if !found {
		t.Fatalf("the application's last output is not in the log: %v", logs)
	}
	wantStatus(t, do(t, "DELETE", "/api/enclaves/"+id, key, nil), http.StatusNoContent)
}
