package browsertest

import (
	"context"
	"encoding/csv"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	cdpbrowser "github.com/chromedp/cdproto/browser"
	"github.com/chromedp/chromedp"
	"github.com/robfig/cron/v3"

	"conduit/app/apptest"
	"conduit/internal/accounts"
	"conduit/internal/apikey"
	"conduit/internal/tasks"
)

// downRegistry is a registry that can be taken down: a proxy in front of
// the harness's that answers 503 while down (as frontend's enclave tests
// play an outage).
type downRegistry struct {
	*httptest.Server
	down atomic.Bool
}

func newDownRegistry(t *testing.T, host string) *downRegistry {
	t.Helper()
	f := &downRegistry{}
	proxy := httputil.NewSingleHostReverseProxy(&url.URL{Scheme: "http", Host: host})
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if f.down.Load() {
			http.Error(w, "registry under maintenance", http.StatusServiceUnavailable)
			return
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(f.Close)
	return f
}

// setValue sets a React-controlled field as typing would (the native
// setter, then an input event), replacing what it held.
func setValue(sel, value string) chromedp.Action {
	return chromedp.Evaluate(fmt.Sprintf(`(() => {
		const el = document.querySelector(%q);
		const proto = el instanceof HTMLSelectElement ? HTMLSelectElement.prototype : el instanceof HTMLTextAreaElement ? HTMLTextAreaElement.prototype : HTMLInputElement.prototype;
		Object.getOwnPropertyDescriptor(proto, "value").set.call(el, %q);
		el.dispatchEvent(new Event(el instanceof HTMLSelectElement ? "change" : "input", {bubbles: true}));
		return true;
	})()`, sel, value), nil)
}

// docShots is where the screenshots docs/dashboard.md shows are written
// when CONDUIT_DOC_SHOTS is set (else only into the artifacts folder).
func docShot(x *b, name string) {
	x.t.Helper()
	x.shot(name)
	if os.Getenv("CONDUIT_DOC_SHOTS") == "" {
		return
	}
	src, err := os.ReadFile(filepath.Join(x.out, name+".png"))
	if err != nil {
		x.t.Logf("doc screenshot %s: %v", name, err)
		return
	}
	if err := os.WriteFile(filepath.Join("..", "..", "docs", "img", name+".png"), src, 0o644); err != nil {
		x.t.Logf("doc screenshot %s: %v", name, err)
	}
}

// fits checks the page is no wider than the window (nothing scrolls
// sideways) and the header's navigation is inside it.
func (x *b) fits(page string, width int64) {
	x.t.Helper()
	var over []string
	x.run("measure "+page, chromedp.Evaluate(`(() => {
		const w = document.documentElement.clientWidth, out = [];
		if (document.documentElement.scrollWidth > w + 1) out.push("page " + document.documentElement.scrollWidth + " > " + w);
		for (const e of document.querySelectorAll("header.top, header.top nav a, .editor .canvas, main")) {
			const r = e.getBoundingClientRect();
			if (r.right > w + 1) out.push((e.className || e.tagName) + " ends at " + Math.round(r.right));
		}
		return out;
	})()`, &over))
	if len(over) > 0 {
		x.t.Errorf("%s at %d px does not fit: %v", page, width, over)
	}
}

// atWidths screenshots the current page at 1400 and 800 px (checking it
// fits, and passes axe, at 800; and fits at 768) and returns to 1400.
func (x *b) atWidths(name string) {
	x.t.Helper()
	x.run("1400 px", chromedp.EmulateViewport(1400, 900))
	docShot(x, name+"-1400")
	x.run("800 px", chromedp.EmulateViewport(800, 900))
	x.fits(name, 800)
	x.accessible(name + " at 800 px")
	docShot(x, name+"-800")
	x.run("768 px", chromedp.EmulateViewport(768, 900))
	x.fits(name, 768)
	x.run("back to 1400 px", chromedp.EmulateViewport(1400, 900))
}

// TestManagementPages is issue 31's management part in a real browser: a
// key made on the keys page with the tasks scopes (every scope offered,
// from the server's list) creates a task; an enclave made from the form
// shows its last failure while its registry is down and deploys when
// retried from the page after the registry returns, with its logs and a
// verified attestation; a task is created from the form, whose next
// firings agree with robfig/cron's; the ledger shows one line per run;
// pages fit and pass axe at 1400 and 800 px.
func TestManagementPages(t *testing.T) {
	env.RequireEnclaves(t)
	x := &b{t: t, ctx: browser(t), axe: axeSource(t), out: artifacts(t)}
	acct, email, password := env.NewLogin(t)
	x.run("1400 px", chromedp.EmulateViewport(1400, 900))

	x.open("/dashboard/keys", "Sign in")
	x.run("sign in",
		x.typeInto(`input[name=email]`, email),
		x.typeInto(`input[name=password]`, password),
		x.click("Sign in"),
		x.waitText("h1", "API keys"),
	)

	// Keys: every scope the server knows is offered, grouped.
	var offered []string
	x.run("scopes offered", chromedp.Poll(fmt.Sprintf(`document.querySelectorAll("input[name=scope]").length === %d`, len(apikey.AllScopes())), nil),
		chromedp.Evaluate(`[...document.querySelectorAll("input[name=scope]")].map(e => e.value).sort()`, &offered))
	if strings.Join(offered, " ") != strings.Join(apikey.AllScopes(), " ") {
		t.Fatalf("the keys page offers %v, the server knows %v", offered, apikey.AllScopes())
	}
	x.run("create a tasks key",
		x.typeInto(`input[name=keyName]`, "scheduler"),
		x.click("Clear"),
		chromedp.Click(`input[name=scope][value="tasks:read"]`, chromedp.ByQuery),
		chromedp.Click(`input[name=scope][value="tasks:write"]`, chromedp.ByQuery),
		chromedp.Click(`input[name=scope][value="enclaves:read"]`, chromedp.ByQuery),
		x.click("Create key"),
		chromedp.WaitVisible(`[data-testid=new-key-secret]`, chromedp.ByQuery),
	)
	var tasksKey string
	x.run("read the secret", chromedp.Value(`[data-testid=new-key-secret]`, &tasksKey, chromedp.ByQuery))
	x.run("the key lists its scopes", x.waitText("tbody", "enclaves:read, tasks:read, tasks:write"))
	x.accessible("keys")
	x.atWidths("manage-keys")

	// Enclaves: created from the form while its registry is down.
	env.PushEnclaveApp(t, "manage/echo", "v1")
	reg := newDownRegistry(t, env.Registry)
	reg.down.Store(true)
	x.open("/dashboard/enclaves", "Enclaves")
	x.run("create an enclave",
		x.click("New enclave"),
		x.typeInto(`input[name=enclaveName]`, "echo"),
		x.typeInto(`input[name=enclaveDescription]`, "the test app"),
		x.typeInto(`input[name=dockerImage]`, strings.TrimPrefix(reg.URL, "http://")+"/manage/echo:v1"),
		setValue(`input[name=memoryMiB]`, "128"),
		x.click("Create enclave"),
		x.waitText("h1", "Enclave: echo"),
	)
	var path string
	x.run("location", chromedp.Location(&path))
	enclaveID := path[strings.LastIndex(path, "/")+1:]
	// Stuck: the page refreshes itself and shows why.
	x.run("stuck with its last failure",
		x.waitText(".status", "DEPLOYING"),
		x.waitText(`[data-testid=last-failure]`, "503"),
		x.waitText(`[data-testid=last-failure]`, "attempt"),
	)
	x.accessible("enclave stuck")
	docShot(x, "manage-enclave-stuck-1400")
	// The registry returns; Retry now on the page deploys at once.
	reg.down.Store(false)
	x.run("retry", x.click("Retry now"), x.waitText(".status", "DEPLOYED"), x.waitText(`[data-testid=wallet]`, "0x"))
	if n := len(x.text(`[data-testid=wallet]`)); n < 42 {
		t.Fatalf("wallet %q", x.text(`[data-testid=wallet]`))
	}
	x.run("no failure left", chromedp.Poll(`!document.querySelector("[data-testid=last-failure]")`, nil))
	x.run("the deployed digest", x.waitText(`[data-testid=digest]`, "sha256:"))
	if d := x.text(`[data-testid=digest]`); len(strings.TrimSpace(d)) != len("sha256:")+64 {
		t.Errorf("digest %q", d)
	}
	// Logs by type: the lifecycle's history names the retry; provisioning
	// names the deployment.
	x.run("stepfunctions log", setValue(`select[name=logType]`, "stepfunctions"), x.waitText(`[data-testid=enclave-logs]`, "retry"))
	x.run("ecs log", setValue(`select[name=logType]`, "ecs"), x.waitText(`[data-testid=enclave-logs]`, "DEPLOYING → DEPLOYED"))
	x.run("follow the application log",
		setValue(`select[name=logType]`, "application"),
		chromedp.Click(`input[name=follow]`, chromedp.ByQuery),
	)
	// The application's output arrives while following.
	rec := map[string]any{}
	apptest.Eventually(t, time.Minute, "the enclave's endpoint", func() error {
		code, r := call(t, "GET", "/api/enclaves/"+enclaveID, tasksKey, nil)
		if code != http.StatusOK || r["endpoint"] == nil {
			return fmt.Errorf("%d %v", code, r)
		}
		rec = r
		return nil
	})
	apptest.Eventually(t, 30*time.Second, "the application to answer", func() error {
		res, err := http.Get("http://" + rec["endpoint"].(string) + "/from-the-dashboard-test")
		if err == nil {
			res.Body.Close()
		}
		return err
	})
	x.run("followed output", x.waitText(`[data-testid=enclave-logs]`, "/from-the-dashboard-test"))
	x.run("attestation", x.click("Fetch and verify"),
		x.waitText(`[data-testid=attestation]`, "verified"), x.waitText(`[data-testid=attestation]`, "integrity 100/100"),
		x.waitText(`[data-testid=attestation]`, "passed"))
	x.accessible("enclave")
	x.atWidths("manage-enclave")

	// Pause and resume ask first.
	x.run("pause", x.click("Pause"), x.waitText(".confirm", "Pause the enclave?"), x.click("Yes, pause"), x.waitText(".status", "PAUSED"))
	x.run("resume", x.click("Resume"), x.click("Yes, resume"), x.waitText(".status", "DEPLOYED"))

	// The key made on the keys page, with the tasks scopes, creates a task.
	code, created := call(t, "POST", "/api/tasks", tasksKey, map[string]any{
		"name": "from the key", "enclaveId": enclaveID, "schedule": "@hourly", "request": map[string]any{"method": "GET", "path": "/hello"}})
	if code != http.StatusCreated || created["id"] == nil {
		t.Fatalf("the tasks key creating a task: %d %v", code, created)
	}

	// Tasks: the form's cron helper agrees with robfig/cron (the server's
	// parser) on the next firings.
	x.open("/dashboard/tasks", "Scheduled tasks")
	x.run("open the form", x.click("New task"), chromedp.WaitVisible(`input[name=schedule]`, chromedp.ByQuery))
	for _, c := range []struct{ expr, tz string }{
		{"*/15 * * * *", "UTC"},
		{"0 9 * * MON-FRI", "America/New_York"},
		{"30 2 * * *", "Europe/Berlin"},
		{"0 0 1,15 * 5", "UTC"}, // day of month OR day of week, as robfig/cron has it
		{"5/20 3-6 * JAN-MAR,NOV-DEC ?", "Asia/Tokyo"},
		{"@weekly", "UTC"},
		{"@monthly", "Australia/Sydney"},
	} {
		var from string
		var shown []string
		x.run("schedule "+c.expr,
			setValue(`input[name=timezone]`, c.tz),
			setValue(`input[name=schedule]`, c.expr),
			chromedp.Poll(`document.querySelectorAll("[data-testid=cron-next] li").length === 5`, nil),
			chromedp.AttributeValue(`[data-testid=cron-next]`, "data-from", &from, nil, chromedp.ByQuery),
			chromedp.Evaluate(`[...document.querySelectorAll("[data-testid=cron-next] li")].map(e => e.dataset.at)`, &shown),
		)
		loc, err := time.LoadLocation(c.tz)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tasks.ParseSchedule(c.expr); err != nil {
			t.Fatalf("the server refuses %q: %v", c.expr, err)
		}
		sched, err := cron.ParseStandard(c.expr)
		if err != nil {
			t.Fatal(err)
		}
		at, err := time.Parse(time.RFC3339Nano, from)
		if err != nil {
			t.Fatal(err)
		}
		at = at.In(loc)
		var want []string
		for range 5 {
			at = sched.Next(at)
			want = append(want, at.UTC().Format("2006-01-02T15:04:05.000Z"))
		}
		if strings.Join(shown, " ") != strings.Join(want, " ") {
			t.Errorf("%q in %s: the form shows\n%v\nrobfig/cron gives\n%v", c.expr, c.tz, shown, want)
		}
	}
	// What the server refuses, the helper refuses.
	for _, bad := range []string{"* * *", "61 * * * *", "0 3 * * 7", "0 0 L * *", "@sometimes", "TZ=UTC 0 3 * * *"} {
		if _, err := tasks.ParseSchedule(bad); err == nil {
			t.Fatalf("the server takes %q", bad)
		}
		x.run("refused "+bad, setValue(`input[name=schedule]`, bad), x.waitText(`[data-testid=cron-next] .error`, "The schedule"))
	}
	// @every is aligned to the epoch, as Temporal's intervals are.
	var every []string
	x.run("@every", setValue(`input[name=schedule]`, "@every 90m"),
		chromedp.Poll(`document.querySelectorAll("[data-testid=cron-next] li").length === 5`, nil),
		chromedp.Evaluate(`[...document.querySelectorAll("[data-testid=cron-next] li")].map(e => e.dataset.at)`, &every))
	for _, s := range every {
		at, _ := time.Parse(time.RFC3339Nano, s)
		if at.Unix()%(90*60) != 0 {
			t.Errorf("@every 90m fires at %s, not on the epoch's 90-minute grid", s)
		}
	}
	x.run("create the task",
		x.typeInto(`input[name=taskName]`, "nightly"),
		setValue(`select[name=enclaveId]`, enclaveID),
		setValue(`input[name=schedule]`, "0 3 * * *"),
		setValue(`input[name=timezone]`, "Europe/Berlin"),
		setValue(`select[name=method]`, "GET"),
		setValue(`input[name=path]`, "/hello"),
		x.click("Create task"),
		x.waitText("h1", "Task: nightly"),
		x.waitText("dd", "0 3 * * *"),
	)
	x.run("edit the task",
		x.click("Edit"),
		setValue(`input[name=schedule]`, "30 4 * * *"),
		x.click("Save task"),
		x.waitText("[role=status]", "The task is saved."),
		x.waitText("dd", "30 4 * * *"),
	)
	x.accessible("task")
	x.open("/dashboard/tasks", "Scheduled tasks")
	x.run("both tasks listed", x.waitText("tbody", "nightly"), x.waitText("tbody", "from the key"))
	x.run("open the form", x.click("New task"), chromedp.WaitVisible(`input[name=schedule]`, chromedp.ByQuery))
	x.accessible("tasks")
	x.atWidths("manage-tasks")

	// Terminate asks first, then destroys.
	x.open("/dashboard/enclaves/"+enclaveID, "Enclave: echo")
	x.run("terminate", x.click("Terminate"), x.waitText(".confirm", "for good"), x.click("Yes, terminate"), x.waitText(".status", "DESTROYED"))

	// The ledger: three runs are three lines, each folding its hold,
	// release and charge.
	_, runKey, err := env.Platform.Accounts().CreateKey(context.Background(), acct, accounts.KeyRequest{Name: "runs", Permissions: apikey.AllScopes()})
	if err != nil {
		t.Fatal(err)
	}
	graph := map[string]any{
		"nodes": []map[string]any{
			{"id": "question", "type": "input", "key": "question"},
			{"id": "llm", "type": "model", "model": "local-echo", "prompt": "{{question}}", "maxTokens": 50},
			{"id": "answer", "type": "output", "key": "answer", "from": "llm"},
		},
		"edges": []map[string]any{{"from": "question", "to": "llm"}, {"from": "llm", "to": "answer"}},
	}
	code, p := call(t, "POST", "/api/pipelines", runKey, map[string]any{"name": "ledger lines", "draft": graph})
	if code != http.StatusCreated {
		t.Fatalf("pipeline: %d %v", code, p)
	}
	pid := p["id"].(string)
	if code, body := call(t, "POST", "/api/pipelines/"+pid+"/publish", runKey, nil); code != http.StatusOK {
		t.Fatalf("publish: %d %v", code, body)
	}
	var runs []string
	for i := range 3 {
		code, r := call(t, "POST", "/api/pipelines/"+pid+"/invoke", runKey, map[string]any{"inputs": map[string]any{"question": fmt.Sprintf("run %d", i)}})
		if code != http.StatusAccepted {
			t.Fatalf("invoke: %d %v", code, r)
		}
		id := r["runId"].(string)
		runs = append(runs, id)
		apptest.Eventually(t, time.Minute, "run "+id+" to finish", func() error {
			_, s := call(t, "GET", "/api/runs/"+url.PathEscape(id), runKey, nil)
			if s["status"] != "success" {
				return fmt.Errorf("run %v", s)
			}
			return nil
		})
	}
	// The app shell at 800 px leaves the editor's canvas the page's width
	// (it was about 200 px beside the palette and the panel).
	x.open("/dashboard/pipelines/"+pid, "Pipeline: ledger lines")
	x.run("800 px", chromedp.EmulateViewport(800, 900), chromedp.WaitVisible(`.canvas`, chromedp.ByQuery))
	var canvas float64
	x.run("canvas width", chromedp.Evaluate(`document.querySelector(".canvas").getBoundingClientRect().width`, &canvas))
	if canvas < 600 {
		t.Errorf("at 800 px the canvas is %.0f px wide", canvas)
	}
	x.fits("editor", 800)
	x.run("768 px", chromedp.EmulateViewport(768, 900))
	x.fits("editor", 768)
	docShot(x, "manage-editor-800")
	x.run("1400 px", chromedp.EmulateViewport(1400, 900))

	x.open("/dashboard/billing", "Credits")
	for _, id := range runs {
		x.run("line of "+id, chromedp.Poll(fmt.Sprintf(`[...document.querySelectorAll("tr.ledger-line")].filter(r => r.textContent.includes(%q)).length === 1`, "run/"+id), nil))
	}
	// Every hold (runs, and the enclave's metered uptime) is one line; the
	// entries of no hold are lines of their own — counted from the
	// per-entry view of the same ledger. (Read again with the page if the
	// enclave's last uptime was metered in between.)
	want := 0
	apptest.Eventually(t, 30*time.Second, "one ledger line per hold", func() error {
		_, all := call(t, "GET", "/api/account/ledger?limit=200", runKey, nil)
		entries := all["entries"].([]any)
		holds := map[string]bool{}
		want = 0
		for _, e := range entries {
			e := e.(map[string]any)
			switch e["type"] {
			case "hold", "release", "charge":
				if !holds[e["reference"].(string)] {
					holds[e["reference"].(string)] = true
					want++
				}
			default:
				want++
			}
		}
		var lines, parts int
		x.run("count lines", x.click("Refresh"), chromedp.Poll(`document.querySelectorAll("tr.ledger-line").length > 0`, nil),
			chromedp.Evaluate(`document.querySelectorAll("tr.ledger-line").length`, &lines),
			chromedp.Evaluate(`document.querySelectorAll("tr.ledger-parts").length`, &parts))
		if parts != 0 || len(entries) < want+2*3 {
			t.Fatalf("%d open parts, %d entries for %d lines", parts, len(entries), want)
		}
		if lines != want {
			return fmt.Errorf("the ledger shows %d lines, want %d (of %d entries):\n%s", lines, want, len(entries), x.text("[data-testid=ledger] tbody"))
		}
		return nil
	})
	x.run("expand a run",
		chromedp.Click(fmt.Sprintf(`//tr[contains(@class,"ledger-line")][contains(., %q)]//button`, "run/"+runs[0]), chromedp.BySearch),
		chromedp.Poll(`document.querySelectorAll("tr.ledger-parts").length === 3`, nil),
		x.waitText("tr.ledger-parts", "hold"), x.waitText("tr.ledger-parts", "release"), x.waitText("tr.ledger-parts", "charge"),
	)
	// Rounded for people, exact on hover.
	var amount []string
	x.run("exact amount", chromedp.Evaluate(`(() => { const a = document.querySelector("tr.ledger-line .amount"); return [a.title, a.textContent]; })()`, &amount))
	if len(amount) != 2 || !strings.Contains(amount[0], "micro-USD") || strings.Count(amount[1], ".") != 1 {
		t.Errorf("amount %q", amount)
	}
	// The CSV export: every line once, exact amounts that sum to the
	// balance, each run's parts.
	downloads := t.TempDir()
	x.run("export",
		cdpbrowser.SetDownloadBehavior(cdpbrowser.SetDownloadBehaviorBehaviorAllow).WithDownloadPath(downloads),
		x.click("Export CSV"), x.waitText("[role=status]", fmt.Sprintf("Exported %d lines", want)))
	var rows [][]string
	apptest.Eventually(t, 30*time.Second, "the exported CSV", func() error {
		files, _ := filepath.Glob(filepath.Join(downloads, "conduit-ledger-*.csv"))
		if len(files) != 1 {
			return fmt.Errorf("downloads: %v", files)
		}
		f, err := os.Open(files[0])
		if err != nil {
			return err
		}
		defer f.Close()
		rows, err = csv.NewReader(f).ReadAll()
		return err
	})
	if len(rows) != want+1 || strings.Join(rows[0], ",") != "id,createdAt,type,amountUsd,amountMicros,reference,description,parts" {
		t.Fatalf("CSV: %d rows (want %d lines), header %v", len(rows), want, rows[0])
	}
	var sum int64
	csvRuns := 0
	for _, r := range rows[1:] {
		m, err := strconv.ParseInt(r[4], 10, 64)
		if err != nil {
			t.Fatalf("CSV amountMicros %q", r[4])
		}
		sum += m
		if strings.HasPrefix(r[5], "run/") {
			csvRuns++
			if !strings.Contains(r[7], "hold:") || !strings.Contains(r[7], "release:") || !strings.Contains(r[7], "charge:") {
				t.Errorf("CSV parts of %s: %q", r[5], r[7])
			}
		}
	}
	_, bal := call(t, "GET", "/api/account/balance", runKey, nil)
	if csvRuns != len(runs) || fmt.Sprintf("%.6f", float64(sum)/1e6) != fmt.Sprintf("%.6f", bal["balanceUsd"].(float64)) {
		t.Errorf("CSV: %d runs, amounts sum to %d micro-USD; balance %v", csvRuns, sum, bal["balanceUsd"])
	}
	x.accessible("credits")
	x.atWidths("manage-credits")

	// The server-rendered credits page (every 402's topUpUrl) shows the
	// balance to the signed-in human, in the app's style, and fits 1024 px.
	x.run("credits page", chromedp.Navigate(env.URL+"/dashboard/credits"), x.waitText("h1", "Top up credits"),
		x.waitText(`[data-testid=page-balance]`, "USD"))
	var styled bool
	x.run("app stylesheet", chromedp.Evaluate(`getComputedStyle(document.querySelector("header.top")).backgroundColor === "rgb(20, 33, 61)"`, &styled))
	if !styled {
		t.Error("the credits page does not wear the app's stylesheet")
	}
	x.run("1024 px", chromedp.EmulateViewport(1024, 900))
	x.fits("credits page", 1024)
	x.accessible("credits page")
	docShot(x, "manage-credits-page-1024")
}
