package quota_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"conduit/app/apptest"
	"conduit/internal/config"
	"conduit/internal/money"
)

// The platform of this package runs with small quotas, a two-second
// minimum task interval, and metering at non-zero prices with a one-second
// enclave period, so that each limit is reached and each charge seen
// within a test. The settings travel as the environment the production
// binary reads.
var env *apptest.Env

var settings = map[string]string{
	"QUOTA_ENCLAVES":              "2",
	"QUOTA_TASKS":                 "2",
	"QUOTA_API_KEYS":              "3",
	"QUOTA_PIPELINES":             "3",
	"QUOTA_PII_SUBJECTS":          "2",
	"QUOTA_PII_TOKENS":            "5",
	"QUOTA_MIN_TASK_INTERVAL":     "2s",
	"METERING_TASK_FIRING_USD":    "0.0001",
	"METERING_ENCLAVE_MINUTE_USD": "0.0006",
	"METERING_ENCLAVE_PERIOD":     "1s",
}

// The prices above in micro-USD: a firing, and a one-second period.
const (
	firingMicros = 100
	periodMicros = 10
)

func TestMain(m *testing.M) {
	for k, v := range settings {
		os.Setenv(config.EnvPrefix+"_"+k, v)
	}
	apptest.Main(m, &env)
}

func do(t *testing.T, method, path, key string, body any) *apptest.Response {
	t.Helper()
	return env.Do(t, method, path, body, apptest.Bearer(key)...)
}

func want(t *testing.T, r *apptest.Response, status int) map[string]any {
	t.Helper()
	if r.Status != status {
		t.Fatalf("status %d, want %d: %s", r.Status, status, r.Body)
	}
	if len(r.Body) == 0 {
		return nil
	}
	return r.JSON(t)
}

// refused checks a quota refusal: 429, QUOTA_EXCEEDED, the resource, its
// use and its limit, and a message that says so.
func refused(t *testing.T, r *apptest.Response, resource string, limit int) {
	t.Helper()
	b := want(t, r, http.StatusTooManyRequests)
	msg, _ := b["error"].(string)
	if b["code"] != "QUOTA_EXCEEDED" || b["resource"] != resource || b["limit"] != float64(limit) || b["used"] != float64(limit) ||
		!strings.Contains(msg, "quota exceeded") || !strings.Contains(msg, "nothing was created") {
		t.Fatalf("refusal: %s", r.Body)
	}
}

// usage answers the account's usage by resource.
func usage(t *testing.T, key string) map[string]map[string]any {
	t.Helper()
	b := want(t, do(t, "GET", "/api/account/usage", key, nil), http.StatusOK)
	out := map[string]map[string]any{}
	for _, it := range b["resources"].([]any) {
		m := it.(map[string]any)
		out[m["resource"].(string)] = m
	}
	return out
}

func used(t *testing.T, key, resource string, n, limit int) {
	t.Helper()
	u := usage(t, key)[resource]
	if u == nil || u["used"] != float64(n) || u["limit"] != float64(limit) {
		t.Fatalf("usage of %s: %v, want %d of %d", resource, u, n, limit)
	}
}

func count(t *testing.T, key, path, field string) int {
	t.Helper()
	return len(want(t, do(t, "GET", path, key, nil), http.StatusOK)[field].([]any))
}

// concurrently sends n identical creates at once and answers how many
// were created and how many refused for the quota; anything else fails.
func concurrently(t *testing.T, n int, key, path string, body func(i int) any) (created, refusedN int) {
	t.Helper()
	var mu sync.Mutex
	var wg sync.WaitGroup
	start := make(chan struct{})
	statuses := map[int]int{}
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			r := do(t, "POST", path, key, body(i))
			mu.Lock()
			defer mu.Unlock()
			statuses[r.Status]++
			if r.Status == http.StatusTooManyRequests && !strings.Contains(string(r.Body), "QUOTA_EXCEEDED") {
				t.Errorf("a 429 that is not the quota's: %s", r.Body)
			}
		}()
	}
	close(start)
	wg.Wait()
	for s, c := range statuses {
		switch s {
		case http.StatusCreated, http.StatusAccepted:
			created += c
		case http.StatusTooManyRequests:
			refusedN += c
		default:
			t.Fatalf("unexpected status %d (%d times): %v", s, c, statuses)
		}
	}
	return created, refusedN
}

