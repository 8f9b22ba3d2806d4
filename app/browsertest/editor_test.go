package browsertest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/chromedp"

	"conduit/internal/accounts"
	"conduit/internal/apikey"
)

// TestEditorMediaPipeline is issue 31's editor, progress and media in a
// real browser: a speech, a music and a video node added from the palette
// and set with the catalog's pickers (voice, model, length and aspect
// ratio with their menu prices), a variable inserted with the template
// autocomplete (which draws its edge), the graph tidied, published with a
// version note (shown on the Versions tab), run
// from Try it; the run's audio and video play inline (their duration read
// from the media elements), each media node shows what it cost, the run
// page draws the run on its graph, and the media library plays the files
// with links to the run that made them. Every page touched passes axe.
//
// With CONDUIT_DOCS_SHOTS=1 it also writes the editor and run page at
// 1400 and 800 px wide into docs/img/.
func TestEditorMediaPipeline(t *testing.T) {
	x := &b{t: t, ctx: browser(t), axe: axeSource(t), out: artifacts(t)}
	_, email, password := env.NewLogin(t)
	x.open("/dashboard/pipelines", "Sign in")
	x.run("sign in",
		x.typeInto(`input[name=email]`, email),
		x.typeInto(`input[name=password]`, password),
		x.click("Sign in"),
		x.waitText("h1", "Pipelines"),
	)
	x.run("create pipeline",
		x.typeInto(`input[name=pipelineName]`, "Studio"),
		x.click("Create pipeline"),
		x.waitText("h1", "Pipeline: Studio"),
	)

	// Every node kind is in the palette.
	var palette []string
	x.run("palette", chromedp.Evaluate(`[...document.querySelectorAll(".palette button[data-kind]")].map(b => b.dataset.kind)`, &palette))
	for _, k := range []string{"input", "prompt", "model", "guardrail", "speech", "music", "video", "output"} {
		if !contains(palette, k) {
			t.Fatalf("the palette has %v, no %s", palette, k)
		}
	}
	x.run("add nodes",
		chromedp.Click(`button[data-kind=input]`, chromedp.ByQuery),
		chromedp.Click(`button[data-kind=speech]`, chromedp.ByQuery),
		chromedp.Click(`button[data-kind=music]`, chromedp.ByQuery),
		chromedp.Click(`button[data-kind=video]`, chromedp.ByQuery),
		chromedp.Click(`button[data-kind=output]`, chromedp.ByQuery),
		chromedp.Click(`button[data-kind=output]`, chromedp.ByQuery),
		chromedp.Click(`button[data-kind=output]`, chromedp.ByQuery),
		chromedp.WaitVisible(`.react-flow__node[data-id=output3]`, chromedp.ByQuery),
	)
	// New nodes are laid out: none overlaps another.
	var overlaps int
	x.run("no overlaps", chromedp.Evaluate(`(() => {
		const r = [...document.querySelectorAll(".react-flow__node")].map(n => n.getBoundingClientRect());
		let n = 0;
		for (let i = 0; i < r.length; i++) for (let j = i + 1; j < r.length; j++)
			if (r[i].left < r[j].right && r[j].left < r[i].right && r[i].top < r[j].bottom && r[j].top < r[i].bottom) n++;
		return n;
	})()`, &overlaps))
	if overlaps != 0 {
		t.Errorf("%d pairs of new nodes overlap on the canvas", overlaps)
	}

	// Speech: the variable is typed with the autocomplete, which also
	// draws the edge from input1; the voice comes from the menu.
	x.selectNode("speech1")
	x.run("autocomplete",
		x.typeInto(`#field-text`, "Welcome. {{in"),
		chromedp.WaitVisible(`[role=listbox] [role=option]`, chromedp.ByQuery),
		x.waitText(`[role=listbox]`, "{{input1}}"),
		enter(),
		chromedp.Poll(`document.querySelector("#field-text").value === "Welcome. {{input1}}"`, nil),
		x.waitText("[role=status]", "Connected input1 to speech1"),
	)
	voice := x.chooseSecond("#field-voice")
	x.chooseSecond("#field-model")
	x.run("speech summary", x.waitText(`.react-flow__node[data-id=speech1]`, "voice "+voice))
	x.accessible("editor, speech node")

	// Music and video: the lengths the model sells, each with its price.
	x.connect("input1", "music1")
	x.selectNode("music1")
	x.chooseSecond("#field-seconds")
	x.run("music price", x.waitText(`[data-testid=price-music1]`, "USD"))
	x.connect("input1", "video1")
	x.selectNode("video1")
	x.chooseSecond("#field-seconds")
	x.choose("#field-aspectRatio", "9:16")
	x.run("video price", x.waitText(`[data-testid=price-video1]`, "USD"), x.waitText(`.react-flow__node[data-id=video1]`, "9:16"))
	var videoOptions []string
	x.run("video options", chromedp.Evaluate(`[...document.querySelectorAll("#field-seconds option")].map(o => o.textContent)`, &videoOptions))
	if len(videoOptions) < 2 || !strings.Contains(videoOptions[1], "USD") {
		t.Errorf("the video lengths offered: %v, want each with its price", videoOptions)
	}
	x.connect("speech1", "output1")
	x.connect("music1", "output2")
	x.connect("video1", "output3")
	x.run("tidy", x.click("Tidy layout"), x.waitText("[role=status]", "Laid out the graph"))
	x.run("publish",
		x.typeInto(`input[name=versionNote]`, "Speech, music and video from one line"),
		x.click("Publish"),
		x.waitText("[data-testid=serving-version]", "1"),
		x.waitText("[role=status]", "Published version 1"),
	)
	x.accessible("editor")
	x.shot("editor-media")
	x.docShots("editor")
	x.run("version note", x.click("Versions"), x.waitText("[data-testid=note-v1]", "Speech, music and video from one line"))
	x.accessible("versions")

	// Try it: the run's progress, then its files play inline.
	x.run("try it",
		x.click("Try it"),
		x.typeInto(`textarea[name=input-question]`, "the harbour at dawn"),
		x.click("Run"),
		chromedp.WaitVisible(`table.nodes`, chromedp.ByQuery),
	)
	x.run("run finished", x.waitText("[data-testid=run-status]", "success"))
	for _, o := range []struct{ key, tag string }{{"answer", "audio"}, {"answer2", "audio"}, {"answer3", "video"}} {
		x.plays(fmt.Sprintf(`[data-testid=output-%s] %s`, o.key, o.tag))
	}
	for _, n := range []string{"speech1", "music1", "video1"} {
		if c := x.cost(n); c <= 0 {
			t.Errorf("node %s shows a cost of %v, want more than 0", n, c)
		}
	}
	x.accessible("try it, media")
	x.shot("tryit-media")

	// The run page: the same players, the run drawn on its graph.
	x.run("open run", chromedp.Click(`.trace .facts a`, chromedp.ByQuery), x.waitText("h1", "Run"), x.waitText("table.nodes", "video1"))
	x.run("run graph", chromedp.WaitVisible(`[data-testid=run-graph] .react-flow__node[data-id=video1] .rstatus-success`, chromedp.ByQuery))
	x.plays(`[data-testid=output-answer3] video`)
	if c := x.cost("video1"); c <= 0 {
		t.Errorf("the run page shows video1 costing %v", c)
	}
	x.accessible("run, media")
	x.shot("run-media")
	x.docShots("run")

	// The library plays what the run made, linked to it, filtered by kind.
	x.open("/dashboard/media", "Media and purchases")
	x.run("library", chromedp.WaitVisible(`.media-grid li video`, chromedp.ByQuery), chromedp.WaitVisible(`.media-grid li audio`, chromedp.ByQuery))
	x.plays(`.media-grid li video`)
	x.run("linked to the run", chromedp.WaitVisible(`.media-grid li a[href^="/dashboard/runs/"]`, chromedp.ByQuery))
	x.choose(`select[name=kind]`, "audio")
	x.run("kind filter", chromedp.Poll(`(() => { const l = [...document.querySelectorAll(".media-grid li")]; return l.length === 2 && l.every(i => i.dataset.kind === "audio"); })()`, nil))
	// The origin filter is the API's: the run's two generated audio files,
	// then no import at all.
	x.choose(`select[name=origin]`, "generated")
	x.run("origin filter", chromedp.Poll(`(() => { const l = [...document.querySelectorAll(".media-grid li")]; return l.length === 2 && l.every(i => i.dataset.kind === "audio"); })()`, nil))
	x.choose(`select[name=origin]`, "imported")
	x.run("no import", chromedp.WaitNotPresent(`.media-grid li`, chromedp.ByQuery), x.waitText("p", "Nothing matches these filters"))
	x.accessible("media")
	x.shot("media-library")
}

