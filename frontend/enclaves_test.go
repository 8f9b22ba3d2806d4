package frontend_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"go.temporal.io/api/workflowservice/v1"

	"conduit/app/apptest"
	"conduit/internal/enclaves/provider/local"
	"conduit/workflows"
)

// waitEnclave polls the record until its status is want (failing on a
// final status that is not).
func waitEnclave(t *testing.T, key, id, want string, within time.Duration) map[string]any {
	t.Helper()
	var e map[string]any
	apptest.Eventually(t, within, "enclave "+id+" to be "+want, func() error {
		e = wantStatus(t, do(t, "GET", "/api/enclaves/"+id, key, nil), http.StatusOK)
		switch st := e["status"].(string); {
		case st == want:
			return nil
		case st == "FAILED" || st == "DESTROYED":
			t.Fatalf("enclave %s is %s, want %s: %v", id, st, want, e)
		}
		return fmt.Errorf("status %s", e["status"])
	})
	return e
}

func enclaveBody(ref string) map[string]any {
	return map[string]any{"name": "echo", "description": "the test app", "providerConfig": map[string]any{"dockerImage": ref, "cpuCount": 1, "memoryMiB": 128}}
}

func getText(t *testing.T, url string) (string, error) {
	c := &http.Client{Timeout: 2 * time.Second}
	resp, err := c.Get(url)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return string(b), err
}

