package browsertest

import (
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
)

// TestDashboardFlow is the "done means", in a real browser: sign
// up, confirm the email through the dev mailbox's link, sign in, buy the 50 pack through the local checkout (+52.50 once, even when
// its webhook is replayed), create a key, build a three-node pipeline on
// the canvas by adding nodes and dragging edges between their handles,
// publish, run it from the try-it panel, read the trace, publish a second
// version, diff the two, roll back to v1, and see the API serve v1 to the
// new key. Every main page passes axe-core with no serious or critical
// violation, and is saved as a screenshot.
func TestDashboardFlow(t *testing.T) {
	x := &b{t: t, ctx: browser(t), axe: axeSource(t), out: artifacts(t)}
	email := fmt.Sprintf("ada-%d@example.com", time.Now().UnixNano())

	// Signed out, every dashboard path shows the sign-in form.
	x.open("/dashboard/pipelines", "Sign in")
	x.accessible("sign in")
	x.shot("signin")
	x.run("go to sign-up", x.click("Create an account"), x.waitText("h1", "Create an account"))
	x.run("sign up",
		x.typeInto(`input[name=email]`, email),
		x.typeInto(`input[name=password]`, "correct horse battery staple"),
		x.click("Create account"),
		x.waitText("h1", "Check your email"),
		x.waitText(`[role=status]`, email),
	)
	x.accessible("check your email")
	x.shot("signup-check-email")
	// The free credit waits for the email: the dev mailbox shows the
	// message, and its link confirms the address.
	x.run("open the mailbox", chromedp.Navigate(env.URL+"/dev/mailbox"), x.waitText(".to", email))
	x.shot("mailbox")
	var link string
	x.run("read the link", chromedp.AttributeValue(fmt.Sprintf(`//article[.//strong[@class="to"][normalize-space()=%q]]//a[@class="link"]`, email), "href", &link, nil, chromedp.BySearch))
	x.run("follow the link", chromedp.Navigate(link), x.waitText("h1", "Email confirmed"), x.waitText("p", "5 USD of free credit has been added"))
	x.shot("email-confirmed")
	x.open("/dashboard/pipelines", "Sign in")
	x.run("sign in",
		x.typeInto(`input[name=email]`, email),
		x.typeInto(`input[name=password]`, "correct horse battery staple"),
		x.click("Sign in"),
		x.waitText("h1", "Pipelines"),
		x.waitText("header", email),
	)

	// Credits: 5.00 of free credit, then the 50 pack through checkout.
	x.open("/dashboard/billing", "Credits")
	x.run("balance", x.waitText(`[data-testid=balance]`, "5.00 USD"), x.waitText("table", "free_grant"))
	x.accessible("credits")
	x.shot("credits")
	session := buyPack(x)
	x.run("pack credited", x.waitText(`[role=status]`, "the pack is credited to your balance."),
		x.waitText(`[data-testid=balance]`, "57.50 USD"), x.waitText("table", "pack"))
	replayWebhook(x, session)
	x.run("refresh", x.click("Refresh"), x.waitText(`[data-testid=balance]`, "57.50 USD"))
	var packs int
	x.run("count pack entries", chromedp.Evaluate(`[...document.querySelectorAll("tbody tr")].filter(r => r.children[1]?.textContent === "pack").length`, &packs))
	if packs != 1 {
		t.Fatalf("the ledger shows %d pack entries after the webhook was replayed, want 1", packs)
	}
	x.shot("credits-after-pack")
	// The ledger's type filter.
	x.run("filter ledger",
		chromedp.Click(`//label[normalize-space()="free_grant"]/input`, chromedp.BySearch),
		x.click("Apply filters"),
		chromedp.Poll(`(() => { const r = [...document.querySelectorAll("tbody tr")]; return r.length === 1 && r[0].children[1].textContent === "free_grant"; })()`, nil),
	)

	// API keys: the secret is shown once; deactivate and reactivate work.
	x.open("/dashboard/keys", "API keys")
	x.run("create key",
		x.typeInto(`input[name=keyName]`, "ci"),
		chromedp.Click(`input[name=scope][value="pipelines:write"]`, chromedp.ByQuery),
		x.click("Create key"),
		x.waitText(".secret", "shown once"),
	)
	var secret string
	x.run("read secret", chromedp.Value(`[data-testid=new-key-secret]`, &secret, chromedp.ByQuery))
	if !strings.HasPrefix(secret, "cnd_") {
		t.Fatalf("the new key's secret is %q", secret)
	}
	x.run("copy secret", x.click("Copy secret"), x.waitText(".secret button", "Copied"))
	x.accessible("keys")
	x.shot("keys")
	x.run("deactivate", x.click("Deactivate"), x.waitText("tbody", "inactive"), x.click("Reactivate"),
		chromedp.Poll(`document.querySelector("tbody tr td:nth-child(4)")?.textContent === "active"`, nil))
	if code, _ := call(t, "GET", "/api/pipelines", secret, nil); code != 200 {
		t.Fatalf("the reactivated key lists pipelines with %d", code)
	}

	// The editor: three nodes from the palette, two edges dragged on the
	// canvas, published as v1.
	x.open("/dashboard/pipelines", "Pipelines")
	x.accessible("pipelines")
	x.run("create pipeline",
		x.typeInto(`input[name=pipelineName]`, "Greeter"),
		x.click("Create pipeline"),
		x.waitText("h1", "Pipeline: Greeter"),
	)
	var loc string
	x.run("location", chromedp.Location(&loc))
	u, err := url.Parse(loc)
	if err != nil {
		t.Fatal(err)
	}
	id := strings.TrimPrefix(u.Path, "/dashboard/pipelines/")
	x.run("add nodes",
		chromedp.Click(`button[data-kind=input]`, chromedp.ByQuery),
		chromedp.Click(`button[data-kind=model]`, chromedp.ByQuery),
		chromedp.Click(`button[data-kind=output]`, chromedp.ByQuery),
		chromedp.WaitVisible(`.react-flow__node[data-id=output1]`, chromedp.ByQuery),
	)
	// Saved before the edges exist, the draft is invalid: the API's
	// problems show on the nodes.
	x.run("save invalid draft", x.click("Save draft"), x.waitText(".react-flow__node[data-id=output1] .pnode-problems", "from"))
	x.shot("editor-problems")
	x.drag("input1", "model1")
	x.drag("model1", "output1")
	x.run("edges drawn", x.waitText("[role=status]", "Connected model1 to output1"))
	var edges int
	x.run("count edges", chromedp.Evaluate(`document.querySelectorAll(".react-flow__edge").length`, &edges))
	if edges != 2 {
		t.Fatalf("the canvas has %d edges after two drags, want 2", edges)
	}
	x.run("publish v1",
		x.click("Publish"),
		x.waitText("[data-testid=serving-version]", "1"),
		x.waitText("[role=status]", "Published version 1"),
	)
	x.run("problems cleared", chromedp.WaitNotPresent(`.pnode-problems`, chromedp.ByQuery))
	x.run("select model", chromedp.Click(`.react-flow__node[data-id=model1]`, chromedp.ByQuery), x.waitText("#panel-h", "model1"))
	x.accessible("editor")
	x.shot("editor")
	// The keyboard: a focused node is selected with Enter; the tabs move
	// with the arrow keys.
	x.run("keyboard",
		chromedp.Focus(`.react-flow__node[data-id=input1]`, chromedp.ByQuery),
		chromedp.KeyEvent(kb.Enter),
		x.waitText("#panel-h", "input1"),
		chromedp.Focus(`#tab-0`, chromedp.ByQuery),
		chromedp.KeyEvent(kb.ArrowRight),
		chromedp.Poll(`document.activeElement.id === "tab-1" && document.activeElement.getAttribute("aria-selected") === "true"`, nil),
		x.waitText("#tabpanel-1", "Compare"),
		chromedp.KeyEvent(kb.ArrowLeft),
		chromedp.WaitVisible(`.react-flow__node[data-id=model1]`, chromedp.ByQuery),
	)

	// Try it: the serving version runs; outputs, usage and cost show.
	x.run("try it",
		x.click("Try it"),
		x.typeInto(`textarea[name=input-question]`, "hello from the browser"),
		x.click("Run"),
		x.waitText("[data-testid=run-status]", "success"),
		x.waitText("[data-testid=output-answer]", "hello from the browser"),
		x.waitText("table.nodes", "model1"),
		chromedp.WaitVisible(`[data-testid=run-cost]`, chromedp.ByQuery),
	)
	x.accessible("try it")
	x.shot("tryit")

	// The run's page: the per-node trace and the Temporal UI link.
	x.run("open run", chromedp.Click(`.trace .facts a`, chromedp.ByQuery), x.waitText("h1", "Run"), x.waitText("table.nodes", "output1"))
	var workflowLink string
	x.run("workflow link", chromedp.AttributeValue(`//a[contains(., "Temporal UI")]`, "href", &workflowLink, nil, chromedp.BySearch))
	if !strings.HasPrefix(workflowLink, temporalUI+"/namespaces/default/workflows/pipeline-run") {
		t.Errorf("the run page links the workflow at %q", workflowLink)
	}
	x.accessible("run")
	x.shot("run")
	x.open("/dashboard/runs", "Runs")
	x.run("runs list", x.waitText("tbody", "Greeter"), x.waitText("tbody", "success"))
	x.accessible("runs")
	x.shot("runs")
	// The status filter: no run failed.
	x.run("filter runs",
		chromedp.Evaluate(`(() => { const s = document.querySelector("select[name=status]"); s.value = "error"; s.dispatchEvent(new Event("change", {bubbles: true})); })()`, nil),
		x.click("Apply filters"),
		x.waitText("tbody", "No runs match."),
		chromedp.Evaluate(`(() => { const s = document.querySelector("select[name=status]"); s.value = "success"; s.dispatchEvent(new Event("change", {bubbles: true})); })()`, nil),
		x.click("Apply filters"),
		x.waitText("tbody", "Greeter"),
	)

	// Edit, publish v2, diff v1 → v2, roll back to v1.
	x.open("/dashboard/pipelines/"+id, "Pipeline: Greeter")
	x.run("edit model",
		chromedp.WaitVisible(`.react-flow__node[data-id=model1]`, chromedp.ByQuery),
		chromedp.Click(`.react-flow__node[data-id=model1]`, chromedp.ByQuery),
		x.typeInto(`#field-system`, "Answer briefly."),
		x.click("Publish"),
		x.waitText("[data-testid=serving-version]", "2"),
	)
	x.run("diff",
		x.click("Versions"),
		x.waitText("[data-testid=diff]", "changed"),
		x.waitText("[data-testid=diff]", "system"),
		x.waitText("[data-testid=diff]", "Answer briefly."),
	)
	x.accessible("versions")
	x.shot("versions-diff")
	x.run("rollback", x.click("Roll back to v1"), x.waitText("[data-testid=serving-version]", "1"), x.waitText("[role=status]", "Version 1 serves now"))

	// The API, with the key made on the keys page, serves v1.
	code, started := call(t, "POST", "/api/pipelines/"+id+"/invoke", secret, map[string]any{"inputs": map[string]string{"question": "which version?"}})
	if code != 202 || started["version"] != float64(1) {
		t.Fatalf("invoke after the rollback: %d %v, want 202 and version 1", code, started)
	}

	// The other pages load and pass the check.
	for _, p := range []struct{ path, heading, shot string }{
		{"/dashboard/media", "Media and purchases", "media"},
		{"/dashboard/enclaves", "Enclaves", "enclaves"},
		{"/dashboard/tasks", "Scheduled tasks", "tasks"},
		{"/dashboard/proxies", "Redaction proxies", "proxies"},
		{"/dashboard/redaction-log", "Redaction log", "redaction-log"},
	} {
		x.open(p.path, p.heading)
		x.accessible(p.shot)
		x.shot(p.shot)
	}

	// Sign out: the session ends and the API refuses the cookie.
	x.run("sign out", x.click("Sign out"), x.waitText("h1", "Sign in"))
	x.open("/dashboard/keys", "Sign in")
}
