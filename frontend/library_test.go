package frontend_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"

	"conduit/app/apptest"
	"conduit/internal/apikey"
	"conduit/internal/money"
	"conduit/workflows"
)

// jobPrice is what an import, assembly or edit costs (media.library.job_price).
const jobPrice = 10_000 * money.Micros(1)

// mediaInfo is a library file as ffprobe reads it.
type mediaInfo struct {
	duration     float64
	video, audio int
	width        int
	height       int
	format       string
	path         string
}

// probeURL downloads a file URL exactly as given and reads it with ffprobe.
func probeURL(t *testing.T, fileURL, contentType string) mediaInfo {
	t.Helper()
	r := get(t, fileURL)
	if r.Status != http.StatusOK || r.Header.Get("Content-Type") != contentType {
		t.Fatalf("downloading %s: %d %q, want %s", fileURL, r.Status, r.Header.Get("Content-Type"), contentType)
	}
	path := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(path, r.Body, 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("ffprobe", "-v", "error", "-show_streams", "-show_format", "-of", "json", path).Output()
	if err != nil {
		t.Fatalf("ffprobe: %v", err)
	}
	var p struct {
		Streams []struct {
			CodecType   string `json:"codec_type"`
			Width       int    `json:"width"`
			Height      int    `json:"height"`
			Disposition struct {
				AttachedPic int `json:"attached_pic"`
			} `json:"disposition"`
		} `json:"streams"`
		Format struct {
			Duration   string `json:"duration"`
			FormatName string `json:"format_name"`
		} `json:"format"`
	}
	if err := json.Unmarshal(out, &p); err != nil {
		t.Fatal(err)
	}
	info := mediaInfo{format: p.Format.FormatName, path: path}
	info.duration, _ = strconv.ParseFloat(p.Format.Duration, 64)
	for _, s := range p.Streams {
		switch {
		case s.CodecType == "video" && s.Disposition.AttachedPic == 0:
			info.video++
			info.width, info.height = s.Width, s.Height
		case s.CodecType == "audio":
			info.audio++
		}
	}
	return info
}

func near(t *testing.T, what string, got, want, tolerance float64) {
	t.Helper()
	if math.Abs(got-want) > tolerance {
		t.Fatalf("%s is %.3f, want %.3f ± %.2f", what, got, want, tolerance)
	}
}

// meanVolume is ffmpeg's volumedetect mean in dB.
func meanVolume(t *testing.T, path string) float64 {
	t.Helper()
	out, _ := exec.Command("ffmpeg", "-hide_banner", "-nostats", "-i", path, "-af", "volumedetect", "-f", "null", "-").CombinedOutput()
	m := regexp.MustCompile(`mean_volume: (-?[0-9.]+) dB`).FindSubmatch(out)
	if m == nil {
		t.Fatalf("volumedetect: %s", out)
	}
	v, _ := strconv.ParseFloat(string(m[1]), 64)
	return v
}

// makeMedia renders a small real file with ffmpeg's own sources.
func makeMedia(t *testing.T, ext string, args ...string) []byte {
	t.Helper()
	path := filepath.Join(t.TempDir(), "made."+ext)
	cmd := exec.Command("ffmpeg", append(append([]string{"-y", "-v", "error"}, args...), path)...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("making a test file: %v %s", err, out)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func toneMP3(t *testing.T, secs string) []byte {
	return makeMedia(t, "mp3", "-f", "lavfi", "-i", "sine=frequency=440:duration="+secs, "-ac", "2", "-c:a", "libmp3lame")
}

func clipMP4(t *testing.T, size, secs string) []byte {
	return makeMedia(t, "mp4", "-f", "lavfi", "-i", "testsrc=size="+size+":rate=25:duration="+secs,
		"-f", "lavfi", "-i", "sine=frequency=330:duration="+secs, "-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv420p", "-c:a", "aac")
}

// hostFiles serves files by path at https://host/ on the test internet
// (Content-Type deliberately generic: the library judges the bytes).
func hostFiles(t *testing.T, host string, files map[string][]byte) {
	t.Helper()
	env.Internet.Host(t, host, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, ok := files[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Write(b)
	}))
}

// job posts a library job and waits for it to finish (the server waits
// up to waitSeconds, then the test polls its statusUrl).
func job(t *testing.T, key, path string, body map[string]any, headers ...string) map[string]any {
	t.Helper()
	body["waitSeconds"] = 120
	r := do(t, "POST", path, key, body, headers...)
	if r.Status != http.StatusOK && r.Status != http.StatusAccepted {
		t.Fatalf("%s: %d %s", path, r.Status, r.Body)
	}
	return awaitJob(t, key, r.JSON(t))
}

func awaitJob(t *testing.T, key string, j map[string]any) map[string]any {
	t.Helper()
	path := strings.TrimPrefix(j["statusUrl"].(string), env.URL)
	apptest.Eventually(t, 4*time.Minute, "the job to finish", func() error {
		if j["status"] == "running" {
			j = wantStatus(t, do(t, "GET", path, key, nil), http.StatusOK)
		}
		if j["status"] == "running" {
			return fmt.Errorf("still running: %v", j)
		}
		return nil
	})
	return j
}

// importFile imports a hosted file and returns its item.
func importFile(t *testing.T, key, url string) map[string]any {
	t.Helper()
	j := job(t, key, "/api/media/import", map[string]any{"url": url})
	if j["status"] != "success" {
		t.Fatalf("import of %s: %v", url, j)
	}
	return j["item"].(map[string]any)
}

func balance(t *testing.T, acct string) money.Micros {
	t.Helper()
	ctx := context.Background()
	bal, err := env.Platform.Store.Balance(ctx, acct)
	if err != nil {
		t.Fatal(err)
	}
	if sum, err := env.Platform.Store.LedgerSum(ctx, acct); err != nil || sum != bal {
		t.Fatalf("ledger sum %s vs balance %s (%v)", sum, bal, err)
	}
	return bal
}

func listMedia(t *testing.T, key, query string) []any {
	t.Helper()
	return wantStatus(t, do(t, "GET", "/api/media"+query, key, nil), http.StatusOK)["items"].([]any)
}

// waitRunLong polls a run that renders (slower than a model call on a
// loaded machine).
func waitRunLong(t *testing.T, key, statusURL string) map[string]any {
	t.Helper()
	path := strings.TrimPrefix(statusURL, env.URL)
	var body map[string]any
	apptest.Eventually(t, 4*time.Minute, "the run to leave running", func() error {
		if body = wantStatus(t, do(t, "GET", path, key, nil), http.StatusOK); body["status"] == "running" {
			return fmt.Errorf("still running: %v", body)
		}
		return nil
	})
	return body
}

// narrationGraph: a speech node reading the caller's text and a music
// node, each an output.
func narrationGraph(musicPrompt string) map[string]any {
	return map[string]any{
		"nodes": []map[string]any{
			{"id": "line", "type": "input", "key": "line"},
			{"id": "say", "type": "speech", "text": "Welcome aboard. {{line}}"},
			{"id": "bed", "type": "music", "prompt": musicPrompt, "seconds": 15},
			{"id": "narration", "type": "output", "key": "narration", "from": "say"},
			{"id": "music", "type": "output", "key": "music", "from": "bed"},
		},
		"edges": []map[string]any{
			{"from": "line", "to": "say"}, {"from": "say", "to": "narration"}, {"from": "bed", "to": "music"},
		},
	}
}

// A pipeline with a speech node and a music node puts both files in the
// library with their provenance, charged at the menus' prices on success;
// two generated items assembled (music under the narration, and one after
// the other) make new items ffprobe reads as expected, with provenance.
func TestGenerationNodesFillTheLibraryAndAssemble(t *testing.T) {
	acct, key := env.NewAccount(t)
	id := createPipeline(t, key, narrationGraph("calm piano and soft pads at 80 bpm"))
	publish(t, key, id)
	acc := invoke(t, key, id, map[string]any{"line": "Please keep your seatbelt fastened."})
	run := waitRunLong(t, key, acc["statusUrl"].(string))
	if run["status"] != "success" {
		t.Fatalf("run %v", run)
	}
	// "Welcome aboard. Please keep your seatbelt fastened." is 51
	// characters: 0.03 USD of speech (aria); 15 s of compose-1: 0.06.
	const speech, music = 30_000, 60_000
	if c := usd(run["usage"].(map[string]any)["costUsd"]); c != speech+music {
		t.Fatalf("run cost %s", c)
	}
	if b := balance(t, acct); b != 5*money.USD-speech-music {
		t.Fatalf("balance %s", b)
	}
	outputs := run["outputs"].(map[string]any)
	narration := probeURL(t, outputs["narration"].(string), "audio/mpeg")
	bed := probeURL(t, outputs["music"].(string), "audio/mpeg")
	near(t, "the track's length", bed.duration, 15, 0.1)
	if narration.duration < 1 || narration.audio != 1 || narration.video != 0 {
		t.Fatalf("narration %+v", narration)
	}

	items := listMedia(t, key, "")
	if len(items) != 2 {
		t.Fatalf("library %v", items)
	}
	byNode := map[string]map[string]any{}
	for _, it := range items {
		m := it.(map[string]any)
		o := m["origin"].(map[string]any)
		if o["type"] != "generated" || o["runId"] != acc["runId"] || o["pipelineId"] != id {
			t.Fatalf("provenance %v", m)
		}
		byNode[o["nodeId"].(string)] = m
	}
	say, tune := byNode["say"], byNode["bed"]
	if say == nil || tune == nil {
		t.Fatalf("items by node %v", byNode)
	}
	sayParams := say["origin"].(map[string]any)["params"].(map[string]any)
	if say["origin"].(map[string]any)["operation"] != "speech" || sayParams["model"] != "speech-v3" || sayParams["voice"] != "aria" || sayParams["characters"].(float64) != 51 ||
		usd(say["priceUsd"]) != speech || say["kind"] != "audio" || say["contentType"] != "audio/mpeg" {
		t.Fatalf("speech item %v", say)
	}
	if tp := tune["origin"].(map[string]any)["params"].(map[string]any); tp["model"] != "compose-1" || tp["seconds"].(float64) != 15 || usd(tune["priceUsd"]) != music {
		t.Fatalf("music item %v", tune)
	}
	near(t, "the music item's durationSeconds", tune["durationSeconds"].(float64), 15, 0.1)
	// The node's value is the item's URL; GET answers a fresh one.
	one := wantStatus(t, do(t, "GET", "/api/media/"+say["id"].(string), key, nil), http.StatusOK)
	if one["id"] != say["id"] || !strings.HasPrefix(one["url"].(string), env.URL+"/files/library/"+say["id"].(string)+".mp3?t=") || one["urlExpiresAt"] == nil {
		t.Fatalf("item %v", one)
	}
	if !strings.Contains(outputs["narration"].(string), "/files/library/"+say["id"].(string)+".mp3?t=") {
		t.Fatalf("the node's value is not its item's URL: %v", outputs["narration"])
	}

	// Music under the narration: as long as the narration, its sound
	// mixed; charged the job price once it succeeds.
	mixed := job(t, key, "/api/media/assemble", map[string]any{"operation": "music_under", "items": []string{say["id"].(string), tune["id"].(string)}})
	if mixed["status"] != "success" || mixed["kind"] != "assemble" || usd(mixed["priceUsd"]) != jobPrice {
		t.Fatalf("assembly %v", mixed)
	}
	out := mixed["item"].(map[string]any)
	o := out["origin"].(map[string]any)
	if o["type"] != "assembled" || o["operation"] != "music_under" || o["jobId"] != mixed["id"] ||
		strings.Join([]string{o["items"].([]any)[0].(string), o["items"].([]any)[1].(string)}, ",") != say["id"].(string)+","+tune["id"].(string) ||
		o["params"].(map[string]any)["musicVolume"].(float64) != 0.3 {
		t.Fatalf("assembled item %v", out)
	}
	m := probeURL(t, out["url"].(string), "audio/mpeg")
	near(t, "music under the narration", m.duration, narration.duration, 0.15)
	if m.audio != 1 || m.video != 0 {
		t.Fatalf("mixed %+v", m)
	}
	// One after the other.
	joined := job(t, key, "/api/media/assemble", map[string]any{"operation": "concat", "items": []string{say["id"].(string), tune["id"].(string)}})
	j := probeURL(t, joined["item"].(map[string]any)["url"].(string), "audio/mpeg")
	near(t, "the concatenation", j.duration, narration.duration+15, 0.2)
	if b := balance(t, acct); b != 5*money.USD-speech-music-2*jobPrice {
		t.Fatalf("balance %s", b)
	}
	if n := len(listMedia(t, key, "?kind=audio")); n != 4 {
		t.Fatalf("%d audio items", n)
	}
	if n := len(listMedia(t, key, "?kind=video")); n != 0 {
		t.Fatalf("%d video items", n)
	}
	// By origin, filtered by the API (not within a page): the two
	// generated items, the two assemblies, no import; a page of one keeps
	// the filter in its next page.
	for origin, want := range map[string]int{"generated": 2, "assembled": 2, "imported": 0} {
		items := listMedia(t, key, "?origin="+origin)
		for _, it := range items {
			if o := it.(map[string]any)["origin"].(map[string]any)["type"]; o != origin {
				t.Fatalf("origin=%s listed an item of origin %v", origin, o)
			}
		}
		if len(items) != want {
			t.Fatalf("%d items of origin %s, want %d", len(items), origin, want)
		}
	}
	first := wantStatus(t, do(t, "GET", "/api/media?origin=assembled&limit=1", key, nil), http.StatusOK)
	next, _ := first["nextUrl"].(string)
	if len(first["items"].([]any)) != 1 || !strings.Contains(next, "origin=assembled") {
		t.Fatalf("first page of assemblies %v", first)
	}
	second := wantStatus(t, do(t, "GET", strings.TrimPrefix(next, env.URL), key, nil), http.StatusOK)
	if items := second["items"].([]any); len(items) != 1 || items[0].(map[string]any)["origin"].(map[string]any)["type"] != "assembled" || second["nextUrl"] != nil {
		t.Fatalf("second page of assemblies %v", second)
	}
	// Pages.
	page := wantStatus(t, do(t, "GET", "/api/media?limit=3", key, nil), http.StatusOK)
	if len(page["items"].([]any)) != 3 || page["nextAfter"] == nil {
		t.Fatalf("page %v", page)
	}
	rest := wantStatus(t, do(t, "GET", strings.TrimPrefix(page["nextUrl"].(string), env.URL), key, nil), http.StatusOK)
	if len(rest["items"].([]any)) != 1 || rest["nextUrl"] != nil {
		t.Fatalf("second page %v", rest)
	}
}

// A failing generation node fails like a failed model node: the run ends
// in error, nothing is charged, nothing lands in the library.
func TestFailingGenerationNodeChargesNothing(t *testing.T) {
	acct, key := env.NewAccount(t)
	graph := map[string]any{
		"nodes": []map[string]any{
			{"id": "q", "type": "input", "key": "q"},
			{"id": "bed", "type": "music", "prompt": "a cover of {{q}}"},
			{"id": "o", "type": "output", "key": "music", "from": "bed"},
		},
		"edges": []map[string]any{{"from": "q", "to": "bed"}, {"from": "bed", "to": "o"}},
	}
	id := createPipeline(t, key, graph)
	publish(t, key, id)
	run := waitRunLong(t, key, invoke(t, key, id, map[string]any{"q": "a famous song"})["statusUrl"].(string))
	if run["status"] != "error" || !strings.Contains(run["error"].(string), `node "bed" failed: the model's content filter declined this prompt`) {
		t.Fatalf("run %v", run)
	}
	if usd(run["usage"].(map[string]any)["costUsd"]) != 0 || balance(t, acct) != 5*money.USD {
		t.Fatalf("a failed generation was charged: %v", run)
	}
	if items := listMedia(t, key, ""); len(items) != 0 {
		t.Fatalf("library %v", items)
	}

	// Beside a node that succeeds, the failed one is still free, while the
	// file the other made is in the library and paid for, even though the
	// run is partial: a failing branch does not make media free.
	graph = narrationGraph("a cover of a famous song")
	id = createPipeline(t, key, graph)
	publish(t, key, id)
	run = waitRunLong(t, key, invoke(t, key, id, map[string]any{"line": "Hi."})["statusUrl"].(string))
	if run["status"] != "partial" || run["outputs"].(map[string]any)["narration"] == nil {
		t.Fatalf("run %v", run)
	}
	const speech = 20_000 // "Welcome aboard. Hi." at the 0.02 USD minimum
	if usd(run["usage"].(map[string]any)["costUsd"]) != speech || balance(t, acct) != 5*money.USD-speech {
		t.Fatalf("partial run charged %v, balance %s", run["usage"], balance(t, acct))
	}
	items := listMedia(t, key, "")
	if len(items) != 1 || items[0].(map[string]any)["origin"].(map[string]any)["nodeId"] != "say" {
		t.Fatalf("library %v", items)
	}
}

// A video node renders a real clip into the library; music laid under it
// keeps the picture and lasts as long as the clip.
func TestVideoNodeAndMusicUnderIt(t *testing.T) {
	acct, key := env.NewAccount(t)
	graph := map[string]any{
		"nodes": []map[string]any{
			{"id": "q", "type": "input", "key": "q"},
			{"id": "clip", "type": "video", "prompt": "{{q}}", "aspectRatio": "9:16"},
			{"id": "bed", "type": "music", "prompt": "upbeat synthwave at 118 bpm", "seconds": 15},
			{"id": "v", "type": "output", "key": "video", "from": "clip"},
			{"id": "m", "type": "output", "key": "music", "from": "bed"},
		},
		"edges": []map[string]any{{"from": "q", "to": "clip"}, {"from": "clip", "to": "v"}, {"from": "bed", "to": "m"}},
	}
	id := createPipeline(t, key, graph)
	publish(t, key, id)
	run := waitRunLong(t, key, invoke(t, key, id, map[string]any{"q": "a paper boat on a rainy street"})["statusUrl"].(string))
	if run["status"] != "success" {
		t.Fatalf("run %v", run)
	}
	// lumen-h3 (the default) at its shortest, 5 s: 0.42 USD; the track 0.06.
	if b := balance(t, acct); b != 5*money.USD-420_000-60_000 {
		t.Fatalf("balance %s", b)
	}
	clip := probeURL(t, run["outputs"].(map[string]any)["video"].(string), "video/mp4")
	near(t, "the clip", clip.duration, 5, 0.1)
	if clip.width != 768 || clip.height != 1366 || clip.video != 1 || clip.audio != 1 {
		t.Fatalf("clip %+v", clip)
	}
	var video, music string
	for _, it := range listMedia(t, key, "") {
		m := it.(map[string]any)
		switch m["kind"] {
		case "video":
			video = m["id"].(string)
			if p := m["origin"].(map[string]any)["params"].(map[string]any); p["model"] != "lumen-h3" || p["seconds"].(float64) != 5 || p["aspectRatio"] != "9:16" ||
				m["width"].(float64) != 768 || m["height"].(float64) != 1366 {
				t.Fatalf("video item %v", m)
			}
		case "audio":
			music = m["id"].(string)
		}
	}
	under := job(t, key, "/api/media/assemble", map[string]any{"operation": "music_under", "items": []string{video, music}, "musicVolume": 0.5})
	p := probeURL(t, under["item"].(map[string]any)["url"].(string), "video/mp4")
	near(t, "music under the clip", p.duration, 5, 0.15)
	if p.width != 768 || p.height != 1366 || p.video != 1 || p.audio != 1 {
		t.Fatalf("%+v", p)
	}
}

// Generation nodes' settings are checked against the menus when the
// draft is saved and published; a run holds the worst case.
func TestGenerationNodeValidationAndHold(t *testing.T) {
	acct, key := env.NewAccount(t)
	bad := map[string]any{
		"nodes": []map[string]any{
			{"id": "q", "type": "input", "key": "q"},
			{"id": "say", "type": "speech", "text": "{{q}}", "voice": "nobody"},
			{"id": "bed", "type": "music", "prompt": "calm", "seconds": 45},
			{"id": "clip", "type": "video", "prompt": "a boat", "aspectRatio": "4:3"},
			{"id": "o", "type": "output", "key": "o", "from": "say"},
		},
		"edges": []map[string]any{{"from": "q", "to": "say"}, {"from": "say", "to": "o"}},
	}
	id := createPipeline(t, key, bad)
	e := wantStatus(t, do(t, "POST", "/api/pipelines/"+id+"/publish", key, nil), http.StatusBadRequest)
	got := map[string]string{}
	for _, p := range e["problems"].([]any) {
		pm := p.(map[string]any)
		got[pm["node"].(string)+"."+pm["field"].(string)] = pm["message"].(string)
	}
	if !strings.Contains(got["say.voice"], `unknown voice "nobody"`) || !strings.Contains(got["bed.seconds"], "sells 15, 30, 60, 120 seconds, not 45") ||
		!strings.Contains(got["clip.aspectRatio"], "16:9 or 9:16") || len(got) != 3 {
		t.Fatalf("problems %v", e)
	}

	// A speech template holds the longest text it may say (1.26 USD):
	// with less spendable credit the run is refused before anything runs.
	good := narrationGraph("calm piano")
	id = createPipeline(t, key, good)
	publish(t, key, id)
	if _, err := env.Platform.Store.Hold(context.Background(), acct, 5*money.USD-money.USD, "test/"+t.Name()); err != nil {
		t.Fatal(err)
	}
	r := wantStatus(t, do(t, "POST", "/api/pipelines/"+id+"/invoke", key, map[string]any{"inputs": map[string]any{"line": "hi"}}), http.StatusPaymentRequired)
	if r["code"] != "INSUFFICIENT_CREDITS" || !strings.Contains(r["error"].(string), "may cost up to 1.32 USD") {
		t.Fatalf("%v", r)
	}
}

// Import from a URL on the (test) internet: judged by its bytes, probed,
// in the library with its origin; SSRF targets are refused at once and
// nothing is written or charged.
func TestImportFromURL(t *testing.T) {
	acct, key := env.NewAccount(t)
	hostFiles(t, "media.example", map[string][]byte{
		"/tone.bin": toneMP3(t, "2"), "/clip": clipMP4(t, "320x240", "1.5"), "/page.html": []byte("<!doctype html><p>not media</p>"),
		"/photo": pngOf(t, 300, 200),
	})
	audio := importFile(t, key, "https://media.example/tone.bin")
	if audio["kind"] != "audio" || audio["contentType"] != "audio/mpeg" || audio["origin"].(map[string]any)["type"] != "imported" ||
		audio["origin"].(map[string]any)["url"] != "https://media.example/tone.bin" || usd(audio["priceUsd"]) != jobPrice {
		t.Fatalf("audio %v", audio)
	}
	near(t, "the imported tone", audio["durationSeconds"].(float64), 2, 0.1)
	video := importFile(t, key, "https://media.example/clip")
	if video["kind"] != "video" || video["width"].(float64) != 320 || video["height"].(float64) != 240 || video["hasAudio"] != true {
		t.Fatalf("video %v", video)
	}
	if p := probeURL(t, video["url"].(string), "video/mp4"); p.video != 1 || p.audio != 1 {
		t.Fatalf("%+v", p)
	}
	img := importFile(t, key, "https://media.example/photo")
	if img["kind"] != "image" || img["contentType"] != "image/png" || img["durationSeconds"] != nil || img["width"].(float64) != 300 {
		t.Fatalf("image %v", img)
	}
	// Not media: the job fails saying so, and costs nothing.
	j := job(t, key, "/api/media/import", map[string]any{"url": "https://media.example/page.html"})
	if j["status"] != "error" || !strings.Contains(j["error"].(string), "not a supported format") {
		t.Fatalf("%v", j)
	}
	j = job(t, key, "/api/media/import", map[string]any{"url": "https://media.example/missing"})
	if j["status"] != "error" || !strings.Contains(j["error"].(string), "answered HTTP 404") {
		t.Fatalf("%v", j)
	}
	if b := balance(t, acct); b != 5*money.USD-3*jobPrice {
		t.Fatalf("balance %s", b)
	}

	// SSRF targets: refused before anything starts.
	env.Internet.Resolve("intranet.example", netip.MustParseAddr("10.0.0.7"))
	env.Internet.Resolve("metadata.example", netip.MustParseAddr("169.254.169.254"))
	for _, c := range []struct{ url, code string }{
		{"https://127.0.0.1/a.mp3", "MEDIA_URL_BLOCKED"},
		{"https://[::1]/a.mp3", "MEDIA_URL_BLOCKED"},
		{"https://localhost/a.mp3", "MEDIA_URL_BLOCKED"},
		{"https://intranet.example/a.mp3", "MEDIA_URL_BLOCKED"},
		{"https://metadata.example/latest", "MEDIA_URL_BLOCKED"},
		{"https://2130706433/a.mp3", "MEDIA_URL_BLOCKED"},
		{"http://media.example/tone.bin", "MEDIA_URL_INVALID"},
		{"https://media.example:8443/tone.bin", "MEDIA_URL_INVALID"},
		{"https://user:pw@media.example/tone.bin", "MEDIA_URL_INVALID"},
	} {
		e := wantStatus(t, do(t, "POST", "/api/media/import", key, map[string]any{"url": c.url}), http.StatusBadRequest)
		if e["code"] != c.code || e["field"] != "url" {
			t.Errorf("%s: %v, want %s", c.url, e, c.code)
		}
	}
	if b := balance(t, acct); b != 5*money.USD-3*jobPrice {
		t.Fatalf("a refused import changed the balance: %s", b)
	}
	if n := len(listMedia(t, key, "")); n != 3 {
		t.Fatalf("%d items", n)
	}
}

// Edits: trim, volume, extract_audio and transcode, each checked with
// ffprobe; the source item stays as it was.
func TestEditOperations(t *testing.T) {
	acct, key := env.NewAccount(t)
	hostFiles(t, "edits.example", map[string][]byte{"/clip.mp4": clipMP4(t, "320x240", "3"), "/tone.mp3": toneMP3(t, "2")})
	clip := importFile(t, key, "https://edits.example/clip.mp4")
	tone := importFile(t, key, "https://edits.example/tone.mp3")

	trimmed := job(t, key, "/api/media/edit", map[string]any{"item": clip["id"], "operation": "trim", "start": 0.5, "end": 2})
	it := trimmed["item"].(map[string]any)
	o := it["origin"].(map[string]any)
	if o["type"] != "edited" || o["operation"] != "trim" || o["items"].([]any)[0] != clip["id"] || o["params"].(map[string]any)["start"].(float64) != 0.5 {
		t.Fatalf("trimmed %v", trimmed)
	}
	p := probeURL(t, it["url"].(string), "video/mp4")
	near(t, "the trimmed clip", p.duration, 1.5, 0.1)
	if p.video != 1 || p.audio != 1 || p.width != 320 {
		t.Fatalf("trimmed %+v", p)
	}

	quiet := job(t, key, "/api/media/edit", map[string]any{"item": tone["id"], "operation": "volume", "gain": 0.5})
	before := probeURL(t, tone["url"].(string), "audio/mpeg")
	after := probeURL(t, quiet["item"].(map[string]any)["url"].(string), "audio/mpeg")
	near(t, "the quieter tone's length", after.duration, before.duration, 0.1)
	// Half the amplitude is 6 dB down.
	near(t, "the level change in dB", meanVolume(t, after.path)-meanVolume(t, before.path), -6.02, 0.6)

	sound := job(t, key, "/api/media/edit", map[string]any{"item": clip["id"], "operation": "extract_audio"})
	s := probeURL(t, sound["item"].(map[string]any)["url"].(string), "audio/mpeg")
	near(t, "the extracted audio", s.duration, 3, 0.1)
	if s.video != 0 || s.audio != 1 || sound["item"].(map[string]any)["kind"] != "audio" {
		t.Fatalf("extracted %+v %v", s, sound)
	}
	wav := job(t, key, "/api/media/edit", map[string]any{"item": tone["id"], "operation": "transcode", "format": "wav"})
	if w := probeURL(t, wav["item"].(map[string]any)["url"].(string), "audio/wav"); w.format != "wav" {
		t.Fatalf("transcoded %+v", w)
	}
	// The source is unchanged; six jobs charged.
	if again := probeURL(t, clip["url"].(string), "video/mp4"); math.Abs(again.duration-3) > 0.1 {
		t.Fatalf("the source changed: %+v", again)
	}
	if b := balance(t, acct); b != 5*money.USD-6*jobPrice {
		t.Fatalf("balance %s", b)
	}
}

// Bad input is a 400 naming the field, in the API's error shape, and
// writes nothing: no job, no item, no charge.
func TestLibraryBadInputIs400AndWritesNothing(t *testing.T) {
	acct, key := env.NewAccount(t)
	hostFiles(t, "bad.example", map[string][]byte{"/clip.mp4": clipMP4(t, "160x120", "1"), "/tone.mp3": toneMP3(t, "1"), "/photo": pngOf(t, 300, 300)})
	clip := importFile(t, key, "https://bad.example/clip.mp4")["id"].(string)
	tone := importFile(t, key, "https://bad.example/tone.mp3")["id"].(string)
	photo := importFile(t, key, "https://bad.example/photo")["id"].(string)
	spent := balance(t, acct)
	for _, c := range []struct {
		path  string
		body  any
		field string
		msg   string
	}{
		{"/api/media/assemble", map[string]any{"operation": "blur", "items": []string{clip, clip}}, "operation", "operation must be concat, crossfade, music_under, narrate"},
		{"/api/media/assemble", map[string]any{"operation": "concat", "items": []string{clip}}, "items", "concat takes 2 to 20 items, not 1"},
		{"/api/media/assemble", map[string]any{"operation": "concat", "items": []string{clip, tone}}, "items[1]", "is audio but items[0] is a video"},
		{"/api/media/assemble", map[string]any{"operation": "concat", "items": []string{clip, "nope"}}, "items[1]", `"nope" is not an item id`},
		{"/api/media/assemble", map[string]any{"operation": "concat", "items": []string{clip, photo}}, "items[1]", "is an image"},
		{"/api/media/assemble", map[string]any{"operation": "concat", "items": []string{clip, clip}, "fade": 1}, "fade", "fade applies to crossfade only"},
		{"/api/media/assemble", map[string]any{"operation": "crossfade", "items": []string{clip, clip}, "fade": 11}, "fade", "fade must be 0.1 to 10"},
		{"/api/media/assemble", map[string]any{"operation": "crossfade", "items": []string{clip, clip}, "fade": 2}, "fade", "shorter than every item"},
		{"/api/media/assemble", map[string]any{"operation": "music_under", "items": []string{clip}}, "items", "music_under takes exactly 2 items"},
		{"/api/media/assemble", map[string]any{"operation": "music_under", "items": []string{clip, tone}, "musicVolume": 3}, "musicVolume", "musicVolume must be 0 to 2"},
		{"/api/media/assemble", map[string]any{"operation": "narrate", "items": []string{tone, clip}}, "items[1]", "narrate lays a voice (an audio item)"},
		{"/api/media/assemble", map[string]any{"operation": "narrate", "items": []string{clip, tone}, "delay": 5}, "delay", "less than items[0]'s length"},
		{"/api/media/assemble", map[string]any{"operation": "concat", "items": []string{clip, clip}, "waitSeconds": 999}, "waitSeconds", "0 to 300"},
		{"/api/media/edit", map[string]any{"operation": "trim", "start": 0.2}, "item", "item is required"},
		{"/api/media/edit", map[string]any{"item": clip, "operation": "trim"}, "start", "trim needs start, end or both"},
		{"/api/media/edit", map[string]any{"item": clip, "operation": "trim", "start": 0.5, "end": 0.2}, "end", "end must be after start"},
		{"/api/media/edit", map[string]any{"item": clip, "operation": "trim", "start": 5}, "start", "start must be 0 to "},
		{"/api/media/edit", map[string]any{"item": clip, "operation": "volume"}, "gain", "volume needs gain"},
		{"/api/media/edit", map[string]any{"item": clip, "operation": "volume", "gain": 9}, "gain", "gain must be 0 to 4"},
		{"/api/media/edit", map[string]any{"item": clip, "operation": "volume", "gain": 1, "start": 0}, "start", "start applies to trim only"},
		{"/api/media/edit", map[string]any{"item": clip, "operation": "transcode", "format": "mp3"}, "format", "extract_audio takes a video's sound"},
		{"/api/media/edit", map[string]any{"item": tone, "operation": "transcode"}, "format", "transcode needs format"},
		{"/api/media/edit", map[string]any{"item": tone, "operation": "extract_audio"}, "item", "is audio already"},
		{"/api/media/edit", map[string]any{"item": photo, "operation": "volume", "gain": 1}, "item", "is an image"},
		{"/api/media/edit", map[string]any{"item": clip, "operation": "sharpen"}, "operation", "operation must be trim, volume, transcode, extract_audio"},
		{"/api/media/import", map[string]any{}, "url", "url is required"},
	} {
		e := wantStatus(t, do(t, "POST", c.path, key, c.body), http.StatusBadRequest)
		if e["field"] != c.field || !strings.Contains(e["error"].(string), c.msg) {
			t.Errorf("%s %v: %v, want %s: %s", c.path, c.body, e, c.field, c.msg)
		}
	}
	// Unknown fields and wrong types are refused like everywhere else.
	if e := wantStatus(t, do(t, "POST", "/api/media/edit", key, map[string]any{"item": clip, "operation": "trim", "start": 0, "speed": 2}), http.StatusBadRequest); e["error"] != `unknown field "speed"` {
		t.Errorf("%v", e)
	}
	if e := wantStatus(t, do(t, "POST", "/api/media/assemble", key, map[string]any{"operation": "concat", "items": "med_1"}), http.StatusBadRequest); !strings.Contains(e["error"].(string), "field items must be an array") {
		t.Errorf("%v", e)
	}
	wantStatus(t, do(t, "GET", "/api/media?kind=hologram", key, nil), http.StatusBadRequest)
	wantStatus(t, do(t, "GET", "/api/media?origin=found", key, nil), http.StatusBadRequest)
	wantStatus(t, do(t, "GET", "/api/media?limit=0", key, nil), http.StatusBadRequest)
	if b := balance(t, acct); b != spent {
		t.Fatalf("refused requests changed the balance: %s → %s", spent, b)
	}
	if n := len(listMedia(t, key, "")); n != 3 {
		t.Fatalf("refused requests wrote items: %d", n)
	}
	if jobs := countJobs(t, acct); jobs != 3 {
		t.Fatalf("%d jobs recorded, want the 3 imports", jobs)
	}
}

// countJobs counts the jobs the account started.
func countJobs(t *testing.T, acct string) int {
	t.Helper()
	n, err := env.Platform.Store.CountMediaJobs(context.Background(), acct)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// Another account's items and jobs are not found, whatever the route;
// keys need the media scopes.
func TestAnotherAccountsMediaIsNotFound(t *testing.T) {
	_, owner := env.NewAccount(t)
	_, other := env.NewAccount(t)
	hostFiles(t, "mine.example", map[string][]byte{"/tone.mp3": toneMP3(t, "1")})
	j := job(t, owner, "/api/media/import", map[string]any{"url": "https://mine.example/tone.mp3"})
	item := j["item"].(map[string]any)["id"].(string)
	for _, c := range []struct {
		method, path string
		body         any
	}{
		{"GET", "/api/media/" + item, nil},
		{"DELETE", "/api/media/" + item, nil},
		{"GET", "/api/media/jobs/" + j["id"].(string), nil},
		{"POST", "/api/media/edit", map[string]any{"item": item, "operation": "volume", "gain": 0.5}},
		{"POST", "/api/media/assemble", map[string]any{"operation": "concat", "items": []string{item, item}}},
	} {
		e := wantStatus(t, do(t, c.method, c.path, other, c.body), http.StatusNotFound)
		if !strings.Contains(e["error"].(string), "not found") {
			t.Errorf("%s %s: %v", c.method, c.path, e)
		}
	}
	if items := listMedia(t, other, ""); len(items) != 0 {
		t.Fatalf("another account lists %v", items)
	}
	// Still there for its owner.
	wantStatus(t, do(t, "GET", "/api/media/"+item, owner, nil), http.StatusOK)

	// Scopes: media:read to read, media:write to change.
	_, reader := env.NewAccount(t, apikey.MediaRead)
	wantStatus(t, do(t, "GET", "/api/media", reader, nil), http.StatusOK)
	e := wantStatus(t, do(t, "POST", "/api/media/import", reader, map[string]any{"url": "https://mine.example/tone.mp3"}), http.StatusForbidden)
	if !strings.Contains(e["error"].(string), "media:write") {
		t.Fatalf("%v", e)
	}
	_, runner := env.NewAccount(t, apikey.PipelinesRun)
	wantStatus(t, do(t, "GET", "/api/media", runner, nil), http.StatusForbidden)
}

// A worker lost mid-assembly: the job resumes on the next worker and
// finishes once — one item, one charge.
func TestWorkerRestartMidAssemblyFinishesOnce(t *testing.T) {
	acct, key := env.NewAccount(t)
	hostFiles(t, "long.example", map[string][]byte{"/a.mp4": clipMP4(t, "640x360", "12"), "/b.mp4": clipMP4(t, "480x480", "12")})
	a := importFile(t, key, "https://long.example/a.mp4")["id"].(string)
	b := importFile(t, key, "https://long.example/b.mp4")["id"].(string)
	r := do(t, "POST", "/api/media/assemble", key, map[string]any{"operation": "crossfade", "items": []string{a, b}, "fade": 1})
	started := wantStatus(t, r, http.StatusAccepted)
	if r.Header.Get("Location") != started["statusUrl"] || started["status"] != "running" {
		t.Fatalf("%v %v", r.Header, started)
	}
	path := strings.TrimPrefix(started["statusUrl"].(string), env.URL)
	// Wait until the ffmpeg work runs, then take the worker away.
	apptest.Eventually(t, 2*time.Minute, "the job to reach its work", func() error {
		st := wantStatus(t, do(t, "GET", path, key, nil), http.StatusOK)
		if st["stage"] == workflows.StageWorking {
			return nil
		}
		if st["status"] != "running" {
			t.Fatalf("the job never reached its work: %v", st)
		}
		return fmt.Errorf("stage %v", st["stage"])
	})
	time.Sleep(300 * time.Millisecond) // into the ffmpeg work
	env.StopWorker()
	// Start the next worker once Temporal has seen the lost worker's
	// attempt end (no attempt left running), not after a guessed pause.
	apptest.Eventually(t, 2*time.Minute, "the lost worker's attempt to end", func() error {
		desc, err := env.Platform.Temporal.DescribeWorkflowExecution(context.Background(), workflows.MediaEditWorkflowID(started["id"].(string)), "")
		if err != nil {
			return err
		}
		for _, pa := range desc.GetPendingActivities() {
			if pa.GetActivityType().GetName() == workflows.ActRunMediaJob && pa.GetState() == enumspb.PENDING_ACTIVITY_STATE_STARTED {
				return fmt.Errorf("attempt %d still running", pa.GetAttempt())
			}
		}
		return nil
	})
	if err := env.StartWorker(); err != nil {
		t.Fatal(err)
	}
	done := awaitJob(t, key, started)
	if done["status"] != "success" {
		t.Fatalf("%v", done)
	}
	// The work that finished is a later attempt than the one the worker
	// took with it.
	if n := finalAttempt(t, workflows.MediaEditWorkflowID(done["id"].(string)), workflows.ActRunMediaJob); n < 2 {
		t.Fatalf("the work finished on attempt %d: the worker was not stopped mid-work", n)
	}
	p := probeURL(t, done["item"].(map[string]any)["url"].(string), "video/mp4")
	near(t, "the crossfaded clip", p.duration, 23, 0.2)
	if p.video != 1 || p.audio != 1 || p.width != 640 || p.height != 360 {
		t.Fatalf("%+v", p)
	}
	// One item made by the job, one charge for it.
	made := 0
	for _, it := range listMedia(t, key, "") {
		if it.(map[string]any)["origin"].(map[string]any)["jobId"] == done["id"] {
			made++
		}
	}
	if made != 1 {
		t.Fatalf("%d items from one job", made)
	}
	if bal := balance(t, acct); bal != 5*money.USD-3*jobPrice {
		t.Fatalf("balance %s", bal)
	}
}

// finalAttempt is the attempt of an activity that its workflow's history
// records as started (Temporal records the last one).
func finalAttempt(t *testing.T, workflowID, activityType string) int32 {
	t.Helper()
	it := env.Platform.Temporal.GetWorkflowHistory(context.Background(), workflowID, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	scheduled := map[int64]string{}
	var attempt int32
	for it.HasNext() {
		ev, err := it.Next()
		if err != nil {
			t.Fatal(err)
		}
		if a := ev.GetActivityTaskScheduledEventAttributes(); a != nil {
			scheduled[ev.GetEventId()] = a.GetActivityType().GetName()
		}
		if a := ev.GetActivityTaskStartedEventAttributes(); a != nil && scheduled[a.GetScheduledEventId()] == activityType {
			attempt = a.GetAttempt()
		}
	}
	return attempt
}

// Deleting an item removes its file; its links stop working, its job says
// so. Links expire; a forged one is refused.
func TestDeleteAndLinks(t *testing.T) {
	_, key := env.NewAccount(t)
	hostFiles(t, "gone.example", map[string][]byte{"/tone.mp3": toneMP3(t, "1")})
	j := job(t, key, "/api/media/import", map[string]any{"url": "https://gone.example/tone.mp3"})
	it := j["item"].(map[string]any)
	fileURL := it["url"].(string)
	if get(t, fileURL).Status != http.StatusOK {
		t.Fatal("the fresh link does not work")
	}
	keyPath := strings.TrimPrefix(strings.SplitN(fileURL, "?", 2)[0], env.URL+"/files/")
	expired, _ := env.Platform.Media.Links.WithClock(func() time.Time { return time.Now().Add(-48 * time.Hour) }).Token(keyPath)
	for _, bad := range []string{env.URL + "/files/" + keyPath + "?t=" + expired, env.URL + "/files/" + keyPath + "?t=9999999999.forged"} {
		if r := get(t, bad); r.Status != http.StatusForbidden {
			t.Fatalf("%s: %d", bad, r.Status)
		}
	}
	wantStatus(t, do(t, "DELETE", "/api/media/"+it["id"].(string), key, nil), http.StatusNoContent)
	wantStatus(t, do(t, "GET", "/api/media/"+it["id"].(string), key, nil), http.StatusNotFound)
	wantStatus(t, do(t, "DELETE", "/api/media/"+it["id"].(string), key, nil), http.StatusNotFound)
	if r := get(t, fileURL); r.Status != http.StatusNotFound {
		t.Fatalf("a deleted item's file still answers %d", r.Status)
	}
	if again := wantStatus(t, do(t, "GET", strings.TrimPrefix(j["statusUrl"].(string), env.URL), key, nil), http.StatusOK); again["itemDeleted"] != true || again["item"] != nil {
		t.Fatalf("%v", again)
	}
}

// A job the balance cannot cover is a 402 and writes nothing; the same
// Idempotency-Key answers the same job, with another request a 409.
func TestJobCreditAndIdempotency(t *testing.T) {
	acct, key := env.NewAccount(t)
	hostFiles(t, "keys.example", map[string][]byte{"/tone.mp3": toneMP3(t, "1"), "/other.mp3": toneMP3(t, "2")})
	first := job(t, key, "/api/media/import", map[string]any{"url": "https://keys.example/tone.mp3"}, "Idempotency-Key", "import-1")
	again := job(t, key, "/api/media/import", map[string]any{"url": "https://keys.example/tone.mp3"}, "Idempotency-Key", "import-1")
	if again["id"] != first["id"] || again["item"].(map[string]any)["id"] != first["item"].(map[string]any)["id"] {
		t.Fatalf("%v vs %v", again, first)
	}
	e := wantStatus(t, do(t, "POST", "/api/media/import", key, map[string]any{"url": "https://keys.example/other.mp3"}, "Idempotency-Key", "import-1"), http.StatusConflict)
	if !strings.Contains(e["error"].(string), "already used with a different request") {
		t.Fatalf("%v", e)
	}
	if b := balance(t, acct); b != 5*money.USD-jobPrice {
		t.Fatalf("balance %s", b)
	}
	// Spend what is left, then ask for more.
	if _, err := env.Platform.Store.Hold(context.Background(), acct, 5*money.USD-jobPrice, "test/"+t.Name()); err != nil {
		t.Fatal(err)
	}
	e = wantStatus(t, do(t, "POST", "/api/media/import", key, map[string]any{"url": "https://keys.example/other.mp3"}), http.StatusPaymentRequired)
	if e["code"] != "INSUFFICIENT_CREDITS" || usd(e["balanceUsd"]) != 0 || e["topUpUrl"] == nil {
		t.Fatalf("%v", e)
	}
	if n := countJobs(t, acct); n != 1 {
		t.Fatalf("%d jobs", n)
	}
}
