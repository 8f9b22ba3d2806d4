package frontend_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"image"
	"image/color"
	"image/gif"
	"image/png"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"conduit/app/apptest"
	"conduit/frontend"
	"conduit/internal/money"
	"conduit/internal/x402"
	"conduit/workflows"
)

// challengeFor posts body unpaid to path and decodes the 402's challenge.
func challengeFor(t *testing.T, path string, body any) x402.PaymentRequired {
	t.Helper()
	r := env.Do(t, "POST", path, body)
	if r.Status != http.StatusPaymentRequired {
		t.Fatalf("unpaid call to %s: %d %s", path, r.Status, r.Body)
	}
	pr, err := x402.DecodePaymentRequired(r.Header.Get("PAYMENT-REQUIRED"))
	if err != nil {
		t.Fatal(err)
	}
	return pr
}

func videoChallenge(t *testing.T, body any) x402.PaymentRequired {
	t.Helper()
	return challengeFor(t, frontend.VideoPath, body)
}

// buy pays for body at path with w and posts it.
func buy(t *testing.T, path string, w wallet, body any, headers ...string) *apptest.Response {
	t.Helper()
	sig := w.pay(t, challengeFor(t, path, body))
	return env.Do(t, "POST", path, body, append(headers, "PAYMENT-SIGNATURE", sig)...)
}

func buyVideo(t *testing.T, w wallet, body any, headers ...string) *apptest.Response {
	t.Helper()
	return buy(t, frontend.VideoPath, w, body, headers...)
}

// get fetches an absolute URL the API handed out, exactly as given.
func get(t *testing.T, rawURL string, headers ...string) *apptest.Response {
	t.Helper()
	if !strings.HasPrefix(rawURL, env.URL+"/") {
		t.Fatalf("%q is not a URL of this API", rawURL)
	}
	return env.Do(t, "GET", strings.TrimPrefix(rawURL, env.URL), nil, headers...)
}

func post(t *testing.T, rawURL string, body any, headers ...string) *apptest.Response {
	t.Helper()
	if !strings.HasPrefix(rawURL, env.URL+"/") {
		t.Fatalf("%q is not a URL of this API", rawURL)
	}
	return env.Do(t, "POST", strings.TrimPrefix(rawURL, env.URL), body, headers...)
}

// finished polls a run's statusUrl, holding each poll, until it is final.
func finished(t *testing.T, statusURL string) map[string]any {
	t.Helper()
	var rec map[string]any
	apptest.Eventually(t, 3*time.Minute, "the run at "+statusURL+" to finish", func() error {
		if rec = wantStatus(t, get(t, statusURL, "Prefer", "wait=30"), http.StatusOK); rec["status"] == "running" {
			return errors.New("status running")
		}
		return nil
	})
	return rec
}

// awaitWorkflow waits for a run's workflow to end without asking the API
// (asking would deliver the record).
func awaitWorkflow(t *testing.T, runID string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if err := env.Platform.Temporal.GetWorkflow(ctx, workflows.RenderWorkflowID(runID), "").Get(ctx, nil); err != nil {
		t.Fatalf("render workflow of %s: %v", runID, err)
	}
}

type probed struct {
	duration      float64
	width, height int
	video, audio  int
}

// probeMP4 downloads a file URL as given and reads it with ffprobe.
func probeMP4(t *testing.T, fileURL string) probed {
	t.Helper()
	r := get(t, fileURL)
	if r.Status != http.StatusOK || r.Header.Get("Content-Type") != "video/mp4" {
		t.Fatalf("downloading %s: %d %s", fileURL, r.Status, r.Header.Get("Content-Type"))
	}
	path := filepath.Join(t.TempDir(), "clip.mp4")
	if err := os.WriteFile(path, r.Body, 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("ffprobe", "-v", "error", "-show_streams", "-show_format", "-of", "json", path).Output()
	if err != nil {
		t.Fatalf("ffprobe: %v", err)
	}
	var p struct {
		Streams []struct {
			CodecType string `json:"codec_type"`
			Width     int    `json:"width"`
			Height    int    `json:"height"`
		} `json:"streams"`
		Format struct {
			Duration string `json:"duration"`
		} `json:"format"`
	}
	if err := json.Unmarshal(out, &p); err != nil {
		t.Fatal(err)
	}
	var res probed
	res.duration, _ = strconv.ParseFloat(p.Format.Duration, 64)
	for _, s := range p.Streams {
		switch s.CodecType {
		case "video":
			res.video++
			res.width, res.height = s.Width, s.Height
		case "audio":
			res.audio++
		}
	}
	return res
}

func wantClip(t *testing.T, fileURL string, seconds float64, w, h int) {
	t.Helper()
	p := probeMP4(t, fileURL)
	if p.duration < seconds-0.1 || p.duration > seconds+0.1 || p.width != w || p.height != h || p.video != 1 || p.audio != 1 {
		t.Fatalf("clip %+v, want %.0f s at %dx%d with sound", p, seconds, w, h)
	}
}

func usd(v any) money.Micros {
	f, _ := v.(float64)
	return money.Micros(f*1e6 + 0.5)
}

// walletBalance is the spendable credit of a payer's wallet account.
func walletBalance(t *testing.T, w wallet) money.Micros {
	t.Helper()
	acct, err := env.Platform.Store.WalletAccount(context.Background(), "eip155:8453", strings.ToLower(w.addr.Hex()))
	if err != nil {
		t.Fatal(err)
	}
	if sum, err := env.Platform.Store.LedgerSum(context.Background(), acct.ID); err != nil || sum != acct.Balance {
		t.Fatalf("ledger sum %s vs balance %s (%v)", sum, acct.Balance, err)
	}
	return acct.Balance
}

// pngOf is a real PNG of w x h.
func pngOf(t *testing.T, w, h int) []byte {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			img.Set(x, y, color.RGBA{uint8(x), uint8(y), 200, 255})
		}
	}
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// hostImage serves b at https://host/ on the test internet.
func hostImage(t *testing.T, host, contentType string, b []byte) string {
	t.Helper()
	env.Internet.Host(t, host, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", contentType)
		w.Write(b)
	}))
	return "https://" + host + "/photo.png"
}

