package chaos_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	mrand "math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"

	"conduit/app/apptest"
	"conduit/workflows"
)

// instances counts the live sandboxes running enclave id: bubblewrap
// processes whose root is the enclave's unpacked image, not counting
// bubblewrap's own init inside the sandbox (a child with the same command
// line). The kernel's view, not the provider's.
func instances(t *testing.T, id string) int {
	t.Helper()
	rootfs := filepath.Join(env.Config.Enclaves.DataDir, id, "rootfs")
	procs, err := filepath.Glob("/proc/[0-9]*")
	if err != nil {
		t.Fatal(err)
	}
	parents := map[string]string{} // pid → ppid of the matching processes
	for _, p := range procs {
		cmd, err := os.ReadFile(filepath.Join(p, "cmdline"))
		if err != nil {
			continue // gone meanwhile
		}
		args := strings.Split(string(cmd), "\x00")
		if filepath.Base(args[0]) != "bwrap" || !slices.Contains(args, rootfs) {
			continue
		}
		stat, _ := os.ReadFile(filepath.Join(p, "stat"))
		i := bytes.LastIndexByte(stat, ')')
		if i < 0 {
			continue
		}
		fields := strings.Fields(string(stat[i+1:])) // state, ppid, …
		if len(fields) < 2 || fields[0] == "Z" {
			continue
		}
		parents[filepath.Base(p)] = fields[1]
	}
	n := 0
	for _, ppid := range parents {
		if _, nested := parents[ppid]; !nested {
			n++
		}
	}
	return n
}

func enclaveRecord(t *testing.T, key, id string) map[string]any {
	t.Helper()
	return mustSend(t, "GET", "/api/enclaves/"+id, nil, http.StatusOK, "Authorization", "Bearer "+key).json
}

// waitRunning waits until the enclave is DEPLOYED, one sandbox runs it
// and the application answers at the record's endpoint (a record that
// still shows an instance that died with its worker is not enough).
func waitRunning(t *testing.T, key, id string) map[string]any {
	t.Helper()
	var rec map[string]any
	apptest.Eventually(t, 2*time.Minute, "enclave "+id+" to run", func() error {
		rec = enclaveRecord(t, key, id)
		if rec["status"] == "FAILED" {
			t.Fatalf("enclave %s is not running: %v (%d sandboxes)", id, rec, instances(t, id))
		}
		if rec["status"] == "DEPLOYED" && rec["endpoint"] != nil && instances(t, id) == 1 && answers(rec["endpoint"].(string)) == nil {
			return nil
		}
		return fmt.Errorf("%v (%d sandboxes)", rec, instances(t, id))
	})
	return rec
}