// enter presses Enter as a key only (no character follows), the way the
// browser sends it when the page takes the key itself.
func enter() chromedp.Action {
	return chromedp.ActionFunc(func(ctx context.Context) error {
		if err := input.DispatchKeyEvent(input.KeyRawDown).WithKey("Enter").WithCode("Enter").WithWindowsVirtualKeyCode(13).Do(ctx); err != nil {
			return err
		}
		return input.DispatchKeyEvent(input.KeyUp).WithKey("Enter").WithCode("Enter").WithWindowsVirtualKeyCode(13).Do(ctx)
	})
}

func contains(xs []string, s string) bool {
	for _, x := range xs {
		if x == s {
			return true
		}
	}
	return false
}

// selectNode clicks a node on the editor's canvas and waits for its panel.
func (x *b) selectNode(id string) {
	x.t.Helper()
	x.run("select "+id, chromedp.Click(fmt.Sprintf(`.canvas .react-flow__node[data-id=%q]`, id), chromedp.ByQuery), x.waitText("#panel-h", id))
}

// connect draws an edge with the panel's "Connect to" (the keyboard way).
func (x *b) connect(from, to string) {
	x.t.Helper()
	x.selectNode(from)
	x.run("connect "+from+" to "+to,
		x.setSelect(`//label[starts-with(normalize-space(), "Connect to")]/select`, to),
		x.click("Connect"),
		x.waitText("[role=status]", fmt.Sprintf("Connected %s to %s", from, to)),
	)
}