func TestVideoMenu(t *testing.T) {
	m := wantStatus(t, env.Do(t, "GET", frontend.VideoPath, nil), http.StatusOK)
	models := m["models"].([]any)
	offers := m["offers"].([]any)
	first := models[0].(map[string]any)
	if m["service"] != "Pay-per-video" || len(models) != 8 || len(offers) != 46 ||
		first["id"] != "lumen-h3" || first["default"] != true || first["firstFrame"] != false {
		t.Fatalf("%v", m)
	}
	if p := first["prices"].([]any)[0].(map[string]any); p["seconds"].(float64) != 5 || p["priceUsd"].(float64) != 0.42 {
		t.Fatalf("lumen prices %v", first["prices"])
	}
	limits := m["limits"].(map[string]any)
	if limits["maxPromptChars"].(float64) != 2000 || len(limits["model"].([]any)) != 8 {
		t.Fatalf("limits %v", limits)
	}
	how := m["howToBuy"].(map[string]any)
	if how["method"] != "POST "+env.URL+frontend.VideoPath || !strings.Contains(m["alreadyPaid"].(string), env.URL+"/api/x402/purchases") ||
		m["fields"].(map[string]any)["image_url"] == nil || m["delivery"] == "" {
		t.Fatalf("%v", m)
	}
}

func TestVideoChallengeQuotesTheExactPrice(t *testing.T) {
	img := hostImage(t, "price.example", "image/png", pngOf(t, 640, 360))
	for _, c := range []struct {
		body   map[string]any
		amount string
	}{
		{map[string]any{"prompt": "a kite"}, "420000"},                                               // lumen-h3, 5 s
		{map[string]any{"prompt": "a kite", "seconds": 15}, "1260000"},                               // lumen-h3, 15 s
		{map[string]any{"prompt": "a kite", "model": "kine-3.0", "seconds": 10}, "1770000"},          //
		{map[string]any{"prompt": "a kite", "model": "vista-3.1", "aspectRatio": "9:16"}, "2240000"}, // shortest length
		{map[string]any{"prompt": "a kite", "image_url": img}, "450000"},                             // no length: vista-3.1-lite, 4 s
		{map[string]any{"prompt": "a kite", "image_url": img, "seconds": 5}, "700000"},               // wave-2.7
		{map[string]any{"prompt": "a kite", "image_url": img, "seconds": 15}, "2650000"},             // kine-3.0
		{map[string]any{"prompt": "a kite", "image_url": img, "seconds": 8}, "900000"},               // vista-3.1-lite
	} {
		pr := videoChallenge(t, c.body)
		a := pr.Accepts[0]
		if a.Amount != c.amount || pr.Resource.URL != env.URL+frontend.VideoPath || a.Network != "eip155:8453" ||
			pr.Error != "PAYMENT-SIGNATURE header is required" || pr.Resource.Description == "" {
			t.Errorf("%v: %+v", c.body, pr)
		}
	}
}

