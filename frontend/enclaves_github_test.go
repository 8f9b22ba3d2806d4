package frontend_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	commonpb "go.temporal.io/api/common/v1"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"conduit/app/apptest"
	"conduit/internal/codec"
	"conduit/workflows"
)

// githubApp is the program the github-sourced enclaves build: an HTTP
// server on $PORT.
const githubApp = `package main

import (
	"fmt"
	"net/http"
	"os"
)

func main() {
	port := os.Getenv("PORT")
	fmt.Println("listening on", port)
	http.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		fmt.Println("request", r.URL.Path)
		fmt.Fprint(w, "built from github")
	})
	if err := http.ListenAndServe(":"+port, nil); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
`

func githubBody(repo, branch, token string) map[string]any {
	gh := map[string]any{"username": "octocat", "selectedRepo": repo}
	if branch != "" {
		gh["selectedBranch"] = branch
	}
	if token != "" {
		gh["token"] = token
	}
	return map[string]any{"name": "built", "sourceType": "github", "githubConnection": gh,
		"providerConfig": map[string]any{"cpuCount": 1, "memoryMiB": 128}}
}

func logText(t *testing.T, key, id, typ string) string {
	t.Helper()
	l := wantStatus(t, do(t, "GET", "/api/enclaves/"+id+"/logs?limit=1000&logType="+typ, key, nil), http.StatusOK)
	var lines []string
	for _, e := range l["logs"].([]any) {
		m := e.(map[string]any)
		if m["type"] != typ {
			t.Fatalf("a %s entry in the %s logs: %v", m["type"], typ, m)
		}
		lines = append(lines, m["message"].(string))
	}
	return strings.Join(lines, "\n")
}

// transitions are the enclave's status changes ("FROM → TO" lines, from
// the ecs log), oldest first.
func transitions(t *testing.T, key, id string) string {
	t.Helper()
	var out []string
	for _, l := range strings.Split(logText(t, key, id, "ecs"), "\n") {
		if s, ok := strings.CutPrefix(l, "status "); ok {
			out = append(out, s)
		}
	}
	return strings.Join(out, "\n")
}

// A private repository's branch is cloned with the token, built into an
// image, pushed, deployed, and the program answers on the forwarded port;
// the token is never returned, nor written to workflow history.
func TestEnclaveFromGitHub(t *testing.T) {
	env.RequireEnclaves(t)
	const token = "ghp-s3cret-build-token"
	repo := "octo/echo-" + strings.ToLower(t.Name()[4:])
	commit := env.Git.Commit(t, repo, "main", map[string]string{"go.mod": "module example.com/echo\n\ngo 1.22\n", "main.go": githubApp})
	env.Git.RequireAuth(repo, "octocat", token)
	_, key := env.NewAccount(t)

	r := do(t, "POST", "/api/enclaves", key, githubBody(repo, "", token))
	created := wantStatus(t, r, http.StatusAccepted)
	id := created["id"].(string)
	gh, _ := created["githubConnection"].(map[string]any)
	if created["status"] != "PENDING_BUILD" || created["sourceType"] != "github" || gh == nil ||
		gh["isConnected"] != true || gh["username"] != "octocat" || gh["selectedRepo"] != repo || gh["selectedBranch"] != "main" || len(gh) != 4 {
		t.Fatalf("created: %v", created)
	}
	e := waitEnclave(t, key, id, "DEPLOYED", 3*time.Minute)
	image := e["providerConfig"].(map[string]any)["dockerImage"].(string)
	if !strings.HasPrefix(image, env.Registry+"/builds/"+repo+"@sha256:") {
		t.Fatalf("dockerImage %q", image)
	}
	endpoint := "http://" + e["endpoint"].(string)
	var body string
	apptest.Eventually(t, 30*time.Second, "the built program to answer", func() error {
		var err error
		body, err = getText(t, endpoint+"/hello")
		return err
	})
	if body != "built from github" {
		t.Fatalf("the built program answered %q", body)
	}

	// The build's output is in the build logs, and the lifecycle went
	// through the build states.
	build := logText(t, key, id, "build")
	for _, want := range []string{"cloning " + env.Git.URL + "/" + repo + ".git (branch main)", "checked out main at " + commit,
		"go build -trimpath", "pushed " + image, "built " + image} {
		if !strings.Contains(build, want) {
			t.Fatalf("build logs lack %q:\n%s", want, build)
		}
	}
	steps := transitions(t, key, id)
	want := []string{"created → PENDING_BUILD", "PENDING_BUILD → BUILDING", "BUILDING → PENDING_DEPLOY", "PENDING_DEPLOY → DEPLOYING", "DEPLOYING → DEPLOYED"}
	var got []string
	for _, l := range strings.Split(steps, "\n") {
		if strings.Contains(l, " → ") {
			got = append(got, l)
		}
	}
	if len(got) < len(want) || strings.Join(got[:len(want)], ", ") != strings.Join(want, ", ") {
		t.Fatalf("transitions:\n%s", steps)
	}

	// The stepfunctions log (the workflow's history) shows the build step.
	if h := logText(t, key, id, "stepfunctions"); !strings.Contains(h, workflows.ActEnclaveBuild) {
		t.Fatalf("the history lacks the build:\n%s", h)
	}

	// The token: never in an answer, sealed at rest, not in history.
	for _, b := range [][]byte{r.Body, do(t, "GET", "/api/enclaves/"+id, key, nil).Body, do(t, "GET", "/api/enclaves", key, nil).Body,
		do(t, "GET", "/api/enclaves/"+id+"/logs?limit=1000", key, nil).Body} {
		if strings.Contains(string(b), token) {
			t.Fatalf("the token was returned: %s", b)
		}
	}
	sealed, err := env.Platform.Store.EnclaveGitHubToken(context.Background(), id)
	if err != nil || len(sealed) == 0 || strings.Contains(string(sealed), token) {
		t.Fatalf("github_token at rest: %q %v", sealed, err)
	}
	if n := historyMentions(t, workflows.EnclaveWorkflowID(id), token, image); n[token] != 0 || n[image] == 0 {
		t.Fatalf("in the history: %v", n)
	}

	if r := wantStatus(t, do(t, "POST", "/api/enclaves/"+id+"/terminate", key, nil), http.StatusOK); r["status"] != "DESTROYED" {
		t.Fatalf("terminate: %v", r)
	}
	wantStatus(t, do(t, "DELETE", "/api/enclaves/"+id, key, nil), http.StatusNoContent)
}