func TestEnclaveLifecycle(t *testing.T) {
	ref := env.PushEnclaveApp(t, "lifecycle/echo", "v1")
	_, key := env.NewAccount(t)
	_, other := env.NewAccount(t)

	created := wantStatus(t, do(t, "POST", "/api/enclaves", key, enclaveBody(ref)), http.StatusAccepted)
	id := created["id"].(string)
	if created["status"] != "PENDING_DEPLOY" || created["providerId"] != "local" || created["sourceType"] != "registry" {
		t.Fatalf("created: %v", created)
	}
	e := waitEnclave(t, key, id, "DEPLOYED", 2*time.Minute)
	if e["walletAddress"] == nil || len(e["pcrs"].(map[string]any)) < 3 || e["endpoint"] == nil {
		t.Fatalf("deployed: %v", e)
	}

	// The application answers on its forwarded port.
	endpoint := "http://" + e["endpoint"].(string)
	var body string
	apptest.Eventually(t, 30*time.Second, "the application to answer", func() error {
		var err error
		body, err = getText(t, endpoint+"/hello")
		return err
	})
	if body != "hello from the enclave" {
		t.Fatalf("the application answered %q", body)
	}

	// Another account sees nothing.
	wantStatus(t, do(t, "GET", "/api/enclaves/"+id, other, nil), http.StatusNotFound)
	wantStatus(t, do(t, "POST", "/api/enclaves/"+id+"/pause", other, nil), http.StatusNotFound)
	wantStatus(t, do(t, "DELETE", "/api/enclaves/"+id, other, nil), http.StatusNotFound)
	if l := wantStatus(t, do(t, "GET", "/api/enclaves", other, nil), http.StatusOK); len(l["enclaves"].([]any)) != 0 {
		t.Fatalf("another account lists %v", l)
	}

	// Forbidden transitions are 409s naming the state, and change nothing.
	for _, c := range []struct{ method, path string }{{"POST", "/resume"}, {"DELETE", ""}, {"PATCH", ""}} {
		r := do(t, c.method, "/api/enclaves/"+id+c.path, key, map[string]any{"name": "renamed"})
		if b := wantStatus(t, r, http.StatusConflict); b["status"] != "DEPLOYED" || !strings.Contains(b["error"].(string), "DEPLOYED") {
			t.Fatalf("%s %s: %v", c.method, c.path, b)
		}
	}
	if e := wantStatus(t, do(t, "GET", "/api/enclaves/"+id, key, nil), http.StatusOK); e["status"] != "DEPLOYED" || e["name"] != "echo" {
		t.Fatalf("after refusals: %v", e)
	}

	paused := wantStatus(t, do(t, "POST", "/api/enclaves/"+id+"/pause", key, nil), http.StatusOK)
	if paused["status"] != "PAUSED" {
		t.Fatalf("pause: %v", paused)
	}
	if b := wantStatus(t, do(t, "POST", "/api/enclaves/"+id+"/pause", key, nil), http.StatusConflict); b["status"] != "PAUSED" || !strings.Contains(b["error"].(string), "PAUSED") {
		t.Fatalf("second pause: %v", b)
	}
	if _, err := getText(t, endpoint+"/paused"); err == nil {
		t.Fatal("a paused enclave answered")
	}
	if r := wantStatus(t, do(t, "POST", "/api/enclaves/"+id+"/resume", key, nil), http.StatusOK); r["status"] != "DEPLOYED" {
		t.Fatalf("resume: %v", r)
	}
	if body, err := getText(t, endpoint+"/resumed"); err != nil || body != "hello from the enclave" {
		t.Fatalf("after resume: %q %v", body, err)
	}

	// Application output reaches the log.
	var logs map[string]any
	apptest.Eventually(t, 30*time.Second, "the application's output in its log", func() error {
		logs = wantStatus(t, do(t, "GET", "/api/enclaves/"+id+"/logs?logType=application", key, nil), http.StatusOK)
		if text := fmt.Sprint(logs["logs"]); !strings.Contains(text, "request /resumed") {
			return fmt.Errorf("application logs: %s", text)
		}
		return nil
	})
	if entry := logs["logs"].([]any)[0].(map[string]any); entry["type"] != "application" || entry["logGroup"] == "" || entry["timestamp"] == "" {
		t.Fatalf("log entry: %v", entry)
	}
	// stepfunctions is the lifecycle's history, read from Temporal; the
	// transitions are also provisioning (ecs) entries.
	steps := wantStatus(t, do(t, "GET", "/api/enclaves/"+id+"/logs?logType=stepfunctions&limit=1000", key, nil), http.StatusOK)
	s := fmt.Sprint(steps["logs"])
	for _, want := range []string{"lifecycle started", "step EnclavePrepare succeeded", "step EnclaveDeploy succeeded", "state DEPLOYED",
		"request pause accepted", "request pause done", "state PAUSED", "request resume done", "temporal:enclave/" + id + "#"} {
		if !strings.Contains(s, want) {
			t.Fatalf("stepfunctions log lacks %q: %s", want, s)
		}
	}
	if strings.Contains(s, "EnclaveWatch") || strings.Contains(s, "EnclaveProject") {
		t.Fatalf("stepfunctions log holds bookkeeping: %s", s)
	}
	ecs := fmt.Sprint(wantStatus(t, do(t, "GET", "/api/enclaves/"+id+"/logs?logType=ecs&limit=1000", key, nil), http.StatusOK)["logs"])
	if !strings.Contains(ecs, "status DEPLOYING → DEPLOYED") || !strings.Contains(ecs, "status PAUSING → PAUSED") {
		t.Fatalf("ecs log: %s", ecs)
	}
	all := wantStatus(t, do(t, "GET", "/api/enclaves/"+id+"/logs?limit=5", key, nil), http.StatusOK)["logs"].([]any)
	if len(all) != 5 {
		t.Fatalf("all, limit 5: %v", all)
	}
	wantStatus(t, do(t, "GET", "/api/enclaves/"+id+"/logs?logType=nope", key, nil), http.StatusBadRequest)
	wantStatus(t, do(t, "GET", "/api/enclaves/"+id+"/logs?limit=1001", key, nil), http.StatusBadRequest)

	if r := wantStatus(t, do(t, "POST", "/api/enclaves/"+id+"/terminate", key, nil), http.StatusOK); r["status"] != "DESTROYED" || r["endpoint"] != nil {
		t.Fatalf("terminate: %v", r)
	}
	if _, err := getText(t, endpoint+"/gone"); err == nil {
		t.Fatal("a destroyed enclave answered")
	}
	if b := wantStatus(t, do(t, "POST", "/api/enclaves/"+id+"/terminate", key, nil), http.StatusConflict); b["status"] != "DESTROYED" {
		t.Fatalf("second terminate: %v", b)
	}
	wantStatus(t, do(t, "DELETE", "/api/enclaves/"+id, key, nil), http.StatusNoContent)
	wantStatus(t, do(t, "GET", "/api/enclaves/"+id, key, nil), http.StatusNotFound)
}