func TestVideoRefusedBeforePayment(t *testing.T) {
	w := newWallet(t, money.USD)
	valid := map[string]any{"prompt": "a lighthouse at dawn", "async": true}
	sig := w.pay(t, videoChallenge(t, valid))

	slow := make(chan struct{})
	t.Cleanup(func() { close(slow) })
	env.Internet.Host(t, "slow.example", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-slow:
		case <-time.After(6 * time.Second):
		}
		w.Write(pngOf(t, 300, 300))
	}))
	env.Internet.Host(t, "gone.example", http.NotFoundHandler())
	env.Internet.Host(t, "moved.example", http.RedirectHandler("https://img.example/photo.png", http.StatusFound))
	var gifBuf bytes.Buffer
	_ = gif.Encode(&gifBuf, image.NewPaletted(image.Rect(0, 0, 400, 400), []color.Color{color.Black, color.White}), nil)
	textURL := hostImage(t, "text.example", "image/png", []byte("<html>not an image</html>"))
	gifURL := hostImage(t, "gif.example", "image/png", gifBuf.Bytes())
	tinyURL := hostImage(t, "tiny.example", "image/png", pngOf(t, 100, 100))
	bannerURL := hostImage(t, "banner.example", "image/png", pngOf(t, 2000, 300))
	env.Internet.Resolve("internal.example", netip.MustParseAddr("10.1.2.3"))
	env.Internet.Resolve("mixed.example", netip.MustParseAddr("93.184.215.250"), netip.MustParseAddr("192.168.1.20"))
	env.Internet.Resolve("meta.example", netip.MustParseAddr("169.254.169.254"))
	env.Internet.Resolve("v6.example", netip.MustParseAddr("fd00::1"))
	// A server that would send 64 MB: the fetcher must stop reading at the
	// limit (the server sees its write fail) and refuse with 413.
	unfinished := make(chan bool, 1)
	env.Internet.Host(t, "huge.example", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "image/png")
		chunk := make([]byte, 64<<10)
		copy(chunk, pngOf(t, 300, 300))
		for range 1024 {
			if _, err := w.Write(chunk); err != nil {
				unfinished <- true
				return
			}
		}
		unfinished <- false
	}))
	long := strings.Repeat("a", 2001)
	withImage := func(u string) map[string]any { return map[string]any{"prompt": "a lighthouse", "image_url": u} }

	for _, c := range []struct {
		name   string
		body   any
		status int
		code   string
		words  string
	}{
		{"unknown field", map[string]any{"prompt": "x", "color": "red"}, 400, "", "color"},
		{"not JSON", "prompt=x", 400, "", ""},
		{"no prompt", map[string]any{"seconds": 5}, 400, "", "prompt is required"},
		{"blank prompt", map[string]any{"prompt": "  "}, 400, "", "prompt must not be empty"},
		{"long prompt", map[string]any{"prompt": long}, 400, "", "2001 characters"},
		{"2001 runes", map[string]any{"prompt": strings.Repeat("é", 2001)}, 400, "", "2001 characters"},
		{"length not sold", map[string]any{"prompt": "x", "seconds": 7}, 400, "", "seconds must be one of"},
		{"fractional length", map[string]any{"prompt": "x", "seconds": 5.5}, 400, "", "seconds must be one of"},
		{"length not sold by the model", map[string]any{"prompt": "x", "model": "vista-3.1-lite", "seconds": 5}, 400, "", "model vista-3.1-lite sells 4, 6, 8 seconds, not 5"},
		{"length not sold by the default model", map[string]any{"prompt": "a cat", "seconds": 4}, 400, "", "lumen-h3 (the default without image_url) sells 5, 10, 15 seconds, not 4"},
		{"aspect ratio", map[string]any{"prompt": "x", "aspectRatio": "4:3"}, 400, "", "aspectRatio must be one of"},
		{"model", map[string]any{"prompt": "x", "model": "nope"}, 400, "", "model must be one of"},
		{"async type", map[string]any{"prompt": "x", "async": "yes"}, 400, "", ""},
		{"model without first frame", map[string]any{"prompt": "x", "model": "lumen-h3", "image_url": "https://img.example/a.png"}, 400, "IMAGE_MODEL_MISMATCH", ""},
		{"http", withImage("http://img.example/a.png"), 400, "IMAGE_URL_INVALID", ""},
		{"ftp", withImage("ftp://img.example/a.png"), 400, "IMAGE_URL_INVALID", ""},
		{"credentials", withImage("https://user:pw@img.example/a.png"), 400, "IMAGE_URL_INVALID", ""},
		{"port", withImage("https://img.example:8443/a.png"), 400, "IMAGE_URL_INVALID", ""},
		{"not a URL", withImage("a picture of me"), 400, "IMAGE_URL_INVALID", ""},
		{"loopback literal", withImage("https://127.0.0.1/a.png"), 400, "IMAGE_URL_BLOCKED", ""},
		{"v6 loopback literal", withImage("https://[::1]/a.png"), 400, "IMAGE_URL_BLOCKED", ""},
		{"metadata literal", withImage("https://169.254.169.254/latest/meta-data/"), 400, "IMAGE_URL_BLOCKED", ""},
		{"metadata name", withImage("https://metadata.google.internal/a.png"), 400, "IMAGE_URL_BLOCKED", ""},
		{"localhost", withImage("https://localhost/a.png"), 400, "IMAGE_URL_BLOCKED", ""},
		{"private by DNS", withImage("https://internal.example/a.png"), 400, "IMAGE_URL_BLOCKED", ""},
		{"one private address of two", withImage("https://mixed.example/a.png"), 400, "IMAGE_URL_BLOCKED", ""},
		{"link-local by DNS", withImage("https://meta.example/a.png"), 400, "IMAGE_URL_BLOCKED", ""},
		{"unique-local v6 by DNS", withImage("https://v6.example/a.png"), 400, "IMAGE_URL_BLOCKED", ""},
		{"unknown host", withImage("https://nowhere.example/a.png"), 400, "IMAGE_FETCH_FAILED", ""},
		{"404", withImage("https://gone.example/a.png"), 400, "IMAGE_FETCH_FAILED", "HTTP 404"},
		{"redirect", withImage("https://moved.example/a.png"), 400, "IMAGE_FETCH_FAILED", "redirect"},
		{"slower than 4 s", withImage("https://slow.example/a.png"), 400, "IMAGE_FETCH_FAILED", "time limit"},
		{"text named png", withImage(textURL), 400, "IMAGE_UNSUPPORTED_TYPE", ""},
		{"gif", withImage(gifURL), 400, "IMAGE_UNSUPPORTED_TYPE", ""},
		{"too small", withImage(tinyURL), 400, "IMAGE_DIMENSIONS", "100x100"},
		{"too wide", withImage(bannerURL), 400, "IMAGE_DIMENSIONS", "2000x300"},
		{"too large", withImage("https://huge.example/a.png"), 413, "IMAGE_TOO_LARGE", "10 MB"},
	} {
		t.Run(c.name, func(t *testing.T) {
			start := time.Now()
			r := env.Do(t, "POST", frontend.VideoPath, c.body, "PAYMENT-SIGNATURE", sig)
			body := wantStatus(t, r, c.status)
			if msg, _ := body["error"].(string); msg == "" || !strings.Contains(msg, c.words) {
				t.Fatalf("error %v, want it to mention %q", body, c.words)
			}
			if body["code"] != nil || c.code != "" {
				if body["code"] != c.code {
					t.Fatalf("code %v, want %s: %v", body["code"], c.code, body)
				}
			}
			if r.Header.Get("PAYMENT-RESPONSE") != "" || r.Header.Get("X-Status-Url") != "" {
				t.Fatalf("a refused request looks paid: %v", r.Header)
			}
			if c.name == "slower than 4 s" && (time.Since(start) < 4*time.Second || time.Since(start) > 6*time.Second) {
				t.Fatalf("the slow fetch was given up after %s, want 4 s", time.Since(start))
			}
		})
	}
	if !<-unfinished {
		t.Fatal("the fetcher read all 64 MB instead of stopping at the limit")
	}
	// DNS was asked once per fetch, and only the checked address was dialed.
	if n := env.Internet.Lookups("mixed.example"); n != 1 {
		t.Fatalf("mixed.example resolved %d times", n)
	}
	for _, d := range env.Internet.Dials() {
		if !strings.HasPrefix(d, "93.184.215.") {
			t.Fatalf("dialed %s", d)
		}
	}

	// Nothing was settled: the payment is still good for a valid request.
	if w.tokens(t) != 1_000_000 {
		t.Fatalf("a refused request moved tokens: %d", w.tokens(t))
	}
	r := env.Do(t, "POST", frontend.VideoPath, valid, "PAYMENT-SIGNATURE", sig)
	if rec := wantStatus(t, r, http.StatusOK); rec["status"] != "running" || usd(rec["paidUsd"]) != 420_000 {
		t.Fatalf("%v", rec)
	}
	if w.tokens(t) != 580_000 {
		t.Fatalf("tokens %d after one purchase", w.tokens(t))
	}
}