// historyMentions counts, for each word, the payloads of the workflow's
// history (opened with the harness's codec) that contain it.
func historyMentions(t *testing.T, workflowID string, words ...string) map[string]int {
	t.Helper()
	c, err := codec.Parse(env.Config.Temporal.CodecKeys)
	if err != nil {
		t.Fatal(err)
	}
	n := map[string]int{}
	var walk func(m protoreflect.Message)
	walk = func(m protoreflect.Message) {
		if p, ok := m.Interface().(*commonpb.Payload); ok {
			open, err := c.Decode([]*commonpb.Payload{p})
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range words {
				if strings.Contains(string(open[0].GetData()), w) {
					n[w]++
				}
			}
			return
		}
		m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
			switch {
			case fd.IsList() && fd.Message() != nil:
				for i := 0; i < v.List().Len(); i++ {
					walk(v.List().Get(i).Message())
				}
			case fd.IsMap() && fd.MapValue().Message() != nil:
				v.Map().Range(func(_ protoreflect.MapKey, mv protoreflect.Value) bool { walk(mv.Message()); return true })
			case fd.Message() != nil && !fd.IsList() && !fd.IsMap():
				walk(v.Message())
			}
			return true
		})
	}
	it := env.Platform.Temporal.GetWorkflowHistory(context.Background(), workflowID, "", false, 0)
	for it.HasNext() {
		ev, err := it.Next()
		if err != nil {
			t.Fatal(err)
		}
		walk(proto.Clone(ev).ProtoReflect())
	}
	return n
}