// watchesSince counts the instance checks (EnclaveWatch steps) the
// lifecycle of enclave id has finished since at, read from its history.
func watchesSince(t *testing.T, id string, at time.Time) int {
	t.Helper()
	ctx := context.Background()
	it := env.Platform.Temporal.GetWorkflowHistory(ctx, workflows.EnclaveWorkflowID(id), "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	watch := map[int64]bool{} // scheduled event id → is a watch
	n := 0
	for it.HasNext() {
		e, err := it.Next()
		if err != nil {
			t.Fatal(err)
		}
		if a := e.GetActivityTaskScheduledEventAttributes(); a != nil {
			watch[e.GetEventId()] = a.GetActivityType().GetName() == workflows.ActEnclaveWatch
		}
		if a := e.GetActivityTaskCompletedEventAttributes(); a != nil && watch[a.GetScheduledEventId()] && e.GetEventTime().AsTime().After(at) {
			n++
		}
	}
	return n
}

// restarts counts the restarts of lost instances the enclave's log records.
func restarts(t *testing.T, key, id string) int {
	t.Helper()
	var logs struct {
		Logs []struct{ Message string } `json:"logs"`
	}
	r := mustSend(t, "GET", "/api/enclaves/"+id+"/logs?logType=ecs&limit=1000", nil, http.StatusOK, "Authorization", "Bearer "+key)
	if err := json.Unmarshal(r.body, &logs); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, l := range logs.Logs {
		if strings.Contains(l.Message, "starting it again") {
			n++
		}
	}
	return n
}

func answers(addr string) error {
	c := &http.Client{Timeout: 2 * time.Second}
	var err error
	for range 10 {
		var resp *http.Response
		if resp, err = c.Get("http://" + addr + "/"); err == nil {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if string(b) == "hello from the enclave" {
				return nil
			}
			err = fmt.Errorf("answered %q", b)
		}
		time.Sleep(100 * time.Millisecond)
	}
	return err
}

func waitInstances(t *testing.T, id string, want int) {
	t.Helper()
	apptest.Eventually(t, 20*time.Second, fmt.Sprintf("enclave %s to have %d sandboxes", id, want), func() error {
		if n := instances(t, id); n != want {
			return fmt.Errorf("%d sandboxes", n)
		}
		return nil
	})
}

// Enclaves under kill -9: the worker process (the production binary, with
// the real local provider) is killed while enclaves deploy and once they
// run. Each ends DEPLOYED with exactly one sandbox running it, the same
// signing address, and an application that answers; an instance that died
// with its worker is started again by the next worker, once.
func TestKillDuringEnclaveDeployments(t *testing.T) {
	env.RequireEnclaves(t)
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := mrand.New(mrand.NewPCG(seed, seed))
	env.StopWorker()
	w := &workerProc{t: t, env: workerEnv(env.Config), logDir: t.TempDir()}
	t.Cleanup(w.stop)
	ref := env.PushEnclaveApp(t, "chaos/echo", "v1")
	_, key := env.NewAccount(t)
	auth := []string{"Authorization", "Bearer " + key}
	body := map[string]any{"name": "chaos", "providerConfig": map[string]any{"dockerImage": ref, "memoryMiB": 128}}

	for round := range 3 {
		w.start()
		id := mustSend(t, "POST", "/api/enclaves", body, http.StatusAccepted, auth...).json["id"].(string)
		// Killed somewhere in pulling, measuring, unpacking or starting.
		apptest.Eventually(t, time.Minute, "the deployment to be under way", func() error {
			if st := enclaveRecord(t, key, id)["status"]; st == "PENDING_DEPLOY" {
				return fmt.Errorf("status %v", st)
			}
			return nil
		})
		time.Sleep(time.Duration(rng.IntN(200)) * time.Millisecond)
		w.kill()
		t.Logf("round %d: killed the worker while %s was %v", round, id, enclaveRecord(t, key, id)["status"])
		waitInstances(t, id, 0) // nothing outlives its worker

		w.start()
		rec := waitRunning(t, key, id)
		wallet := rec["walletAddress"]

		// Killed while it runs: the instance dies with the worker; the
		// next one starts it again, once.
		before := restarts(t, key, id)
		w.kill()
		waitInstances(t, id, 0)
		w.start()
		rec = waitRunning(t, key, id)
		// Several checks of the instance later, still one.
		running := time.Now()
		apptest.Eventually(t, time.Minute, "five more checks of the instance", func() error {
			if n := watchesSince(t, id, running); n < 5 {
				return fmt.Errorf("%d checks", n)
			}
			return nil
		})
		waitInstances(t, id, 1)
		if rec["walletAddress"] != wallet {
			t.Fatalf("round %d: the signing address changed: %v → %v", round, wallet, rec["walletAddress"])
		}
		if n := restarts(t, key, id); n != before+1 {
			t.Fatalf("round %d: %d restarts logged after the kill, want 1", round, n-before)
		}
		mustSend(t, "POST", "/api/enclaves/"+id+"/terminate", nil, http.StatusOK, auth...)
		waitInstances(t, id, 0)
		w.kill()
	}
}