func TestVideoPaidCall(t *testing.T) {
	w := newWallet(t, money.USD)
	body := map[string]any{"prompt": "a paper boat sailing down a rainy street", "seconds": 5, "aspectRatio": "16:9"}
	sig := w.pay(t, videoChallenge(t, body))
	r := env.Do(t, "POST", frontend.VideoPath, body, "PAYMENT-SIGNATURE", sig)
	rec := wantStatus(t, r, http.StatusOK)
	if rec["status"] != "success" || rec["model"] != "lumen-h3" || rec["seconds"].(float64) != 5 || rec["aspectRatio"] != "16:9" ||
		usd(rec["paidUsd"]) != 420_000 || rec["payer"] != w.addr.Hex() || rec["network"] != "eip155:8453" ||
		len(rec["transaction"].(string)) != 66 || rec["finishedAt"] == nil || rec["retryUrl"] != nil {
		t.Fatalf("%v", rec)
	}
	// X-Status-Url and statusUrl name the run (its # encoded) with a
	// ticket each; both open it.
	for _, su := range []string{r.Header.Get("X-Status-Url"), rec["statusUrl"].(string)} {
		if u, err := url.Parse(su); err != nil || u.Query().Get("runId") != rec["runId"] || !strings.Contains(su, "%23") || u.Query().Get("token") == "" {
			t.Fatalf("status URL %q: %v", su, err)
		}
		if again := wantStatus(t, get(t, su), http.StatusOK); again["runId"] != rec["runId"] {
			t.Fatalf("%v", again)
		}
	}
	if sr, err := x402.DecodeSettleResponse(r.Header.Get("PAYMENT-RESPONSE")); err != nil || sr.Transaction != rec["transaction"] {
		t.Fatalf("PAYMENT-RESPONSE %+v %v", sr, err)
	}
	video := rec["video"].(string)
	if rec["outputs"].(map[string]any)["video"] != video || !strings.Contains(video, "?c=") {
		t.Fatalf("video %q", video)
	}
	wantClip(t, video, 5, 1366, 768) // lumen-h3, sold as 768p
	if w.tokens(t) != 580_000 || walletBalance(t, w) != 0 {
		t.Fatalf("tokens %d, balance %s: the price is charged once and only the price", w.tokens(t), walletBalance(t, w))
	}

	// The file URL is a capability: without its signature, or another
	// file's, it opens nothing.
	u, _ := url.Parse(video)
	for _, bad := range []string{u.Path, u.Path + "?c=" + strings.Repeat("A", 43), strings.Replace(u.Path, ".mp4", ".mov", 1) + "?" + u.RawQuery} {
		if r := env.Do(t, "GET", bad, nil); r.Status != http.StatusForbidden {
			t.Fatalf("GET %s: %d", bad, r.Status)
		}
	}

	// The same payment again: 409, nothing settled.
	r = env.Do(t, "POST", frontend.VideoPath, body, "PAYMENT-SIGNATURE", sig)
	if e := wantStatus(t, r, http.StatusConflict); e["code"] != "PAYMENT_ALREADY_REDEEMED" || e["transaction"] != rec["transaction"] {
		t.Fatalf("%v", e)
	}
	if w.tokens(t) != 580_000 {
		t.Fatal("a replayed payment moved tokens")
	}
	// The status URL answers the same record.
	again := wantStatus(t, get(t, rec["statusUrl"].(string)), http.StatusOK)
	if again["status"] != "success" || again["video"] != video || again["runId"] != rec["runId"] {
		t.Fatalf("%v", again)
	}
}