func TestPipelineQuota(t *testing.T) {
	_, key := env.NewAccount(t)
	used(t, key, "pipelines", 0, 3)
	for i := range 3 {
		want(t, do(t, "POST", "/api/pipelines", key, map[string]any{"name": fmt.Sprintf("p%d", i)}), http.StatusCreated)
	}
	refused(t, do(t, "POST", "/api/pipelines", key, map[string]any{"name": "one too many"}), "pipelines", 3)
	if n := count(t, key, "/api/pipelines", "pipelines"); n != 3 {
		t.Fatalf("%d pipelines after the refusal, want 3", n)
	}
	used(t, key, "pipelines", 3, 3)
	// Another account is not affected.
	_, other := env.NewAccount(t)
	want(t, do(t, "POST", "/api/pipelines", other, map[string]any{"name": "mine"}), http.StatusCreated)
}

// Concurrent creates cannot both take the last place: the count and the
// insert share a transaction under the account's lock.
func TestConcurrentCreatesStayWithinTheQuota(t *testing.T) {
	_, key := env.NewAccount(t)
	want(t, do(t, "POST", "/api/pipelines", key, map[string]any{"name": "first"}), http.StatusCreated)
	created, ref := concurrently(t, 8, key, "/api/pipelines", func(i int) any { return map[string]any{"name": fmt.Sprintf("race %d", i)} })
	if created != 2 || ref != 6 {
		t.Fatalf("%d pipelines created and %d refused; want 2 and 6", created, ref)
	}
	if n := count(t, key, "/api/pipelines", "pipelines"); n != 3 {
		t.Fatalf("%d pipelines, want 3", n)
	}

	// Keys: the account's first key (minted by the operator) counts.
	_, key = env.NewAccount(t)
	used(t, key, "apiKeys", 1, 3)
	created, ref = concurrently(t, 6, key, "/api/keys", func(i int) any { return map[string]any{"name": fmt.Sprintf("race %d", i)} })
	if created != 2 || ref != 4 {
		t.Fatalf("%d keys created and %d refused; want 2 and 4", created, ref)
	}
	if n := count(t, key, "/api/keys", "keys"); n != 3 {
		t.Fatalf("%d keys, want 3", n)
	}
	refused(t, do(t, "POST", "/api/keys", key, map[string]any{"name": "one too many"}), "apiKeys", 3)
	used(t, key, "apiKeys", 3, 3)
}

func TestUsage(t *testing.T) {
	_, key := env.NewAccount(t)
	u := usage(t, key)
	for _, r := range []string{"enclaves", "tasks", "apiKeys", "pipelines", "mediaBytes", "piiSubjects", "piiTokens",
		"zkKeys", "zkJobs", "kycProofs", "zkpassportRequests"} {
		if u[r] == nil {
			t.Fatalf("usage lacks %s: %v", r, u)
		}
	}
	used(t, key, "enclaves", 0, 2)
	used(t, key, "tasks", 0, 2)
	used(t, key, "apiKeys", 1, 3)
	// The proofs' quotas, at their defaults.
	used(t, key, "zkKeys", 0, 50)
	used(t, key, "zkJobs", 0, 100)
	used(t, key, "kycProofs", 0, 1000)
	used(t, key, "zkpassportRequests", 0, 100)
	// The library's bytes, against media.library.quota_bytes (2 GiB).
	if m := u["mediaBytes"]; m["used"] != float64(0) || m["limit"] != float64(2<<30) {
		t.Fatalf("usage of media bytes: %v", m)
	}
	want(t, env.Do(t, "GET", "/api/account/usage", nil), http.StatusUnauthorized)
}

