package frontend_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"conduit/app/apptest"
	"conduit/frontend"
	"conduit/internal/config"
	"conduit/internal/library"
	"conduit/internal/money"
	"conduit/internal/pricing"
	"conduit/internal/store"
)

// A job whose output would be over the caps is refused before any work,
// in the library's error shape, and changes nothing; jobs are priced by
// the seconds of media they make (at least the minimum).
func TestJobsAreCappedAndPricedByTheirOutput(t *testing.T) {
	acct, key := env.NewAccount(t)
	hostFiles(t, "caps.example", map[string][]byte{"/tone.mp3": toneMP3(t, "31")})
	tone := importFile(t, key, "https://caps.example/tone.mp3")
	// 31 s at 0.0002 USD a second is below the 0.01 minimum.
	if usd(tone["priceUsd"]) != jobPrice {
		t.Fatalf("import %v", tone)
	}
	before, jobs := balance(t, acct), countJobs(t, acct)

	// 20 × 31 s is 620 s, over media.library.max_output_seconds (600).
	twenty := make([]string, 20)
	for i := range twenty {
		twenty[i] = tone["id"].(string)
	}
	e := wantStatus(t, do(t, "POST", "/api/media/assemble", key, map[string]any{"operation": "concat", "items": twenty}), http.StatusBadRequest)
	if e["code"] != "MEDIA_OUTPUT_TOO_LONG" || e["field"] != "items" || e["maxOutputSeconds"].(float64) != 600 || !strings.Contains(e["error"].(string), "at most 600 s") {
		t.Fatalf("%v", e)
	}
	// A crossfade of the same, 19 s shorter, is within the cap… only just
	// over: 601 s.
	e = wantStatus(t, do(t, "POST", "/api/media/assemble", key, map[string]any{"operation": "crossfade", "items": twenty, "fade": 1}), http.StatusBadRequest)
	if e["code"] != "MEDIA_OUTPUT_TOO_LONG" {
		t.Fatalf("%v", e)
	}
	if b, n := balance(t, acct), countJobs(t, acct); b != before || n != jobs {
		t.Fatalf("a refused job changed something: balance %s → %s, jobs %d → %d", before, b, jobs, n)
	}

	// Two of them: 62 s of media, charged by the second (about 0.0124
	// USD), not the flat minimum. (The hold is the predicted length's
	// price, the sum of the items' lengths; the encoded file may be a few
	// milliseconds longer, and the charge never exceeds the hold.)
	two := job(t, key, "/api/media/assemble", map[string]any{"operation": "concat", "items": twenty[:2]})
	if two["status"] != "success" {
		t.Fatalf("%v", two)
	}
	item := two["item"].(map[string]any)
	secs := item["durationSeconds"].(float64)
	near(t, "the joined tones", secs, 62, 0.2)
	charged := usd(two["priceUsd"])
	if want := money.Micros(secs*200 + 0.999); charged < want-40 || charged > want || usd(item["priceUsd"]) != charged {
		t.Fatalf("charged %s for %.3f s (want about %s): %v", charged, secs, want, two)
	}
	if b := balance(t, acct); b != before-charged {
		t.Fatalf("balance %s, want %s", b, before-charged)
	}
}

// speechGraph is a pipeline whose one generation node renders on the
// render work queue.
func speechGraph() map[string]any {
	return map[string]any{
		"nodes": []map[string]any{
			{"id": "line", "type": "input", "key": "line"},
			{"id": "say", "type": "speech", "text": "{{line}}"},
			{"id": "narration", "type": "output", "key": "narration", "from": "say"},
		},
		"edges": []map[string]any{{"from": "line", "to": "say"}, {"from": "say", "to": "narration"}},
	}
}