func TestVideoFromImage(t *testing.T) {
	w := newWallet(t, money.USD)
	img := hostImage(t, "photos.example", "image/png", pngOf(t, 1024, 768))
	body := map[string]any{"prompt": "the scene comes alive", "image_url": img, "seconds": 4, "aspectRatio": "9:16"}
	rec := wantStatus(t, buyVideo(t, w, body), http.StatusOK)
	if rec["status"] != "success" || rec["model"] != "vista-3.1-lite" || usd(rec["paidUsd"]) != 450_000 || rec["imageUrl"] != img {
		t.Fatalf("%v", rec)
	}
	wantClip(t, rec["video"].(string), 4, 720, 1280)
}

func TestVideoStreamsKeepAliveUntilTheRecord(t *testing.T) {
	w := newWallet(t, 2*money.USD)
	prompt := "keep-alive: a slow sunrise over dunes"
	body := map[string]any{"prompt": prompt, "model": "kine-3.0"}
	sig := w.pay(t, videoChallenge(t, body))
	buf, _ := json.Marshal(body)
	req, _ := http.NewRequest("POST", env.URL+frontend.VideoPath, bytes.NewReader(buf))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("PAYMENT-SIGNATURE", sig)
	resp, err := env.HTTP.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	// The headers arrive while the studio still holds the clip.
	if resp.StatusCode != http.StatusOK || resp.Header.Get("X-Status-Url") == "" || env.Studio.Submits(prompt) > 1 {
		t.Fatalf("%d %v", resp.StatusCode, resp.Header)
	}
	env.Studio.WaitSubmitted(t, prompt)
	first := make([]byte, 1)
	if _, err := io.ReadFull(resp.Body, first); err != nil || first[0] != ' ' {
		t.Fatalf("first byte %q %v, want a keep-alive space", first, err)
	}
	env.Studio.Release(prompt)
	rest, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	var rec map[string]any
	if err := json.Unmarshal(append(first, rest...), &rec); err != nil || rec["status"] != "success" {
		t.Fatalf("%v %s", err, rest)
	}
	wantClip(t, rec["video"].(string), 5, 1280, 720)
}

func TestVideoAsyncThenPoll(t *testing.T) {
	w := newWallet(t, 2*money.USD)
	prompt := "async: a hummingbird in slow motion"
	r := buyVideo(t, w, map[string]any{"prompt": prompt, "model": "kine-3.0", "async": true})
	rec := wantStatus(t, r, http.StatusOK)
	status := rec["statusUrl"].(string)
	if rec["status"] != "running" || r.Header.Get("Location") != status || r.Header.Get("X-Status-Url") != status ||
		r.Header.Get("Retry-After") != "5" || rec["pollAfterMs"].(float64) != 5000 || rec["video"] != nil || usd(rec["paidUsd"]) != 890_000 {
		t.Fatalf("%v %v", rec, r.Header)
	}
	runID := rec["runId"].(string)
	// Prefer: respond-async does the same and says so.
	r = buyVideo(t, w, map[string]any{"prompt": prompt + " again", "model": "kine-3.0"}, "Prefer", "respond-async")
	if rec := wantStatus(t, r, http.StatusOK); rec["status"] != "running" || r.Header.Get("Preference-Applied") != "respond-async" {
		t.Fatalf("%v %v", rec, r.Header)
	}
	env.Studio.Release(prompt + " again")

	// Claim tickets.
	u, _ := url.Parse(status)
	token := u.Query().Get("token")
	tickets := env.Platform.Media.Tickets
	for _, c := range []struct {
		query  string
		status int
	}{
		{"runId=" + url.QueryEscape(runID), 400},
		{"token=" + token, 400},
		{"runId=" + url.QueryEscape(runID) + "&token=forged.token", 403},
		{"runId=" + url.QueryEscape(runID) + "&token=" + tickets.Issue("video", "20260101T000000Z#other"), 403},
		{"runId=" + url.QueryEscape(runID) + "&token=" + tickets.Issue("speech", runID), 403},
		{"runId=" + url.QueryEscape("20260101T000000Z#nothing") + "&token=" + tickets.Issue("video", "20260101T000000Z#nothing"), 404},
	} {
		r := env.Do(t, "GET", frontend.VideoPath+"?"+c.query, nil)
		if e := wantStatus(t, r, c.status); e["error"] == "" {
			t.Fatalf("%s: %v", c.query, e)
		}
	}
	if rec := wantStatus(t, get(t, status), http.StatusOK); rec["status"] != "running" {
		t.Fatalf("%v", rec)
	}
	env.Studio.Release(prompt)
	r = get(t, status, "Prefer", "wait=60")
	rec = wantStatus(t, r, http.StatusOK)
	if rec["status"] != "success" || rec["runId"] != runID || r.Header.Get("Preference-Applied") != "wait=60" {
		t.Fatalf("%v %v", rec, r.Header)
	}
	wantClip(t, rec["video"].(string), 5, 1280, 720)
}