func enclaveBody(ref string) map[string]any {
	return map[string]any{"name": "echo", "description": "the test app", "providerConfig": map[string]any{"dockerImage": ref, "cpuCount": 1, "memoryMiB": 128}}
}

func waitEnclave(t *testing.T, key, id, status string) map[string]any {
	t.Helper()
	var e map[string]any
	apptest.Eventually(t, 2*time.Minute, "enclave "+id+" to be "+status, func() error {
		e = want(t, do(t, "GET", "/api/enclaves/"+id, key, nil), http.StatusOK)
		if st := e["status"]; st != status {
			if st == "FAILED" || st == "DESTROYED" {
				t.Fatalf("enclave %s is %s: %v", id, st, e)
			}
			return fmt.Errorf("status %v", st)
		}
		return nil
	})
	return e
}

// charges answers the account's charge entries by reference.
func charges(t *testing.T, key string) map[string]float64 {
	t.Helper()
	b := want(t, do(t, "GET", "/api/account/ledger?type=charge&limit=200", key, nil), http.StatusOK)
	out := map[string]float64{}
	for _, e := range b["entries"].([]any) {
		m := e.(map[string]any)
		out[m["reference"].(string)] += m["amountMicros"].(float64)
	}
	return out
}

// drain holds the account's balance but leave micro-USD, as if it had
// been spent.
func drain(t *testing.T, account string, leave money.Micros) {
	t.Helper()
	ctx := context.Background()
	bal, err := env.Platform.Store.Balance(ctx, account)
	if err != nil {
		t.Fatal(err)
	}
	if bal > leave {
		if _, err := env.Platform.Store.Hold(ctx, account, bal-leave, "test/drain/"+account); err != nil {
			t.Fatal(err)
		}
	}
}

func TestEnclaveQuotaAndUptimeMetering(t *testing.T) {
	ref := env.PushEnclaveApp(t, "quota/echo", "v1")
	account, key := env.NewAccount(t)
	// Five at once against a limit of two: two are created, no more.
	created, ref2 := concurrently(t, 5, key, "/api/enclaves", func(int) any { return enclaveBody(ref) })
	list := want(t, do(t, "GET", "/api/enclaves", key, nil), http.StatusOK)["enclaves"].([]any)
	var ids []string
	for _, e := range list {
		id := e.(map[string]any)["id"].(string)
		ids = append(ids, id)
		t.Cleanup(func() { do(t, "POST", "/api/enclaves/"+id+"/terminate", key, nil) })
	}
	if created != 2 || ref2 != 3 || len(ids) != 2 {
		t.Fatalf("%d enclaves created, %d refused, %d listed; want 2, 3, 2", created, ref2, len(ids))
	}
	refused(t, do(t, "POST", "/api/enclaves", key, enclaveBody(ref)), "enclaves", 2)
	used(t, key, "enclaves", 2, 2)

	// Uptime: each started one-second period of a DEPLOYED enclave is
	// charged once, keyed by the enclave and the period's start.
	id := ids[0]
	waitEnclave(t, key, id, "DEPLOYED")
	prefix := "enclave-uptime/" + id + "/"
	apptest.Eventually(t, time.Minute, "three periods of uptime charged", func() error {
		n := 0
		for ref, amount := range charges(t, key) {
			if strings.HasPrefix(ref, prefix) {
				if amount != -periodMicros {
					t.Fatalf("period %s charged %v micro-USD, want %d", ref, amount, -periodMicros)
				}
				n++
			}
		}
		if n < 3 {
			return fmt.Errorf("%d periods charged", n)
		}
		return nil
	})

	// A balance that cannot pay pauses the enclave, with the reason in
	// its log; nothing more is charged while it is paused.
	drain(t, account, 0)
	waitEnclave(t, key, id, "PAUSED")
	logs := string(do(t, "GET", "/api/enclaves/"+id+"/logs?limit=500", key, nil).Body)
	if !strings.Contains(logs, "paused by the platform: the account's balance cannot cover its uptime") {
		t.Fatalf("the pause's reason is not in the log: %s", logs)
	}
}

