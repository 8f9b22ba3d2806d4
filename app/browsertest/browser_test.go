// Package browsertest drives the dashboard in a real headless Chromium
// (Debian's chromium package) against the real platform of app/apptest:
// real PostgreSQL, Temporal, worker and HTTP server. docs/dashboard.md
// describes what it proves.
package browsertest

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/input"
	cdpruntime "github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"conduit/app/apptest"
	"conduit/ui/uitest"
)

var env *apptest.Env

func TestMain(m *testing.M) {
	// The platform links runs to a Temporal Web UI at this address, as a
	// deployment with temporal.ui_url does (the harness runs no UI; the
	// tests read the link).
	os.Setenv("CONDUIT_TEMPORAL_UI_URL", temporalUI)
	apptest.Main(m, &env)
}

const temporalUI = "http://127.0.0.1:8233"

// chromiumPath is the browser the tests drive: $CONDUIT_CHROMIUM, else
// Debian's /usr/bin/chromium.
func chromiumPath(t *testing.T) string {
	t.Helper()
	p := os.Getenv("CONDUIT_CHROMIUM")
	if p == "" {
		p = "/usr/bin/chromium"
	}
	if _, err := exec.LookPath(p); err != nil {
		t.Fatalf("the browser tests need Chromium at %s (Debian: apt-get install chromium; or set CONDUIT_CHROMIUM): %v", p, err)
	}
	return p
}

// axeSource is axe-core's browser build, from the dashboard's npm
// locked npm dependencies.
func axeSource(t *testing.T) string {
	t.Helper()
	p := filepath.Join(uitest.Deps(t), "node_modules", "axe-core", "axe.min.js")
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatalf("the accessibility check needs axe-core: %v", err)
	}
	return string(b)
}