func TestVideoWaitRunsOutThenPoll(t *testing.T) {
	w := newWallet(t, 2*money.USD)
	prompt := "wait: a glacier calving"
	start := time.Now()
	r := buyVideo(t, w, map[string]any{"prompt": prompt, "model": "kine-3.0"}, "Prefer", "wait=1")
	rec := wantStatus(t, r, http.StatusOK)
	if rec["status"] != "running" || r.Header.Get("Preference-Applied") != "wait=1" || time.Since(start) < time.Second {
		t.Fatalf("%v %v after %s", rec, r.Header, time.Since(start))
	}
	env.Studio.Release(prompt)
	if rec := finished(t, rec["statusUrl"].(string)); rec["status"] != "success" {
		t.Fatalf("%v", rec)
	}
}

// refusedRun buys a sprout-2.5 clip whose prompt its filter refuses.
func refusedRun(t *testing.T, w wallet) map[string]any {
	t.Helper()
	rec := wantStatus(t, buyVideo(t, w, map[string]any{"prompt": "the famous scene from a movie, with the brand logo", "model": "sprout-2.5"}), http.StatusOK)
	if rec["status"] != "error" || rec["reason"] != "prompt_refused" || rec["retryable"] != true || rec["retryUrl"] == nil ||
		rec["failedStep"] == nil || rec["error"] == "" || rec["message"] == "" || usd(rec["paidUsd"]) != 1_640_000 ||
		usd(rec["balanceUsd"]) != 1_640_000 || rec["video"] != nil {
		t.Fatalf("%v", rec)
	}
	return rec
}

func TestVideoRefusalThenRetry(t *testing.T) {
	w := newWallet(t, 2*money.USD)
	old := refusedRun(t, w)
	// The price went to the wallet's account, not to the render.
	if walletBalance(t, w) != 1_640_000 || w.tokens(t) != 360_000 {
		t.Fatalf("balance %s tokens %d", walletBalance(t, w), w.tokens(t))
	}
	retryURL := old["retryUrl"].(string)
	for _, bad := range []any{map[string]any{"prompt": ""}, map[string]any{"prompt": strings.Repeat("x", 2001)}, map[string]any{"model": "lumen-h3"}} {
		wantStatus(t, post(t, retryURL, bad), http.StatusBadRequest)
	}
	rec := wantStatus(t, post(t, retryURL, map[string]any{"prompt": "a paper boat on a pond"}), http.StatusOK)
	if rec["status"] != "success" || rec["retryOf"] != old["runId"] || usd(rec["paidUsd"]) != 0 || rec["model"] != "sprout-2.5" ||
		rec["seconds"].(float64) != 5 || rec["transaction"] != nil {
		t.Fatalf("%v", rec)
	}
	wantClip(t, rec["video"].(string), 5, 1280, 720)
	if walletBalance(t, w) != 0 || w.tokens(t) != 360_000 {
		t.Fatalf("balance %s tokens %d after the retry", walletBalance(t, w), w.tokens(t))
	}

	was := wantStatus(t, get(t, old["statusUrl"].(string)), http.StatusOK)
	by, _ := was["retriedBy"].(map[string]any)
	if was["retryable"] != false || was["retryUrl"] != nil || was["retriedByRunId"] != rec["runId"] || by["runId"] != rec["runId"] || by["statusUrl"] == nil {
		t.Fatalf("%v", was)
	}
	// Once per failed run.
	e := wantStatus(t, post(t, retryURL, nil), http.StatusConflict)
	if e["retriedBy"].(map[string]any)["runId"] != rec["runId"] {
		t.Fatalf("%v", e)
	}
	// A success has nothing to retry; its retry URL is that of its ticket.
	su, _ := url.Parse(rec["statusUrl"].(string))
	wantStatus(t, env.Do(t, "POST", frontend.VideoPath+"/retry?"+su.RawQuery, nil), http.StatusConflict)
	// A ticket opens only its own run.
	wantStatus(t, env.Do(t, "POST", frontend.VideoPath+"/retry?runId="+url.QueryEscape(old["runId"].(string))+"&token="+su.Query().Get("token"), nil), http.StatusForbidden)
	if walletBalance(t, w) != 0 {
		t.Fatal("a refused retry moved credit")
	}
}

func TestVideoRetryNeedsTheBalance(t *testing.T) {
	w := newWallet(t, 2*money.USD)
	old := refusedRun(t, w)
	// Something else holds most of the wallet's credit meanwhile.
	ctx := context.Background()
	acct, err := env.Platform.Store.WalletAccount(ctx, "eip155:8453", strings.ToLower(w.addr.Hex()))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := env.Platform.Store.Hold(ctx, acct.ID, money.USD, "test/"+t.Name()); err != nil {
		t.Fatal(err)
	}
	e := wantStatus(t, post(t, old["retryUrl"].(string), map[string]any{"prompt": "a calm sea"}), http.StatusPaymentRequired)
	if usd(e["balanceUsd"]) != 640_000 || usd(e["priceUsd"]) != 1_640_000 || e["payUrl"] != env.URL+"/api/billing/credits/x402" {
		t.Fatalf("%v", e)
	}
	if was := wantStatus(t, get(t, old["statusUrl"].(string)), http.StatusOK); was["retryable"] != true || was["retriedBy"] != nil {
		t.Fatalf("a refused retry used up the run's retry: %v", was)
	}
}