func TestTaskQuotaIntervalAndFiringMetering(t *testing.T) {
	ref := env.PushEnclaveApp(t, "quota/tasks", "v1")
	account, key := env.NewAccount(t)
	created := want(t, do(t, "POST", "/api/enclaves", key, enclaveBody(ref)), http.StatusAccepted)
	enc := created["id"].(string)
	t.Cleanup(func() { do(t, "POST", "/api/enclaves/"+enc+"/terminate", key, nil) })
	waitEnclave(t, key, enc, "DEPLOYED")
	body := func(schedule, status string) map[string]any {
		return map[string]any{"name": "tick", "enclaveId": enc, "schedule": schedule, "status": status,
			"overlap": "allow_all", "request": map[string]any{"method": "GET", "path": "/status/200", "timeoutSeconds": 5}}
	}

	// The minimum interval: refused at create and at update.
	r := do(t, "POST", "/api/tasks", key, body("@every 1s", ""))
	if want(t, r, http.StatusBadRequest); !strings.Contains(string(r.Body), "quota.min_task_interval") {
		t.Fatalf("the interval refusal does not name its setting: %s", r.Body)
	}
	if n := count(t, key, "/api/tasks", "tasks"); n != 0 {
		t.Fatalf("%d tasks after refusals", n)
	}

	// Concurrent creates against a limit of two (one task stopped, so
	// only one fires).
	ok, refusedN := concurrently(t, 5, key, "/api/tasks", func(int) any { return body("@every 2s", "stopped") })
	if ok != 2 || refusedN != 3 {
		t.Fatalf("%d tasks created, %d refused; want 2 and 3", ok, refusedN)
	}
	tasks := want(t, do(t, "GET", "/api/tasks", key, nil), http.StatusOK)["tasks"].([]any)
	if len(tasks) != 2 {
		t.Fatalf("%d tasks, want 2", len(tasks))
	}
	refused(t, do(t, "POST", "/api/tasks", key, body("@every 2s", "")), "tasks", 2)
	used(t, key, "tasks", 2, 2)
	id := tasks[0].(map[string]any)["id"].(string)
	want(t, do(t, "PATCH", "/api/tasks/"+id, key, map[string]any{"schedule": "@every 1s"}), http.StatusBadRequest)
	want(t, do(t, "PATCH", "/api/tasks/"+id, key, map[string]any{"status": "running"}), http.StatusOK)

	// Each firing is charged once, under its run id, after the call.
	var runs []any
	apptest.Eventually(t, time.Minute, "two firings charged", func() error {
		runs = want(t, do(t, "GET", "/api/tasks/"+id+"/runs", key, nil), http.StatusOK)["runs"].([]any)
		ch := charges(t, key)
		n := 0
		for _, run := range runs {
			m := run.(map[string]any)
			if m["outcome"] != "success" {
				continue
			}
			if ch[m["id"].(string)] != -firingMicros {
				return fmt.Errorf("run %s charged %v", m["id"], ch[m["id"].(string)])
			}
			n++
		}
		if n < 2 {
			return fmt.Errorf("%d charged runs of %d", n, len(runs))
		}
		return nil
	})

	// A balance that cannot pay a firing (but still a few seconds of the
	// enclave's uptime): the firing is not called, the task is paused
	// (failed) with the reason.
	drain(t, account, firingMicros-periodMicros)
	apptest.Eventually(t, time.Minute, "the task paused for credit", func() error {
		g := want(t, do(t, "GET", "/api/tasks/"+id, key, nil), http.StatusOK)
		if g["status"] != "failed" || !strings.Contains(fmt.Sprint(g["statusReason"]), "balance cannot cover a firing") {
			return fmt.Errorf("task %v %v", g["status"], g["statusReason"])
		}
		return nil
	})
	// The task is failed by the hold's refusal; the firing's run is
	// recorded by the workflow's next step.
	apptest.Eventually(t, time.Minute, "the refused firing's run recorded", func() error {
		runs = want(t, do(t, "GET", "/api/tasks/"+id+"/runs?outcome=skipped", key, nil), http.StatusOK)["runs"].([]any)
		if len(runs) == 0 || !strings.Contains(runs[0].(map[string]any)["result"].(string), "not called") {
			return fmt.Errorf("the refused firing's run: %v", runs)
		}
		return nil
	})
}