// setSelect picks value in the select at the XPath or CSS selector sel as
// a person would: the value changes and the change event fires.
func (x *b) setSelect(sel, value string) chromedp.Action {
	find := fmt.Sprintf(`document.querySelector(%q)`, sel)
	if strings.HasPrefix(sel, "//") {
		find = fmt.Sprintf(`document.evaluate(%q, document, null, XPathResult.FIRST_ORDERED_NODE_TYPE, null).singleNodeValue`, sel)
	}
	return chromedp.Evaluate(fmt.Sprintf(`(() => { const s = %s; s.value = %q; s.dispatchEvent(new Event("change", {bubbles: true})); return s.value; })()`, find, value), nil)
}

func (x *b) choose(sel, value string) {
	x.t.Helper()
	x.run("choose "+value+" in "+sel, chromedp.WaitVisible(sel, chromedp.ByQuery), x.setSelect(sel, value),
		chromedp.Poll(fmt.Sprintf(`document.querySelector(%q).value === %q`, sel, value), nil))
}

// chooseSecond picks the select's second option (the first one on the
// menu after "default"), once the catalog has filled it, and returns it.
func (x *b) chooseSecond(sel string) string {
	x.t.Helper()
	var v string
	x.run("options of "+sel,
		chromedp.Poll(fmt.Sprintf(`document.querySelector(%q)?.options.length > 1`, sel), nil),
		chromedp.Evaluate(fmt.Sprintf(`document.querySelector(%q).options[1].value`, sel), &v))
	x.choose(sel, v)
	return v
}

// plays waits for the media element's metadata (its duration is more than
// zero), then plays it muted (what a headless browser allows without a
// gesture) until its time moves.
func (x *b) plays(sel string) {
	x.t.Helper()
	var d float64
	x.run("media "+sel,
		chromedp.WaitVisible(sel, chromedp.ByQuery),
		chromedp.Poll(fmt.Sprintf(`(() => { const m = document.querySelector(%q); return m.readyState >= 1 && m.duration > 0; })()`, sel), nil),
		chromedp.Evaluate(fmt.Sprintf(`(() => { const m = document.querySelector(%q); m.muted = true; m.play(); return m.duration; })()`, sel), &d),
		chromedp.Poll(fmt.Sprintf(`document.querySelector(%q).currentTime > 0`, sel), nil),
	)
	if d <= 0 {
		x.t.Errorf("%s: duration %v", sel, d)
	}
	x.t.Logf("%s plays, %.2f s long", sel, d)
}

// cost reads a node's cost from the trace table, in USD.
func (x *b) cost(node string) float64 {
	x.t.Helper()
	s := strings.TrimSpace(x.text(fmt.Sprintf(`[data-testid=cost-%s]`, node)))
	c, err := strconv.ParseFloat(s, 64)
	if err != nil {
		x.t.Errorf("node %s's cost reads %q", node, s)
	}
	return c
}

// docShots saves the page at 1400 and 800 px wide into docs/img/ when
// CONDUIT_DOCS_SHOTS is set (the screenshots docs/dashboard.md shows).
func (x *b) docShots(name string) {
	x.t.Helper()
	if os.Getenv("CONDUIT_DOCS_SHOTS") == "" {
		return
	}
	dir := filepath.Join("..", "..", "docs", "img")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		x.t.Fatal(err)
	}
	for _, w := range []int64{1400, 800} {
		var buf []byte
		x.run(fmt.Sprintf("screenshot %s at %d", name, w), chromedp.EmulateViewport(w, 900), chromedp.FullScreenshot(&buf, 100))
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("%s-%d.png", name, w)), buf, 0o644); err != nil {
			x.t.Fatal(err)
		}
	}
	x.run("viewport back", chromedp.EmulateViewport(1600, 1000))
}