func TestVideoLateRenderIsCollected(t *testing.T) {
	w := newWallet(t, 5*money.USD)
	// Its own prompt each time: the studio releases by prompt (-count=N).
	prompt := fmt.Sprintf("late: a thunderstorm over the city (%d)", time.Now().UnixNano())
	rec := wantStatus(t, buyVideo(t, w, map[string]any{"prompt": prompt, "model": "vista-3.1", "async": true}), http.StatusOK)
	status := rec["statusUrl"].(string)
	apptest.Eventually(t, 30*time.Second, "the late render's note", func() error {
		if rec["note"] == nil {
			rec = wantStatus(t, get(t, status), http.StatusOK)
			return fmt.Errorf("no note yet: %v", rec)
		}
		return nil
	})
	if rec["status"] != "running" {
		t.Fatalf("%v", rec)
	}
	u, _ := url.Parse(status)
	e := wantStatus(t, env.Do(t, "POST", frontend.VideoPath+"/retry?"+u.RawQuery, nil), http.StatusConflict)
	if !strings.Contains(e["error"].(string), "collected") {
		t.Fatalf("%v", e)
	}
	env.Studio.Release(prompt)
	rec = finished(t, status)
	if rec["status"] != "success" || rec["note"] != nil {
		t.Fatalf("%v", rec)
	}
	wantClip(t, rec["video"].(string), 4, 1280, 720)
}

func TestVideoAbandonedRenderIsPartialAndUncharged(t *testing.T) {
	w := newWallet(t, 5*money.USD)
	rec := wantStatus(t, buyVideo(t, w, map[string]any{"prompt": "abandoned: never comes back", "model": "vista-3.1", "async": true}), http.StatusOK)
	// Still rendering: retry is refused.
	u, _ := url.Parse(rec["statusUrl"].(string))
	wantStatus(t, env.Do(t, "POST", frontend.VideoPath+"/retry?"+u.RawQuery, nil), http.StatusConflict)
	rec = finished(t, rec["statusUrl"].(string))
	if rec["status"] != "partial" || rec["reason"] != "render_failed" || rec["retryable"] != true || rec["retryUrl"] == nil ||
		usd(rec["balanceUsd"]) != 2_240_000 || rec["failedStep"] == nil {
		t.Fatalf("%v", rec)
	}
	if walletBalance(t, w) != 2_240_000 {
		t.Fatal("a failed render was charged")
	}
}

func TestVideoAlreadyPaid(t *testing.T) {
	w := newWallet(t, 2*money.USD)
	body := map[string]any{"prompt": "already paid: a red balloon", "async": true}
	first := wantStatus(t, buyVideo(t, w, body), http.StatusOK)
	runID := first["runId"].(string)
	awaitWorkflow(t, runID)
	if w.tokens(t) != 1_580_000 {
		t.Fatalf("tokens %d", w.tokens(t))
	}

	// The file never reached the caller (it only ever saw "running"): the
	// same request again is answered with it and the payment is not taken.
	sig := w.pay(t, videoChallenge(t, body))
	r := env.Do(t, "POST", frontend.VideoPath, body, "PAYMENT-SIGNATURE", sig)
	rec := wantStatus(t, r, http.StatusOK)
	paid, _ := rec["alreadyPaid"].(map[string]any)
	if rec["status"] != "success" || rec["runId"] != runID || usd(rec["paidUsd"]) != 0 || paid["runId"] != runID || paid["boughtAt"] == nil ||
		r.Header.Get("PAYMENT-RESPONSE") != "" {
		t.Fatalf("%v", rec)
	}
	wantClip(t, rec["video"].(string), 5, 1366, 768) // lumen-h3, sold as 768p
	if w.tokens(t) != 1_580_000 {
		t.Fatalf("the unneeded payment was settled: tokens %d", w.tokens(t))
	}
	// Now it has reached the caller: the same request is a new purchase,
	// paid with the payment that was not taken before.
	rec = wantStatus(t, env.Do(t, "POST", frontend.VideoPath, body, "PAYMENT-SIGNATURE", sig), http.StatusOK)
	if rec["alreadyPaid"] != nil || rec["runId"] == runID || usd(rec["paidUsd"]) != 420_000 || w.tokens(t) != 1_160_000 {
		t.Fatalf("%v tokens %d", rec, w.tokens(t))
	}
	awaitWorkflow(t, rec["runId"].(string))

	// A file downloaded by its URL has reached the caller too.
	other := map[string]any{"prompt": "already paid: downloaded", "async": true}
	run := wantStatus(t, buyVideo(t, w, other), http.StatusOK)["runId"].(string)
	awaitWorkflow(t, run)
	got, err := env.Platform.Store.MediaRun(context.Background(), run)
	if err != nil || got.FileKey == "" {
		t.Fatalf("%+v %v", got, err)
	}
	probeMP4(t, env.URL+frontend.FilesPath+got.FileKey+"?c="+env.Platform.Media.Files.Sign(got.FileKey))
	if rec := wantStatus(t, buyVideo(t, w, other), http.StatusOK); rec["alreadyPaid"] != nil || rec["runId"] == run {
		t.Fatalf("%v", rec)
	}
	// Another wallet asking the same buys its own.
	w2 := newWallet(t, money.USD)
	if rec := wantStatus(t, buyVideo(t, w2, body), http.StatusOK); rec["alreadyPaid"] != nil || w2.tokens(t) != 580_000 {
		t.Fatalf("%v", rec)
	}
}