func TestEnclaveMissingImageFails(t *testing.T) {
	env.RequireEnclaves(t)
	_, key := env.NewAccount(t)
	created := wantStatus(t, do(t, "POST", "/api/enclaves", key, enclaveBody(env.Registry+"/missing/app:v1")), http.StatusAccepted)
	id := created["id"].(string)
	e := waitEnclave(t, key, id, "FAILED", time.Minute)
	if msg, _ := e["error_message"].(string); !strings.Contains(msg, "image") {
		t.Fatalf("error_message: %v", e)
	}
	errLogs := wantStatus(t, do(t, "GET", "/api/enclaves/"+id+"/logs?logType=errors", key, nil), http.StatusOK)
	if len(errLogs["logs"].([]any)) == 0 {
		t.Fatal("no error log entry")
	}
	wantStatus(t, do(t, "POST", "/api/enclaves/"+id+"/pause", key, nil), http.StatusConflict)
	wantStatus(t, do(t, "DELETE", "/api/enclaves/"+id, key, nil), http.StatusNoContent)
}

func TestEnclaveBadInput(t *testing.T) {
	env.RequireEnclaves(t)
	_, key := env.NewAccount(t)
	_, reader := env.NewAccount(t, "enclaves:read")
	for name, body := range map[string]any{
		"no image":                    map[string]any{"name": "x", "providerConfig": map[string]any{}},
		"github without a connection": map[string]any{"name": "x", "sourceType": "github", "providerConfig": map[string]any{"dockerImage": env.Registry + "/a:1"}},
		"not json":                    "{",
	} {
		r := do(t, "POST", "/api/enclaves", key, body)
		if r.Status != http.StatusBadRequest {
			t.Fatalf("%s: %d %s", name, r.Status, r.Body)
		}
	}
	wantStatus(t, do(t, "POST", "/api/enclaves", reader, enclaveBody(env.Registry+"/a:1")), http.StatusForbidden)
	if l := wantStatus(t, do(t, "GET", "/api/enclaves", key, nil), http.StatusOK); len(l["enclaves"].([]any)) != 0 {
		t.Fatalf("bad input wrote %v", l)
	}
}

func TestEnclaveSurvivesWorkerRestart(t *testing.T) {
	ref := env.PushEnclaveApp(t, "restart/echo", "v1")
	_, key := env.NewAccount(t)
	env.StopWorker()
	created := wantStatus(t, do(t, "POST", "/api/enclaves", key, enclaveBody(ref)), http.StatusAccepted)
	id := created["id"].(string)
	if err := env.StartWorker(); err != nil {
		t.Fatal(err)
	}
	// Stop it again as soon as the deployment is under way; the next
	// worker takes the step over once the stopped one's attempt misses its
	// heartbeat.
	apptest.Eventually(t, time.Minute, "the deployment to be under way", func() error {
		if st := wantStatus(t, do(t, "GET", "/api/enclaves/"+id, key, nil), http.StatusOK)["status"]; st == "PENDING_DEPLOY" {
			return fmt.Errorf("status %v", st)
		}
		return nil
	})
	env.StopWorker()
	if err := env.StartWorker(); err != nil {
		t.Fatal(err)
	}
	waitEnclave(t, key, id, "DEPLOYED", 2*time.Minute)
	ecs := wantStatus(t, do(t, "GET", "/api/enclaves/"+id+"/logs?logType=ecs&limit=1000", key, nil), http.StatusOK)
	if n := strings.Count(fmt.Sprint(ecs["logs"]), "status DEPLOYING → DEPLOYED"); n != 1 {
		t.Fatalf("deployed %d times: %v", n, ecs["logs"])
	}
	steps := wantStatus(t, do(t, "GET", "/api/enclaves/"+id+"/logs?logType=stepfunctions&limit=1000", key, nil), http.StatusOK)
	if n := strings.Count(fmt.Sprint(steps["logs"]), "step EnclaveDeploy succeeded"); n != 1 {
		t.Fatalf("deployed %d times: %v", n, steps["logs"])
	}
	wantStatus(t, do(t, "POST", "/api/enclaves/"+id+"/terminate", key, nil), http.StatusOK)
}