// artifacts is where screenshots go: $CONDUIT_ARTIFACTS, else
// app/browsertest/testdata/out (ignored by git).
func artifacts(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("CONDUIT_ARTIFACTS")
	if dir == "" {
		dir = filepath.Join("testdata", "out")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// browser starts a fresh headless Chromium with an empty profile and
// returns a tab's context.
func browser(t *testing.T) context.Context {
	t.Helper()
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(chromiumPath(t)),
		chromedp.Flag("headless", true),
		chromedp.Flag("no-sandbox", true),
		chromedp.Flag("disable-gpu", true),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("no-first-run", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1600, 1000),
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx, chromedp.WithErrorf(t.Logf))
	// Cancel closes the browser and waits for it to exit, before the
	// profile folder is removed.
	t.Cleanup(func() { _ = chromedp.Cancel(ctx); cancel(); cancelAlloc() })
	// Start the browser now, so a broken install fails here, clearly.
	if err := chromedp.Run(ctx); err != nil {
		t.Fatalf("starting Chromium: %v", err)
	}
	return ctx
}

// b wraps a tab with the helpers a test step needs.
type b struct {
	t   *testing.T
	ctx context.Context
	axe string
	out string
}

// run runs actions; each step has two minutes at most, so a page that
// never shows what the test waits for fails the test instead of hanging.
func (x *b) run(what string, actions ...chromedp.Action) {
	x.t.Helper()
	ctx, cancel := context.WithTimeout(x.ctx, 2*time.Minute)
	defer cancel()
	if err := chromedp.Run(ctx, actions...); err != nil {
		var text string
		_ = chromedp.Run(x.ctx, chromedp.Text("body", &text, chromedp.ByQuery))
		x.shot("failed-" + strings.ReplaceAll(what, " ", "-"))
		x.t.Fatalf("%s: %v\npage text:\n%s", what, err, text)
	}
}

// open loads a dashboard page and waits for its heading.
func (x *b) open(path, heading string) {
	x.t.Helper()
	x.run("open "+path, chromedp.Navigate(env.URL+path), x.waitText("h1", heading))
}

// waitText waits until the first element matching sel contains text.
func (x *b) waitText(sel, text string) chromedp.Action {
	js := fmt.Sprintf(`[...document.querySelectorAll(%q)].some(e => e.textContent.includes(%q))`, sel, text)
	return chromedp.Poll(js, nil, chromedp.WithPollingInterval(100*time.Millisecond))
}

// click clicks the button (or link) whose text is exactly label.
func (x *b) click(label string) chromedp.Action {
	return chromedp.Click(fmt.Sprintf(`//*[self::button or self::a][normalize-space()=%q]`, label), chromedp.BySearch)
}

// typeInto focuses the field and types text with real key events.
func (x *b) typeInto(sel, text string) chromedp.Action {
	return chromedp.SendKeys(sel, text, chromedp.ByQuery)
}

func (x *b) text(sel string) string {
	x.t.Helper()
	var s string
	x.run("read "+sel, chromedp.Text(sel, &s, chromedp.ByQuery))
	return s
}

// shot saves a full-page screenshot as <name>.png in the artifacts folder.
func (x *b) shot(name string) {
	var buf []byte
	if err := chromedp.Run(x.ctx, chromedp.FullScreenshot(&buf, 100)); err != nil {
		x.t.Logf("screenshot %s: %v", name, err)
		return
	}
	if err := os.WriteFile(filepath.Join(x.out, name+".png"), buf, 0o644); err != nil {
		x.t.Logf("screenshot %s: %v", name, err)
	}
}

type violation struct {
	ID     string   `json:"id"`
	Impact string   `json:"impact"`
	Help   string   `json:"help"`
	Nodes  []string `json:"nodes"`
}

// accessible runs axe-core on the page and fails on any serious or
// critical violation.
func (x *b) accessible(page string) {
	x.t.Helper()
	var vs []violation
	x.run("axe on "+page,
		chromedp.Evaluate(x.axe, nil),
		chromedp.Evaluate(`axe.run(document, {resultTypes: ["violations"]}).then(r => r.violations
			.filter(v => v.impact === "serious" || v.impact === "critical")
			.map(v => ({id: v.id, impact: v.impact, help: v.help, nodes: v.nodes.slice(0, 5).map(n => n.target.join(" "))})))`,
			&vs, func(p *cdpruntime.EvaluateParams) *cdpruntime.EvaluateParams { return p.WithAwaitPromise(true) }),
	)
	for _, v := range vs {
		x.t.Errorf("accessibility (%s) on %s: %s [%s] at %v", v.Impact, page, v.Help, v.ID, v.Nodes)
	}
}

// drag presses the mouse on the source handle of node from, moves it in
// steps to the target handle of node to and releases it there: React
// Flow's own way of connecting two nodes.
func (x *b) drag(from, to string) {
	x.t.Helper()
	var pts []float64
	x.run("find the handles of "+from+" and "+to, chromedp.Evaluate(fmt.Sprintf(`(() => {
		const c = s => { const r = document.querySelector(s).getBoundingClientRect(); return [r.x + r.width/2, r.y + r.height/2]; };
		return [...c('.react-flow__node[data-id=%q] .react-flow__handle.source'), ...c('.react-flow__node[data-id=%q] .react-flow__handle.target')];
	})()`, from, to), &pts))
	x1, y1, x2, y2 := pts[0], pts[1], pts[2], pts[3]
	mouse := func(typ input.MouseType, px, py float64, buttons int64) chromedp.Action {
		return chromedp.ActionFunc(func(ctx context.Context) error {
			ev := input.DispatchMouseEvent(typ, px, py).WithButton(input.Left).WithButtons(buttons)
			if typ != input.MouseMoved {
				ev = ev.WithClickCount(1)
			}
			return ev.Do(ctx)
		})
	}
	acts := []chromedp.Action{mouse(input.MouseMoved, x1, y1, 0), mouse(input.MousePressed, x1, y1, 1)}
	const steps = 12
	for i := 1; i <= steps; i++ {
		f := float64(i) / steps
		acts = append(acts, mouse(input.MouseMoved, x1+(x2-x1)*f, y1+(y2-y1)*f, 1))
	}
	acts = append(acts, mouse(input.MouseReleased, x2, y2, 0))
	x.run("drag "+from+" to "+to, acts...)
}

// call is a plain HTTP call to the API with an API key.
func call(t *testing.T, method, path, key string, body any) (int, map[string]any) {
	t.Helper()
	var r io.Reader
	if body != nil {
		bs, _ := json.Marshal(body)
		r = strings.NewReader(string(bs))
	}
	req, err := http.NewRequest(method, env.URL+path, r)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+key)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	res, err := env.HTTP.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var out map[string]any
	_ = json.NewDecoder(res.Body).Decode(&out)
	return res.StatusCode, out
}