// A program that does not compile ends BUILD_FAILED with the compiler's
// message in error_message and in the build logs; the enclave can still be
// renamed, not paused, and is deleted after its terminate.
func TestEnclaveGitHubBuildFails(t *testing.T) {
	env.RequireEnclaves(t)
	repo := "octo/broken-" + strings.ToLower(t.Name()[4:])
	env.Git.Commit(t, repo, "main", map[string]string{"go.mod": "module example.com/broken\n\ngo 1.22\n",
		"main.go": "package main\n\nfunc main() { notDefinedAnywhere() }\n"})
	_, key := env.NewAccount(t)
	id := wantStatus(t, do(t, "POST", "/api/enclaves", key, githubBody(repo, "main", "")), http.StatusAccepted)["id"].(string)
	e := waitEnclave(t, key, id, "BUILD_FAILED", 2*time.Minute)
	if msg, _ := e["error_message"].(string); !strings.Contains(msg, "undefined: notDefinedAnywhere") {
		t.Fatalf("error_message: %v", e)
	}
	if gh := e["githubConnection"].(map[string]any); gh["isConnected"] != false {
		t.Fatalf("no token, yet connected: %v", gh)
	}
	if b := logText(t, key, id, "build"); !strings.Contains(b, "./main.go:3:15: undefined: notDefinedAnywhere") || strings.Count(b, "cloning ") != 1 {
		t.Fatalf("build logs (one attempt, the compiler's message):\n%s", b)
	}
	if b := logText(t, key, id, "errors"); !strings.Contains(b, "notDefinedAnywhere") {
		t.Fatalf("error logs: %s", b)
	}
	if b := transitions(t, key, id); !strings.Contains(b, "BUILDING → BUILD_FAILED") || strings.Contains(b, "DEPLOYING") {
		t.Fatalf("transitions: %s", b)
	}

	// Before deployment the record may change — but not its image.
	if r := wantStatus(t, do(t, "PATCH", "/api/enclaves/"+id, key, map[string]any{"name": "renamed"}), http.StatusOK); r["name"] != "renamed" {
		t.Fatalf("patch: %v", r)
	}
	bad := wantStatus(t, do(t, "PATCH", "/api/enclaves/"+id, key, map[string]any{"providerConfig": map[string]any{"dockerImage": env.Registry + "/x:1"}}), http.StatusBadRequest)
	if !strings.Contains(fmt.Sprint(bad["problems"]), "providerConfig.dockerImage") {
		t.Fatalf("patching the image: %v", bad)
	}
	for _, path := range []string{"/pause", "/resume"} {
		if b := wantStatus(t, do(t, "POST", "/api/enclaves/"+id+path, key, nil), http.StatusConflict); b["status"] != "BUILD_FAILED" {
			t.Fatalf("%s: %v", path, b)
		}
	}
	if b := wantStatus(t, do(t, "DELETE", "/api/enclaves/"+id, key, nil), http.StatusConflict); b["status"] != "BUILD_FAILED" {
		t.Fatalf("delete before terminate: %v", b)
	}
	if r := wantStatus(t, do(t, "POST", "/api/enclaves/"+id+"/terminate", key, nil), http.StatusOK); r["status"] != "DESTROYED" {
		t.Fatalf("terminate: %v", r)
	}
	wantStatus(t, do(t, "DELETE", "/api/enclaves/"+id, key, nil), http.StatusNoContent)
}

// An unknown branch (or repository) is permanent: BUILD_FAILED after one
// attempt, not five.
func TestEnclaveGitHubUnknownBranch(t *testing.T) {
	env.RequireEnclaves(t)
	repo := "octo/branches-" + strings.ToLower(t.Name()[4:])
	env.Git.Commit(t, repo, "main", map[string]string{"go.mod": "module example.com/b\n\ngo 1.22\n", "main.go": githubApp})
	_, key := env.NewAccount(t)
	for branch, msg := range map[string]string{"no-such-branch": `has no branch "no-such-branch"`} {
		id := wantStatus(t, do(t, "POST", "/api/enclaves", key, githubBody(repo, branch, "")), http.StatusAccepted)["id"].(string)
		e := waitEnclave(t, key, id, "BUILD_FAILED", time.Minute)
		if m, _ := e["error_message"].(string); !strings.Contains(m, msg) {
			t.Fatalf("error_message: %v", e)
		}
		if b := logText(t, key, id, "build"); strings.Count(b, "cloning ") != 1 || strings.Contains(b, "attempt 2") {
			t.Fatalf("retried:\n%s", b)
		}
	}
	id := wantStatus(t, do(t, "POST", "/api/enclaves", key, githubBody("octo/not-there", "", "")), http.StatusAccepted)["id"].(string)
	if e := waitEnclave(t, key, id, "BUILD_FAILED", time.Minute); !strings.Contains(fmt.Sprint(e["error_message"]), "does not exist") {
		t.Fatalf("unknown repository: %v", e)
	}
}