// Library jobs run on their own queue and slots (library-work), and one
// account holds at most media.library.account_jobs of them. The bound we
// state (docs/media.md): however many jobs are queued or running, another
// account's render never waits for a library job's slot. Here two
// accounts' imports hang in their downloads, taking both library slots,
// and a third account's import waits behind them; meanwhile account B's
// pipeline renders its speech node and finishes, while all three jobs are
// still running. Ordering only: the stalled downloads end when the test
// releases them.
func TestHeavyAccountCannotDelayAnotherAccountsRender(t *testing.T) {
	release := make(chan struct{})
	one := toneMP3(t, "1")
	var stalled atomic.Int32
	env.Internet.Host(t, "stall.example", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		stalled.Add(1)
		select {
		case <-release:
		case <-r.Context().Done():
			return
		}
		w.Write(one)
	}))
	var waited atomic.Int32
	env.Internet.Host(t, "waits.example", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		waited.Add(1)
		w.Write(one)
	}))
	released := false
	defer func() {
		if !released {
			close(release)
		}
	}()

	acctA, keyA := env.NewAccount(t)
	_, keyC := env.NewAccount(t)
	_, keyD := env.NewAccount(t)
	start := func(key, url string) map[string]any {
		t.Helper()
		r := do(t, "POST", "/api/media/import", key, map[string]any{"url": url})
		return wantStatus(t, r, http.StatusAccepted)
	}
	jobA := start(keyA, "https://stall.example/a.mp3")
	// A's share is one running job: the next is refused at once, writing
	// nothing and holding nothing.
	held := balance(t, acctA)
	e := wantStatus(t, do(t, "POST", "/api/media/import", keyA, map[string]any{"url": "https://waits.example/a2.mp3"}), http.StatusTooManyRequests)
	if e["code"] != "MEDIA_JOBS_BUSY" || e["maxRunningJobs"].(float64) != 1 {
		t.Fatalf("%v", e)
	}
	if n := countJobs(t, acctA); n != 1 || balance(t, acctA) != held {
		t.Fatalf("the refused job wrote %d jobs, balance %s → %s", n, held, balance(t, acctA))
	}
	jobC := start(keyC, "https://stall.example/c.mp3")
	// Both library slots are taken once both downloads have begun.
	apptest.Eventually(t, 2*time.Minute, "both stalled downloads to begin", func() error {
		if n := stalled.Load(); n < 2 {
			return fmt.Errorf("%d downloads began", n)
		}
		return nil
	})
	jobD := start(keyD, "https://waits.example/d.mp3")

	// Account B's render: a pipeline with a speech node.
	_, keyB := env.NewAccount(t)
	id := createPipeline(t, keyB, speechGraph())
	publish(t, keyB, id)
	acc := invoke(t, keyB, id, map[string]any{"line": "Renders do not wait for library jobs."})
	run := waitRunLong(t, keyB, acc["statusUrl"].(string))
	if run["status"] != "success" {
		t.Fatalf("B's run %v", run)
	}
	// B's render started and finished while every job was still running:
	// D's import had not even been fetched (no slot was free for it).
	for name, j := range map[string]map[string]any{"A": jobA, "C": jobC, "D": jobD} {
		key := map[string]string{"A": keyA, "C": keyC, "D": keyD}[name]
		now := wantStatus(t, do(t, "GET", strings.TrimPrefix(j["statusUrl"].(string), env.URL), key, nil), http.StatusOK)
		if now["status"] != "running" {
			t.Fatalf("%s's job finished before B's render: %v", name, now)
		}
	}
	if n := waited.Load(); n != 0 {
		t.Fatalf("D's import was fetched %d times while both slots were taken", n)
	}

	close(release)
	released = true
	for name, j := range map[string]map[string]any{"A": jobA, "C": jobC, "D": jobD} {
		key := map[string]string{"A": keyA, "C": keyC, "D": keyD}[name]
		if done := awaitJob(t, key, j); done["status"] != "success" {
			t.Fatalf("%s's job: %v", name, done)
		}
	}
}