func TestEnclavePrivateRegistry(t *testing.T) {
	env.RequireEnclaves(t)
	reg, err := local.StartRegistry(local.RegistryOptions{Username: "deploy", Password: "s3cret-pass"})
	if err != nil {
		t.Fatal(err)
	}
	defer reg.Close()
	ref := apptest.PushEnclaveApp(t, reg.Host, "private/echo", "v1", &authn.Basic{Username: "deploy", Password: "s3cret-pass"})
	account, key := env.NewAccount(t)

	// Without credentials the pull is refused: FAILED, not retried forever.
	anon := wantStatus(t, do(t, "POST", "/api/enclaves", key, enclaveBody(ref)), http.StatusAccepted)
	if e := waitEnclave(t, key, anon["id"].(string), "FAILED", time.Minute); e["error_message"] == nil {
		t.Fatalf("anonymous pull: %v", e)
	}

	body := enclaveBody(ref)
	body["sourceType"], body["registryUsername"], body["registryPassword"] = "private-registry", "deploy", "s3cret-pass"
	r := do(t, "POST", "/api/enclaves", key, body)
	created := wantStatus(t, r, http.StatusAccepted)
	id := created["id"].(string)
	e := waitEnclave(t, key, id, "DEPLOYED", 2*time.Minute)
	for _, b := range [][]byte{r.Body, do(t, "GET", "/api/enclaves/"+id, key, nil).Body, do(t, "GET", "/api/enclaves", key, nil).Body} {
		if strings.Contains(string(b), "s3cret-pass") {
			t.Fatalf("the password was returned: %s", b)
		}
	}
	if e["registryUsername"] != "deploy" {
		t.Fatalf("record: %v", e)
	}
	// At rest it is sealed.
	sealed, err := env.Platform.Store.EnclaveSecret(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	if len(sealed) == 0 || strings.Contains(string(sealed), "s3cret-pass") {
		t.Fatalf("registry_secret at rest: %q", sealed)
	}

	// The workflow answers its live state, and operators find it by its
	// search attributes.
	tc := env.Platform.Temporal
	v, err := tc.QueryWorkflow(context.Background(), workflows.EnclaveWorkflowID(id), "", workflows.EnclaveQuery)
	if err != nil {
		t.Fatal(err)
	}
	var st workflows.EnclaveState
	if err := v.Get(&st); err != nil || st.Status != "DEPLOYED" || st.Endpoint != e["endpoint"] {
		t.Fatalf("query: %+v %v", st, err)
	}
	q := fmt.Sprintf("WorkflowType = 'Enclave' AND EnclaveId = '%s' AND EnclaveStatus = 'DEPLOYED' AND Account = '%s'", id, account)
	apptest.Eventually(t, 10*time.Second, "the lifecycle found by its search attributes", func() error {
		resp, err := tc.ListWorkflow(context.Background(), &workflowservice.ListWorkflowExecutionsRequest{Query: q})
		if err != nil {
			t.Fatal(err)
		}
		if n := len(resp.Executions); n != 1 {
			return fmt.Errorf("%s found %d executions", q, n)
		}
		return nil
	})
	wantStatus(t, do(t, "POST", "/api/enclaves/"+id+"/terminate", key, nil), http.StatusOK)
}

func TestEnclaveTerminateWhileDeploying(t *testing.T) {
	ref := env.PushEnclaveApp(t, "early/echo", "v1")
	_, key := env.NewAccount(t)
	env.StopWorker()
	created := wantStatus(t, do(t, "POST", "/api/enclaves", key, enclaveBody(ref)), http.StatusAccepted)
	id := created["id"].(string)
	// The terminate waits for the lifecycle, which waits for a worker.
	answer := make(chan map[string]any, 1)
	go func() {
		r := env.Do(t, "POST", "/api/enclaves/"+id+"/terminate", nil, apptest.Bearer(key)...)
		var m map[string]any
		_ = json.Unmarshal(r.Body, &m)
		m["httpStatus"] = r.Status
		answer <- m
	}()
	time.Sleep(500 * time.Millisecond) // the terminate reaches the API before a worker is back
	if err := env.StartWorker(); err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	select {
	case got = <-answer:
	case <-time.After(2 * time.Minute):
		t.Fatal("the terminate did not answer")
	}
	if got["httpStatus"] != http.StatusOK || got["status"] != "DESTROYED" {
		t.Fatalf("terminate while deploying: %v\n%s", got, lastLines(env.Logs(), "enclave"))
	}
	e := wantStatus(t, do(t, "GET", "/api/enclaves/"+id, key, nil), http.StatusOK)
	if e["status"] != "DESTROYED" || e["endpoint"] != nil {
		t.Fatalf("record: %v", e)
	}
	if _, err := os.Stat(filepath.Join(env.Config.Enclaves.DataDir, id)); !os.IsNotExist(err) {
		t.Fatalf("the provider kept files for %s: %v", id, err)
	}
	wantStatus(t, do(t, "DELETE", "/api/enclaves/"+id, key, nil), http.StatusNoContent)
}

func lastLines(logs, word string) string {
	var out []string
	for _, l := range strings.Split(logs, "\n") {
		if strings.Contains(l, word) {
			out = append(out, l)
		}
	}
	if len(out) > 10 {
		out = out[len(out)-10:]
	}
	return strings.Join(out, "\n")
}

func TestEnclavePatchBeforeDeployment(t *testing.T) {
	ref := env.PushEnclaveApp(t, "patched/echo", "v1")
	_, key := env.NewAccount(t)
	env.StopWorker()
	created := wantStatus(t, do(t, "POST", "/api/enclaves", key, enclaveBody(env.Registry+"/patched/echo:not-pushed")), http.StatusAccepted)
	id := created["id"].(string)
	wantStatus(t, do(t, "PATCH", "/api/enclaves/"+id, key, map[string]any{"providerConfig": map[string]any{"dockerImage": "not a ref"}}), http.StatusBadRequest)
	p := wantStatus(t, do(t, "PATCH", "/api/enclaves/"+id, key, map[string]any{"name": "patched", "providerConfig": map[string]any{"dockerImage": ref, "memoryMiB": 64}}), http.StatusOK)
	if p["name"] != "patched" || p["status"] != "PENDING_DEPLOY" {
		t.Fatalf("patch: %v", p)
	}
	if err := env.StartWorker(); err != nil {
		t.Fatal(err)
	}
	// The image deployed is the patched one.
	e := waitEnclave(t, key, id, "DEPLOYED", 2*time.Minute)
	if cfg := e["providerConfig"].(map[string]any); cfg["dockerImage"] != ref || cfg["memoryMiB"] != float64(64) {
		t.Fatalf("deployed: %v", e)
	}
	wantStatus(t, do(t, "POST", "/api/enclaves/"+id+"/terminate", key, nil), http.StatusOK)
}