func TestEnclaveGitHubBadInput(t *testing.T) {
	env.RequireEnclaves(t)
	_, key := env.NewAccount(t)
	for field, body := range map[string]map[string]any{
		"githubConnection":                {"name": "x", "sourceType": "github"},
		"githubConnection.selectedRepo":   githubBody("not-a-repo", "", ""),
		"githubConnection.selectedBranch": githubBody("a/b", "bad..branch", ""),
		"providerConfig.dockerImage": {"name": "x", "sourceType": "github", "githubConnection": map[string]any{"selectedRepo": "a/b"},
			"providerConfig": map[string]any{"dockerImage": env.Registry + "/a:1"}},
		"githubConnection.token": githubBody("a/b", "", "has spaces in it"),
		"registryUsername": {"name": "x", "sourceType": "github", "githubConnection": map[string]any{"selectedRepo": "a/b"},
			"registryUsername": "u", "registryPassword": "p"},
	} {
		b := wantStatus(t, do(t, "POST", "/api/enclaves", key, body), http.StatusBadRequest)
		found := false
		for _, p := range b["problems"].([]any) {
			found = found || p.(map[string]any)["field"] == field
		}
		if !found {
			t.Errorf("%s: %v", field, b)
		}
	}
	if l := wantStatus(t, do(t, "GET", "/api/enclaves", key, nil), http.StatusOK); len(l["enclaves"].([]any)) != 0 {
		t.Fatalf("bad input wrote %v", l)
	}
}

// A worker stopped mid-build: the build runs again on the next worker and
// pushes the same image (same commit, same digest), so there is one image
// and one deployment.
func TestEnclaveGitHubBuildSurvivesWorkerRestart(t *testing.T) {
	env.RequireEnclaves(t)
	repo := "octo/restart-" + strings.ToLower(t.Name()[4:])
	commit := env.Git.Commit(t, repo, "main", map[string]string{"go.mod": "module example.com/r\n\ngo 1.22\n", "main.go": githubApp})
	_, key := env.NewAccount(t)
	env.StopWorker()
	id := wantStatus(t, do(t, "POST", "/api/enclaves", key, githubBody(repo, "", "")), http.StatusAccepted)["id"].(string)
	if err := env.StartWorker(); err != nil {
		t.Fatal(err)
	}
	apptest.Eventually(t, time.Minute, "the build to start", func() error {
		if st := wantStatus(t, do(t, "GET", "/api/enclaves/"+id, key, nil), http.StatusOK)["status"]; st != "BUILDING" {
			return fmt.Errorf("status %v", st)
		}
		return nil
	})
	// Stopped mid-build: the next worker takes the build over once the
	// stopped one's attempt misses its heartbeat.
	env.StopWorker()
	if err := env.StartWorker(); err != nil {
		t.Fatal(err)
	}
	e := waitEnclave(t, key, id, "DEPLOYED", 3*time.Minute)
	steps := transitions(t, key, id)
	if strings.Count(steps, "BUILDING → PENDING_DEPLOY") != 1 || strings.Count(steps, "DEPLOYING → DEPLOYED") != 1 {
		t.Fatalf("transitions:\n%s", steps)
	}
	// One image: the repository's only tag is the commit, and it is the
	// image deployed.
	r, err := name.NewRepository(env.Registry + "/builds/" + repo)
	if err != nil {
		t.Fatal(err)
	}
	tags, err := remote.List(r)
	if err != nil || len(tags) != 1 || tags[0] != commit {
		t.Fatalf("tags %v %v", tags, err)
	}
	d, err := remote.Head(r.Tag(commit))
	if err != nil {
		t.Fatal(err)
	}
	if image := e["providerConfig"].(map[string]any)["dockerImage"]; image != r.Digest(d.Digest.String()).String() {
		t.Fatalf("deployed %v, tagged %s", image, d.Digest)
	}
	wantStatus(t, do(t, "POST", "/api/enclaves/"+id+"/terminate", key, nil), http.StatusOK)
}