// An account's library holds at most media.library.quota_bytes: a job
// that could take it over (stored bytes, what running jobs may add, and
// what this one may add) is refused before it starts, with the figures;
// Usage reports the stored bytes.
func TestLibraryQuota(t *testing.T) {
	acct, key := env.NewAccount(t)
	hostFiles(t, "quota.example", map[string][]byte{"/tone.mp3": toneMP3(t, "2")})
	tone := importFile(t, key, "https://quota.example/tone.mp3")
	small := int64(tone["sizeBytes"].(float64))

	// Fill the library to 50 MB under its quota with one large item.
	quota := env.Config.Media.Library.QuotaBytes
	big := quota - small - 50<<20
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, env.Config.Database.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, `INSERT INTO media_items (id, account_id, kind, content_type, size_bytes, duration_ms, has_audio, blob_key, origin, source_url, operation)
		VALUES ('med_0123456789abcdef', $1, 'audio', 'audio/wav', $2, 1000, true, 'library/'||$1||'-big.wav', 'imported', 'https://quota.example/big.wav', 'import')`, acct, big); err != nil {
		t.Fatal(err)
	}
	if used, err := env.Platform.Library.Usage(ctx, acct); err != nil || used != big+small {
		t.Fatalf("usage %d (%v), want %d", used, err, big+small)
	}

	before, jobs := balance(t, acct), countJobs(t, acct)
	// An import may add up to media.library.import_max_bytes (100 MB).
	e := wantStatus(t, do(t, "POST", "/api/media/import", key, map[string]any{"url": "https://quota.example/tone.mp3"}), http.StatusTooManyRequests)
	if e["code"] != "MEDIA_QUOTA_EXCEEDED" || int64(e["usedBytes"].(float64)) != big+small || int64(e["quotaBytes"].(float64)) != quota ||
		int64(e["jobBytes"].(float64)) != env.Config.Media.Library.ImportMaxBytes || !strings.Contains(e["error"].(string), "delete items") {
		t.Fatalf("%v", e)
	}
	if b, n := balance(t, acct), countJobs(t, acct); b != before || n != jobs {
		t.Fatalf("a refused job changed something: balance %s → %s, jobs %d → %d", before, b, jobs, n)
	}
	// An edit of the small item adds well under 50 MB: it fits.
	if j := job(t, key, "/api/media/edit", map[string]any{"item": tone["id"], "operation": "volume", "gain": 0.5}); j["status"] != "success" {
		t.Fatalf("%v", j)
	}
}

// Video requests without a payment still have image_url checked (the
// spec's order), but a URL's verdict is remembered briefly and fetches
// come from a smaller budget per address, apart from the paid one.
func TestUnpaidImageFetchesAreBudgetedAndRemembered(t *testing.T) {
	var fetches atomic.Int32
	frame := pngOf(t, 300, 300)
	env.Internet.Host(t, "frames.example", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fetches.Add(1)
		if strings.HasSuffix(r.URL.Path, ".html") {
			w.Write([]byte("<!doctype html>"))
			return
		}
		w.Write(frame)
	}))
	base := secServer(t, func(c *config.Config) { c.Media.Images.UnpaidRateLimit = "3-M" })
	post := func(from, url string) (int, map[string]any) {
		t.Helper()
		b, _ := json.Marshal(map[string]any{"prompt": "the frame comes alive", "image_url": url})
		status, _, body := secCall(t, from, "POST", base+frontend.VideoPath, strings.NewReader(string(b)), "Content-Type", "application/json")
		var m map[string]any
		_ = json.Unmarshal([]byte(body), &m)
		return status, m
	}
	// The first unpaid request fetches the image and answers the
	// challenge; the same URL again (however its host is spelled) is
	// answered from the verdict, fetching nothing and spending nothing.
	for i, u := range []string{"https://frames.example/a.png", "https://frames.example/a.png", "https://FRAMES.example:443/a.png"} {
		if status, m := post("127.0.0.21", u); status != http.StatusPaymentRequired {
			t.Fatalf("request %d: %d %v", i, status, m)
		}
	}
	if n := fetches.Load(); n != 1 {
		t.Fatalf("%d fetches for one URL", n)
	}
	// A refusal is remembered too.
	for range 2 {
		if status, m := post("127.0.0.21", "https://frames.example/page.html"); status != http.StatusBadRequest || m["code"] != "IMAGE_UNSUPPORTED_TYPE" {
			t.Fatalf("%d %v", status, m)
		}
	}
	// Three fetches a minute from one address: the third new URL is refused
	// before it is fetched, with Retry-After.
	if status, m := post("127.0.0.21", "https://frames.example/b.png"); status != http.StatusPaymentRequired {
		t.Fatalf("%d %v", status, m)
	}
	if n := fetches.Load(); n != 3 {
		t.Fatalf("%d fetches", n)
	}
	status, m := post("127.0.0.21", "https://frames.example/c.png")
	if status != http.StatusTooManyRequests || !strings.Contains(m["error"].(string), "image_url fetches without a payment") {
		t.Fatalf("%d %v", status, m)
	}
	if n := fetches.Load(); n != 3 {
		t.Fatalf("the refused request fetched: %d", n)
	}
	// Remembered verdicts still answer that address; another address has
	// its own budget.
	if status, m := post("127.0.0.21", "https://frames.example/a.png"); status != http.StatusPaymentRequired {
		t.Fatalf("%d %v", status, m)
	}
	if status, m := post("127.0.0.22", "https://frames.example/c.png"); status != http.StatusPaymentRequired || fetches.Load() != 4 {
		t.Fatalf("%d %v (%d fetches)", status, m, fetches.Load())
	}
}