func TestVideoWorkerKilledMidRender(t *testing.T) {
	w := newWallet(t, 2*money.USD)
	prompt := "crash: a lantern festival"
	rec := wantStatus(t, buyVideo(t, w, map[string]any{"prompt": prompt, "model": "kine-3.0", "async": true}), http.StatusOK)
	env.Studio.WaitSubmitted(t, prompt)
	time.Sleep(300 * time.Millisecond) // let the heartbeat carry the studio's request id
	env.StopWorker()
	// Released while no worker runs: the job the killed attempt ordered is
	// done when the next attempt picks it up.
	env.Studio.Release(prompt)
	if err := env.StartWorker(); err != nil {
		t.Fatal(err)
	}
	rec = finished(t, rec["statusUrl"].(string))
	if rec["status"] != "success" {
		t.Fatalf("%v", rec)
	}
	wantClip(t, rec["video"].(string), 5, 1280, 720)
	// One order at the studio, one settlement, one charge.
	if n := env.Studio.Submits(prompt); n != 1 {
		t.Fatalf("the studio got %d orders for one run", n)
	}
	if w.tokens(t) != 1_110_000 || walletBalance(t, w) != 0 {
		t.Fatalf("tokens %d balance %s", w.tokens(t), walletBalance(t, w))
	}
}

func TestVideoImageStoreFailure(t *testing.T) {
	w := newWallet(t, money.USD)
	img := hostImage(t, "store.example", "image/png", pngOf(t, 640, 480))
	body := map[string]any{"prompt": "a kite", "image_url": img, "async": true}
	sig := w.pay(t, videoChallenge(t, body))
	// The blob store cannot write images: its folder is a file.
	dir := filepath.Join(env.Config.Media.Blob.Dir, "images")
	aside := dir + ".aside"
	if _, err := os.Stat(dir); err == nil {
		if err := os.Rename(dir, aside); err != nil {
			t.Fatal(err)
		}
		defer os.Rename(aside, dir)
	}
	if err := os.WriteFile(dir, []byte("not a folder"), 0o600); err != nil {
		t.Fatal(err)
	}
	defer os.Remove(dir)
	e := wantStatus(t, env.Do(t, "POST", frontend.VideoPath, body, "PAYMENT-SIGNATURE", sig), http.StatusServiceUnavailable)
	if e["code"] != "IMAGE_STORE_FAILED" || w.tokens(t) != 1_000_000 {
		t.Fatalf("%v tokens %d", e, w.tokens(t))
	}
}

// serve runs a second API on deps (a differently configured deployment of
// the same platform) and returns its base URL.
func serve(t *testing.T, deps frontend.Deps) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: frontend.New(deps).Handler()}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return "http://" + ln.Addr().String()
}

func send(t *testing.T, method, rawURL string, body any, headers ...string) (int, http.Header, map[string]any) {
	t.Helper()
	buf, _ := json.Marshal(body)
	req, _ := http.NewRequest(method, rawURL, bytes.NewReader(buf))
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var m map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&m)
	return resp.StatusCode, resp.Header, m
}

func TestVideoOffIs503(t *testing.T) {
	deps := env.Platform.FrontendDeps()
	deps.Media.Err = errors.New("media.secret is not set")
	base := serve(t, deps)
	for _, c := range []struct{ method, path string }{
		{"GET", frontend.VideoPath}, {"POST", frontend.VideoPath}, {"POST", frontend.VideoPath + "/retry?runId=a&token=b"},
	} {
		status, _, body := send(t, c.method, base+c.path, map[string]any{"prompt": "x"})
		if status != http.StatusServiceUnavailable || body["error"] == "" {
			t.Fatalf("%s %s: %d %v", c.method, c.path, status, body)
		}
	}
}

func TestVideoRateLimits(t *testing.T) {
	cfg := *env.Config
	cfg.X402.RateLimit = "2-M"
	deps := env.Platform.FrontendDeps()
	deps.Config = &cfg
	base := serve(t, deps)
	// Per address: the third call in a minute is refused before anything
	// else is looked at.
	for i := range 3 {
		status, h, body := send(t, "POST", base+frontend.VideoPath, map[string]any{"prompt": "x"})
		if i < 2 && status != http.StatusPaymentRequired || i == 2 && (status != http.StatusTooManyRequests || h.Get("Retry-After") == "") {
			t.Fatalf("call %d: %d %v", i, status, body)
		}
	}
	// Per wallet: a payer is limited whatever address it calls from.
	w := newWallet(t, money.USD)
	body := map[string]any{"prompt": "rate: a kite", "async": true}
	from := func(ip string) *http.Client {
		d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}}
		return &http.Client{Transport: &http.Transport{DialContext: d.DialContext}}
	}
	for i, ip := range []string{"127.0.0.2", "127.0.0.3", "127.0.0.4"} {
		buf, _ := json.Marshal(body)
		req, _ := http.NewRequest("POST", base+frontend.VideoPath, bytes.NewReader(buf))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("PAYMENT-SIGNATURE", w.pay(t, videoChallenge(t, body)))
		resp, err := from(ip).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if i < 2 && resp.StatusCode != http.StatusOK || i == 2 && (resp.StatusCode != http.StatusTooManyRequests ||
			!strings.Contains(string(b), "from one wallet") || resp.Header.Get("Retry-After") == "") {
			t.Fatalf("call %d from %s: %d %s", i, ip, resp.StatusCode, b)
		}
	}
	if w.tokens(t) != 1_000_000-2*420_000 {
		t.Fatalf("tokens %d: the limited call settled", w.tokens(t))
	}
}