// A terminate before the build, or during it (the build retrying a
// failing git host), ends it: the enclave is destroyed and nothing is
// deployed.
func TestEnclaveGitHubTerminateWhileBuilding(t *testing.T) {
	env.RequireEnclaves(t)
	repo := "octo/early-" + strings.ToLower(t.Name()[4:])
	env.Git.Commit(t, repo, "main", map[string]string{"go.mod": "module example.com/e\n\ngo 1.22\n", "main.go": githubApp})
	_, key := env.NewAccount(t)
	env.StopWorker()
	defer func() {
		if err := env.StartWorker(); err != nil {
			t.Fatal(err)
		}
	}()
	id := wantStatus(t, do(t, "POST", "/api/enclaves", key, githubBody(repo, "", "")), http.StatusAccepted)["id"].(string)
	// The terminate is accepted while the build is queued; it answers once
	// the enclave is destroyed, which needs a worker.
	done := make(chan map[string]any, 1)
	go func() {
		r := do(t, "POST", "/api/enclaves/"+id+"/terminate", key, nil)
		done <- map[string]any{"status": r.Status, "body": string(r.Body)}
	}()
	time.Sleep(500 * time.Millisecond) // the terminate reaches the API before a worker is back
	if err := env.StartWorker(); err != nil {
		t.Fatal(err)
	}
	r := <-done
	if r["status"] != http.StatusOK || !strings.Contains(r["body"].(string), `"DESTROYED"`) {
		t.Fatalf("terminate: %v", r)
	}
	steps := transitions(t, key, id)
	if strings.Contains(steps, "DEPLOYING") || !strings.Contains(steps, "→ PENDING_DESTROY") {
		t.Fatalf("transitions:\n%s", steps)
	}
	wantStatus(t, do(t, "DELETE", "/api/enclaves/"+id, key, nil), http.StatusNoContent)

	// While the build retries a failing git host, a terminate cancels it.
	env.Git.Fail(http.StatusBadGateway)
	defer env.Git.Fail(0)
	id = wantStatus(t, do(t, "POST", "/api/enclaves", key, githubBody(repo, "", "")), http.StatusAccepted)["id"].(string)
	apptest.Eventually(t, time.Minute, "the build to meet the failing host", func() error {
		if text := logText(t, key, id, "build"); !strings.Contains(text, "answered 502") {
			return fmt.Errorf("build log:\n%s", text)
		}
		return nil
	})
	if e := wantStatus(t, do(t, "GET", "/api/enclaves/"+id, key, nil), http.StatusOK); e["status"] != "BUILDING" {
		t.Fatalf("while the host fails: %v", e)
	}
	if r := wantStatus(t, do(t, "POST", "/api/enclaves/"+id+"/terminate", key, nil), http.StatusOK); r["status"] != "DESTROYED" {
		t.Fatalf("terminate while building: %v", r)
	}
	if steps := transitions(t, key, id); !strings.Contains(steps, "BUILDING → PENDING_DESTROY") || strings.Contains(steps, "DEPLOYING") {
		t.Fatalf("transitions:\n%s", steps)
	}
}

// A build that meets a failing git host stays BUILDING with the failure on
// the record and keeps retrying; once the host is back, a retry (the SRE's
// resume) builds and deploys it without recreating the enclave.
func TestEnclaveGitHubStuckBuildResumes(t *testing.T) {
	env.RequireEnclaves(t)
	repo := "octo/stuck-" + strings.ToLower(t.Name()[4:])
	env.Git.Commit(t, repo, "main", map[string]string{"go.mod": "module example.com/s\n\ngo 1.22\n", "main.go": githubApp})
	_, key := env.NewAccount(t)
	env.Git.Fail(http.StatusServiceUnavailable)
	defer env.Git.Fail(0)
	id := wantStatus(t, do(t, "POST", "/api/enclaves", key, githubBody(repo, "", "")), http.StatusAccepted)["id"].(string)
	var e map[string]any
	apptest.Eventually(t, time.Minute, "two failed attempts on the record", func() error {
		e = wantStatus(t, do(t, "GET", "/api/enclaves/"+id, key, nil), http.StatusOK)
		if f, _ := e["lastFailure"].(map[string]any); f == nil || f["attempt"].(float64) < 2 {
			return fmt.Errorf("record %v", e)
		}
		return nil
	})
	if f := e["lastFailure"].(map[string]any); e["status"] != "BUILDING" || !strings.Contains(f["message"].(string), "answered 503") {
		t.Fatalf("stuck: %v", e)
	}
	env.Git.Fail(0)
	wantStatus(t, do(t, "POST", "/api/enclaves/"+id+"/retry", key, nil), http.StatusOK)
	e = waitEnclave(t, key, id, "DEPLOYED", 2*time.Minute)
	if e["lastFailure"] != nil {
		t.Fatalf("deployed with a failure: %v", e)
	}
	if steps := transitions(t, key, id); strings.Count(steps, "BUILDING → PENDING_DEPLOY") != 1 {
		t.Fatalf("transitions:\n%s", steps)
	}
	wantStatus(t, do(t, "POST", "/api/enclaves/"+id+"/terminate", key, nil), http.StatusOK)
}