// libraryServer is a second API on this platform whose library service
// differs as mut says (its job timeout, its prices), so a test can change
// them without touching the shared one.
func libraryServer(t *testing.T, mut func(*library.Service)) string {
	t.Helper()
	lib := *env.Platform.Library
	mut(&lib)
	deps := env.Platform.FrontendDeps()
	deps.Library = &lib
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	deps.Deltas = env.Platform.Store.NewDeltaHub(ctx, env.Platform.Log)
	done := make(chan error, 1)
	go func() { done <- frontend.New(deps).Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
	})
	return "http://" + ln.Addr().String()
}

// A job that reaches its timeout is not released free: it is charged the
// seconds of media its heartbeats reported encoded (at the per-second
// price, at least the minimum, at most the hold), and says so.
func TestTimedOutJobIsChargedTheWorkDone(t *testing.T) {
	acct, key := env.NewAccount(t)
	// 18 s of 1080p, tiny (a high CRF): twenty of them joined make 360 s
	// of 1080p to re-encode (9,000 frames), far more than the 40 s the job
	// is given.
	hostFiles(t, "heavy.example", map[string][]byte{"/big.mp4": makeMedia(t, "mp4", "-f", "lavfi", "-i", "testsrc=size=1920x1080:rate=25:duration=18",
		"-f", "lavfi", "-i", "sine=frequency=330:duration=18", "-c:v", "libx264", "-preset", "ultrafast", "-crf", "45", "-pix_fmt", "yuv420p", "-c:a", "aac")})
	clip := importFile(t, key, "https://heavy.example/big.mp4")
	// 0.05 USD a second, so a fifth of a second encoded is over the
	// minimum; the hold of 360 s is 18 USD, granted here.
	rate := pricing.JobRate{PerSecond: 50_000, Minimum: jobPrice}
	if _, err := env.Platform.Store.Grant(context.Background(), acct, store.EntryGrant, 20*money.USD, "test/"+t.Name(), t.Name()); err != nil {
		t.Fatal(err)
	}
	// The SDK sends a heartbeat at once and then at most every 8 s (80 %
	// of the harness's 10 s heartbeat timeout): within 40 s several carry
	// what ffmpeg encoded.
	base := libraryServer(t, func(l *library.Service) {
		l.Config.JobTimeout = 40 * time.Second
		l.Rate = rate
	})
	items := make([]string, 20)
	for i := range items {
		items[i] = clip["id"].(string)
	}
	before := balance(t, acct)
	other := &apptest.Env{URL: base, HTTP: env.HTTP}
	r := other.Do(t, "POST", "/api/media/assemble", map[string]any{"operation": "concat", "items": items}, apptest.Bearer(key)...)
	j := wantStatus(t, r, http.StatusAccepted)
	hold := usd(j["priceUsd"])
	if want := rate.Charge(20 * clip["durationSeconds"].(float64)); hold < want-20*rate.PerSecond/1000 || hold > want {
		t.Fatalf("hold %s, want about %s", hold, want)
	}
	done := awaitJob(t, key, j)
	charged := usd(done["priceUsd"])
	if done["status"] != "error" || !strings.Contains(done["error"].(string), "work done before the deadline") ||
		charged <= rate.Minimum || charged >= hold {
		t.Fatalf("a timed-out job: %v (charged %s of %s held)", done, charged, hold)
	}
	if b := balance(t, acct); b != before-charged {
		t.Fatalf("balance %s, want %s", b, before-charged)
	}
	if n := len(listMedia(t, key, "?kind=video")); n != 1 {
		t.Fatalf("%d videos: the timed-out job left an item", n)
	}
}