// The PII vault's subjects and tokens are bounded like the rest: a batch
// that would pass a limit is refused whole (429 QUOTA_EXCEEDED) and
// changes nothing — no subject, no token, no audit entry; tokens that
// already exist (a repeated join token) add nothing and pass at the limit;
// deleted subjects keep counting (their rows stay so reads answer 410).
func TestPIIVaultQuota(t *testing.T) {
	_, key := env.NewAccount(t, "pii:ingest", "pii:delete", "pii:audit")
	item := func(typ, v string, det bool) map[string]any {
		return map[string]any{"type": typ, "value": v, "deterministic": det}
	}
	ingest := func(subject string, items ...map[string]any) *apptest.Response {
		return do(t, "POST", "/api/pii/tokens", key, map[string]any{"subjectId": subject, "items": items})
	}
	trail := func() int { return count(t, key, "/api/pii/audit", "entries") }
	used(t, key, "piiSubjects", 0, 2)
	used(t, key, "piiTokens", 0, 5)

	want(t, ingest("s1", item("EMAIL", "ann@example.com", true), item("NAME", "Ann Lee", false), item("PHONE", "+1 415 555 0132", false)), http.StatusCreated)
	used(t, key, "piiTokens", 3, 5)
	before := trail()

	// three more tokens for a new subject would make six: refused whole,
	// and the subject it would have created does not exist
	b := want(t, ingest("s2", item("NAME", "Bo Kim", false), item("EMAIL", "bo@example.com", false), item("PHONE", "+1 415 555 0133", false)), http.StatusTooManyRequests)
	msg, _ := b["error"].(string)
	if b["code"] != "QUOTA_EXCEEDED" || b["resource"] != "piiTokens" || b["used"] != float64(3) || b["limit"] != float64(5) ||
		b["requested"] != float64(3) || !strings.Contains(msg, "nothing was created") || strings.Contains(msg, "Bo Kim") {
		t.Fatalf("refusal: %v", b)
	}
	used(t, key, "piiSubjects", 1, 2)
	used(t, key, "piiTokens", 3, 5)
	if n := trail(); n != before {
		t.Fatalf("a refused ingest wrote %d audit entries", n-before)
	}

	// two fit: subjects 2 of 2, tokens 5 of 5
	want(t, ingest("s2", item("NAME", "Bo Kim", false), item("EMAIL", "bo@example.com", false)), http.StatusCreated)
	used(t, key, "piiSubjects", 2, 2)
	used(t, key, "piiTokens", 5, 5)
	// a third subject: refused on subjects, and nothing written
	refused(t, ingest("s3", item("NAME", "Cy Ode", false)), "piiSubjects", 2)
	// one more token of an existing subject: refused on tokens
	refused(t, ingest("s1", item("NAME", "Ann B. Lee", false)), "piiTokens", 5)
	used(t, key, "piiSubjects", 2, 2)
	used(t, key, "piiTokens", 5, 5)
	// the join token s1 already holds adds no row: it passes at the limit
	want(t, ingest("s1", item("EMAIL", "ann@example.com", true)), http.StatusCreated)
	used(t, key, "piiTokens", 5, 5)

	// deleting a subject destroys its key; its rows, and their count, stay
	want(t, do(t, "DELETE", "/api/pii/subjects/s2", key, nil), http.StatusOK)
	used(t, key, "piiSubjects", 2, 2)
	used(t, key, "piiTokens", 5, 5)
}