// TestTryItStreamsAndShowsTheFallback: Try it shows a model's answer as it
// streams, before the run ends (a slow model, one token every 25 ms), then
// the finished run; and a guardrail whose fallback text was served says
// so instead of a plain success.
func TestTryItStreamsAndShowsTheFallback(t *testing.T) {
	x := &b{t: t, ctx: browser(t), axe: axeSource(t), out: artifacts(t)}
	acct, email, password := env.NewLogin(t)
	_, key, err := env.Platform.Accounts().CreateKey(context.Background(), acct, accounts.KeyRequest{Name: "setup", Permissions: apikey.AllScopes()})
	if err != nil {
		t.Fatal(err)
	}
	publish := func(name string, graph map[string]any) string {
		t.Helper()
		code, p := call(t, "POST", "/api/pipelines", key, map[string]any{"name": name, "draft": graph})
		if code != 201 {
			t.Fatalf("create %s: %d %v", name, code, p)
		}
		id := p["id"].(string)
		if code, out := call(t, "POST", "/api/pipelines/"+id+"/publish", key, nil); code != 200 {
			t.Fatalf("publish %s: %d %v", name, code, out)
		}
		return id
	}
	slow := publish("Slow talker", map[string]any{
		"nodes": []map[string]any{
			{"id": "q", "type": "input", "key": "question"},
			{"id": "llm", "type": "model", "model": "local-echo-slow", "prompt": "{{q}}", "maxTokens": 400},
			{"id": "a", "type": "output", "key": "answer", "from": "llm"},
		},
		"edges": []map[string]string{{"from": "q", "to": "llm"}, {"from": "llm", "to": "a"}},
	})
	guarded := publish("Guarded", map[string]any{
		"nodes": []map[string]any{
			{"id": "q", "type": "input", "key": "question"},
			{"id": "g", "type": "guardrail", "input": "q", "rules": []map[string]any{{"kind": "maxLength", "value": 5}}, "action": "fallback", "fallback": "Too long to repeat."},
			{"id": "a", "type": "output", "key": "answer", "from": "g"},
		},
		"edges": []map[string]string{{"from": "q", "to": "g"}, {"from": "g", "to": "a"}},
	})

	x.open("/dashboard/pipelines", "Sign in")
	x.run("sign in", x.typeInto(`input[name=email]`, email), x.typeInto(`input[name=password]`, password), x.click("Sign in"), x.waitText("h1", "Pipelines"))

	words := strings.Repeat("streaming tokens arrive one by one ", 12)
	x.open("/dashboard/pipelines/"+slow, "Pipeline: Slow talker")
	x.run("stream",
		x.click("Try it"),
		x.typeInto(`textarea[name=input-question]`, words),
		x.click("Run"),
		// Part of the answer is on the page while the run still runs.
		chromedp.Poll(`(() => { const s = document.querySelector("[data-testid=streamed]")?.textContent ?? "";
			return s.length > 0 && s.length < 300 && document.querySelector("[data-testid=run-status]")?.textContent.includes("running"); })()`, nil),
		x.waitText("[data-testid=run-status]", "success"),
		x.waitText("[data-testid=output-answer]", "tokens arrive one by one"),
	)
	var streamed, answer string
	x.run("read", chromedp.Text(`[data-testid=streamed]`, &streamed, chromedp.ByQuery), chromedp.Text(`[data-testid=output-answer]`, &answer, chromedp.ByQuery))
	if strings.TrimSpace(streamed) != strings.TrimSpace(answer) {
		t.Errorf("the streamed answer %q is not the run's output %q", streamed, answer)
	}
	x.accessible("try it, streaming")

	x.open("/dashboard/pipelines/"+guarded, "Pipeline: Guarded")
	x.run("fallback",
		x.click("Try it"),
		x.typeInto(`textarea[name=input-question]`, "far more than five characters"),
		x.click("Run"),
		x.waitText("[data-testid=run-status]", "success"),
		x.waitText("[data-testid=output-answer]", "Too long to repeat."),
		x.waitText(`table.nodes tr[data-node=g]`, "fallback served"),
	)
	x.accessible("try it, fallback")
	x.shot("tryit-fallback")
}
