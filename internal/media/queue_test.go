package media

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

const testKey = "k-123:secret"

// fakeQueue plays a hosted video API's queue protocol: submit, status
// (IN_QUEUE twice, IN_PROGRESS twice, then COMPLETED), result, and the
// file itself. What a request ends in depends on the model path.
type fakeQueue struct {
	t    *testing.T
	srv  *httptest.Server
	clip []byte

	mu       sync.Mutex
	submits  int
	bodies   []map[string]any
	polls    map[string]int
	statusNG map[string]int // polls answered 503 on purpose
}

const (
	pathOK        = "vendor/kine/v3/text-to-video"
	pathRefuse    = "vendor/kine/v3/strict"
	pathBroken    = "vendor/kine/v3/broken"
	pathNoVideo   = "vendor/kine/v3/empty"
	pathNotMP4    = "vendor/kine/v3/html"
	pathFlaky     = "vendor/kine/v3/flaky"
	pathGone      = "vendor/kine/v3/gone"
	pathOverload  = "vendor/kine/v3/overloaded"
	flakyPollFail = 2
)

func newFakeQueue(t *testing.T) *fakeQueue {
	f := &fakeQueue{t: t, clip: sampleClip(t), polls: map[string]int{}, statusNG: map[string]int{}}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeQueue) json(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func (f *fakeQueue) serve(w http.ResponseWriter, r *http.Request) {
	path := strings.TrimPrefix(r.URL.Path, "/")
	if strings.HasPrefix(path, "files/") {
		// The CDN: no key needed (and none is checked).
		model, _ := strings.CutPrefix(path, "files/")
		switch {
		case strings.HasPrefix(model, "html"):
			w.Header().Set("Content-Type", "text/html")
			fmt.Fprint(w, "<html>oops</html>")
		case strings.HasPrefix(model, "gone"):
			http.Error(w, "upstream", http.StatusBadGateway)
		default:
			w.Header().Set("Content-Type", "video/mp4")
			w.Write(f.clip)
		}
		return
	}
	if r.Header.Get("Authorization") != "Key "+testKey {
		f.json(w, http.StatusUnauthorized, map[string]any{"detail": "Invalid API key"})
		return
	}
	model, id, isRequest := strings.Cut(path, "/requests/")
	if !isRequest {
		f.submit(w, r, path)
		return
	}
	if r.Method != http.MethodGet {
		f.json(w, http.StatusMethodNotAllowed, map[string]any{"detail": "method"})
		return
	}
	id, isStatus := strings.CutSuffix(id, "/status")
	f.mu.Lock()
	n, known := f.polls[id]
	if isStatus && known {
		f.polls[id] = n + 1
	}
	fail := isStatus && model == pathFlaky && n == flakyPollFail && f.statusNG[id] == 0
	if fail {
		f.statusNG[id]++
		f.polls[id] = n // this poll did not count
	}
	f.mu.Unlock()
	switch {
	case !known:
		f.json(w, http.StatusNotFound, map[string]any{"detail": "Request not found"})
	case fail:
		http.Error(w, "bad gateway", http.StatusServiceUnavailable)
	case isStatus && n < 2:
		f.json(w, http.StatusAccepted, map[string]any{"status": "IN_QUEUE", "queue_position": 1 - n, "response_url": f.srv.URL + "/" + model + "/requests/" + id})
	case isStatus && n < 4:
		f.json(w, http.StatusAccepted, map[string]any{"status": "IN_PROGRESS", "logs": []map[string]any{{"message": fmt.Sprintf("step %d", n)}}})
	case isStatus:
		f.json(w, http.StatusOK, map[string]any{"status": "COMPLETED", "logs": []any{}})
	case n < 5:
		f.json(w, http.StatusBadRequest, map[string]any{"detail": "Request is still in progress"})
	default:
		f.result(w, model)
	}
}

func (f *fakeQueue) submit(w http.ResponseWriter, r *http.Request, model string) {
	if r.Method != http.MethodPost || r.Header.Get("Content-Type") != "application/json" {
		f.json(w, http.StatusBadRequest, map[string]any{"detail": "POST JSON"})
		return
	}
	var body map[string]any
	dec := json.NewDecoder(r.Body)
	if err := dec.Decode(&body); err != nil {
		f.json(w, http.StatusBadRequest, map[string]any{"detail": err.Error()})
		return
	}
	// Validate like the provider: duration is a string of seconds, the
	// aspect ratio one of two, image_url absent or a non-empty string.
	var problems []map[string]any
	if p, _ := body["prompt"].(string); p == "" {
		problems = append(problems, map[string]any{"loc": []string{"body", "prompt"}, "msg": "field required", "type": "value_error.missing"})
	}
	if d, ok := body["duration"].(string); !ok || (d != "3" && d != "5") {
		problems = append(problems, map[string]any{"loc": []string{"body", "duration"}, "msg": "unexpected value; permitted: '3', '5'", "type": "value_error"})
	}
	if a, _ := body["aspect_ratio"].(string); a != "16:9" && a != "9:16" {
		problems = append(problems, map[string]any{"loc": []string{"body", "aspect_ratio"}, "msg": "bad aspect ratio", "type": "value_error"})
	}
	if u, ok := body["image_url"]; ok {
		if s, _ := u.(string); s == "" {
			problems = append(problems, map[string]any{"loc": []string{"body", "image_url"}, "msg": "empty image_url", "type": "value_error"})
		}
	}
	for k := range body {
		switch k {
		case "prompt", "duration", "aspect_ratio", "image_url":
		default:
			problems = append(problems, map[string]any{"loc": []string{"body", k}, "msg": "extra field", "type": "value_error"})
		}
	}
	if len(problems) > 0 {
		f.json(w, http.StatusUnprocessableEntity, map[string]any{"detail": problems})
		return
	}
	if model == pathOverload {
		f.json(w, http.StatusServiceUnavailable, map[string]any{"detail": "no capacity"})
		return
	}
	f.mu.Lock()
	f.submits++
	id := fmt.Sprintf("req-%d", f.submits)
	f.polls[id] = 0
	f.bodies = append(f.bodies, body)
	f.mu.Unlock()
	base := f.srv.URL + "/" + model + "/requests/" + id
	f.json(w, http.StatusOK, map[string]any{
		"request_id": id, "status": "IN_QUEUE",
		"status_url": base + "/status", "response_url": base, "cancel_url": base + "/cancel",
	})
}

func (f *fakeQueue) result(w http.ResponseWriter, model string) {
	switch model {
	case pathRefuse:
		f.json(w, http.StatusUnprocessableEntity, map[string]any{"detail": []map[string]any{{
			"loc": []string{"body", "prompt"}, "msg": "The prompt was flagged by our content checker.", "type": "content_policy_violation",
		}}})
	case pathBroken:
		f.json(w, http.StatusInternalServerError, map[string]any{"detail": "Internal error while generating the video"})
	case pathNoVideo:
		f.json(w, http.StatusOK, map[string]any{"video": map[string]any{"url": "", "content_type": "video/mp4"}})
	case pathNotMP4:
		f.json(w, http.StatusOK, map[string]any{"video": map[string]any{"url": f.srv.URL + "/files/html.mp4", "content_type": "video/mp4"}})
	case pathGone:
		f.json(w, http.StatusOK, map[string]any{"video": map[string]any{"url": f.srv.URL + "/files/gone.mp4", "content_type": "video/mp4"}})
	default:
		f.json(w, http.StatusOK, map[string]any{"video": map[string]any{
			"url": f.srv.URL + "/files/ok.mp4", "content_type": "video/mp4", "file_size": len(f.clip),
		}})
	}
}

func (f *fakeQueue) submitCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.submits
}

func (f *fakeQueue) renderer(key string) *QueueVideo {
	return &QueueVideo{
		BaseURL: f.srv.URL + "/", APIKey: key, PollEvery: 10 * time.Millisecond,
		Models: map[string]string{
			"kine-3.0": pathOK, "strict": pathRefuse, "broken": pathBroken, "empty": pathNoVideo,
			"html": pathNotMP4, "flaky": "/" + pathFlaky, "gone": pathGone, "overloaded": pathOverload,
		},
	}
}

func queueJob(model string) Job {
	return Job{RunID: "2026-11-22T10:00:00.000Z#1a2b3c4d", Kind: KindVideo, Model: model, Prompt: "a red kite over green hills", Seconds: 5, AspectRatio: "16:9"}
}

type recorder struct {
	mu   sync.Mutex
	seen []string
}

func (r *recorder) add(s string) { r.mu.Lock(); r.seen = append(r.seen, s); r.mu.Unlock() }
func (r *recorder) all() string  { r.mu.Lock(); defer r.mu.Unlock(); return strings.Join(r.seen, "|") }

func TestQueueVideoSuccess(t *testing.T) {
	f := newFakeQueue(t)
	q := f.renderer(testKey)
	dir := t.TempDir()
	job := queueJob("kine-3.0")
	job.Seconds, job.AspectRatio, job.ImageURL = 3, "9:16", "https://files.example/first.png?c=sig"
	var rec recorder
	var saved []QueueState
	var state QueueState
	out, err := q.RenderResume(context.Background(), job, dir, rec.add, &state, func(s QueueState) { saved = append(saved, s) })
	if err != nil {
		t.Fatalf("RenderResume: %v", err)
	}
	got, err := os.ReadFile(out.Path)
	if err != nil || !bytes.Equal(got, f.clip) {
		t.Fatalf("downloaded file differs from the served clip (%d vs %d bytes, %v)", len(got), len(f.clip), err)
	}
	if filepath.Dir(out.Path) != dir || strings.ContainsAny(filepath.Base(out.Path), "#:") || out.Ext != "mp4" || out.ContentType != "video/mp4" {
		t.Errorf("output %+v", out)
	}
	if files := listDir(t, dir); len(files) != 1 {
		t.Errorf("workdir holds %v", files)
	}
	for _, want := range []string{"IN_QUEUE (position 1)", "IN_QUEUE (position 0)", "IN_PROGRESS", "COMPLETED", "downloading"} {
		if !strings.Contains(rec.all(), want) {
			t.Errorf("progress %q lacks %q", rec.all(), want)
		}
	}
	if len(saved) != 1 || saved[0].RequestID != "req-1" || !strings.HasSuffix(saved[0].StatusURL, "/requests/req-1/status") || saved[0] != state {
		t.Errorf("saved %+v, state %+v", saved, state)
	}
	if f.submitCount() != 1 {
		t.Fatalf("%d submits", f.submitCount())
	}
	body := f.bodies[0]
	if body["prompt"] != job.Prompt || body["duration"] != "3" || body["aspect_ratio"] != "9:16" || body["image_url"] != job.ImageURL {
		t.Errorf("submitted %v", body)
	}

	// Text-to-video: no image_url at all (the fake rejects an empty one).
	out, err = q.Render(context.Background(), queueJob("kine-3.0"), t.TempDir(), nil)
	if err != nil {
		t.Fatalf("Render: %v", err)
	}
	if _, ok := f.bodies[1]["image_url"]; ok {
		t.Errorf("text-to-video submitted image_url: %v", f.bodies[1])
	}
	checkClip(t, out.Path, 1, 320, 180)
}

func TestQueueVideoResume(t *testing.T) {
	f := newFakeQueue(t)
	q := f.renderer(testKey)
	// The first attempt dies right after the provider accepted the job
	// (the worker crashed); its state was saved.
	ctx, cancel := context.WithCancel(context.Background())
	var saved QueueState
	var state QueueState
	_, err := q.RenderResume(ctx, queueJob("kine-3.0"), t.TempDir(), nil, &state, func(s QueueState) { saved = s; cancel() })
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("first attempt: %v, want context.Canceled", err)
	}
	if saved.Empty() || f.submitCount() != 1 {
		t.Fatalf("saved %+v after %d submits", saved, f.submitCount())
	}
	// The retry resumes the same request: no second submit, no second bill.
	var rec recorder
	resumed := saved
	calledSave := false
	out, err := q.RenderResume(context.Background(), queueJob("kine-3.0"), t.TempDir(), rec.add, &resumed, func(QueueState) { calledSave = true })
	if err != nil {
		t.Fatalf("resumed attempt: %v", err)
	}
	if f.submitCount() != 1 || calledSave {
		t.Errorf("resume submitted again (%d submits, save called %v)", f.submitCount(), calledSave)
	}
	if got, _ := os.ReadFile(out.Path); !bytes.Equal(got, f.clip) {
		t.Error("resumed download differs from the served clip")
	}
	if !strings.HasPrefix(rec.all(), "resuming req-1|") || !strings.Contains(rec.all(), "COMPLETED") {
		t.Errorf("progress %q", rec.all())
	}

	// A state holding only the request id (older heartbeat) still resumes.
	out, err = q.RenderResume(context.Background(), queueJob("kine-3.0"), t.TempDir(), nil, &QueueState{RequestID: "req-1"}, nil)
	if err != nil || f.submitCount() != 1 {
		t.Fatalf("id-only resume: %v, %d submits", err, f.submitCount())
	}
}

func TestQueueVideoRefused(t *testing.T) {
	f := newFakeQueue(t)
	dir := t.TempDir()
	_, err := f.renderer(testKey).Render(context.Background(), queueJob("strict"), dir, nil)
	var refused *RefusedError
	if !errors.As(err, &refused) || refused.Message != "The prompt was flagged by our content checker." {
		t.Fatalf("err = %v, want the provider's refusal", err)
	}
	if files := listDir(t, dir); len(files) != 0 {
		t.Errorf("a refused render left %v", files)
	}
}

func TestQueueVideoLocalFilter(t *testing.T) {
	f := newFakeQueue(t)
	q := f.renderer(testKey)
	flt, err := NewFilter([]string{`\bkite\b`})
	if err != nil {
		t.Fatal(err)
	}
	q.Filters = map[string]*Filter{"kine-3.0": flt}
	_, err = q.Render(context.Background(), queueJob("kine-3.0"), t.TempDir(), nil)
	var refused *RefusedError
	if !errors.As(err, &refused) || f.submitCount() != 0 {
		t.Fatalf("err = %v after %d submits, want a refusal before submitting", err, f.submitCount())
	}
}

// failure asserts err is a *FailedError at step with the given
// retryability whose message contains want.
func failure(t *testing.T, err error, step string, retryable bool, want string) {
	t.Helper()
	var failed *FailedError
	if !errors.As(err, &failed) {
		t.Fatalf("err = %v, want a *FailedError", err)
	}
	if failed.Step != step || failed.Retryable != retryable || !strings.Contains(failed.Message, want) {
		t.Errorf("got %+v, want step %q retryable %v message containing %q", failed, step, retryable, want)
	}
}

func TestQueueVideoFailures(t *testing.T) {
	f := newFakeQueue(t)
	ctx := context.Background()
	q := f.renderer(testKey)

	_, err := f.renderer("wrong-key").Render(ctx, queueJob("kine-3.0"), t.TempDir(), nil)
	failure(t, err, "submit", false, "refused the API key")

	_, err = q.Render(ctx, queueJob("overloaded"), t.TempDir(), nil)
	failure(t, err, "submit", true, "no capacity")

	job := queueJob("kine-3.0")
	job.Seconds = 7 // the provider only sells 3 and 5
	_, err = q.Render(ctx, job, t.TempDir(), nil)
	failure(t, err, "submit", false, "permitted: '3', '5'")

	_, err = q.Render(ctx, queueJob("unknown-model"), t.TempDir(), nil)
	failure(t, err, "validate", false, "unknown-model")

	_, err = q.Render(ctx, queueJob("broken"), t.TempDir(), nil)
	failure(t, err, "render", true, "Internal error while generating the video")

	_, err = q.Render(ctx, queueJob("empty"), t.TempDir(), nil)
	failure(t, err, "render", false, "without a video")

	dir := t.TempDir()
	_, err = q.Render(ctx, queueJob("html"), dir, nil)
	failure(t, err, "download", false, "not an MP4")
	if files := listDir(t, dir); len(files) != 0 {
		t.Errorf("a failed download left %v", files)
	}

	_, err = q.Render(ctx, queueJob("gone"), t.TempDir(), nil)
	failure(t, err, "download", true, "502")

	// A request the provider does not know (expired) is not resubmitted.
	_, err = q.RenderResume(ctx, queueJob("kine-3.0"), t.TempDir(), nil, &QueueState{RequestID: "req-999"}, nil)
	failure(t, err, "status", false, "Request not found")

	// Nobody listening: retryable.
	dead := &QueueVideo{BaseURL: "http://127.0.0.1:1", APIKey: testKey, Models: map[string]string{"kine-3.0": pathOK}}
	_, err = dead.Render(ctx, queueJob("kine-3.0"), t.TempDir(), nil)
	failure(t, err, "submit", true, "could not be reached")
}

func TestQueueVideoTransientPoll(t *testing.T) {
	f := newFakeQueue(t)
	var rec recorder
	out, err := f.renderer(testKey).Render(context.Background(), queueJob("flaky"), t.TempDir(), rec.add)
	if err != nil {
		t.Fatalf("one failed poll should be shrugged off: %v", err)
	}
	if got, _ := os.ReadFile(out.Path); !bytes.Equal(got, f.clip) {
		t.Error("download differs")
	}
}

func TestQueueVideoCancelWhilePolling(t *testing.T) {
	f := newFakeQueue(t)
	q := f.renderer(testKey)
	q.PollEvery = time.Hour
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := q.Render(ctx, queueJob("kine-3.0"), t.TempDir(), nil)
		done <- err
	}()
	time.Sleep(100 * time.Millisecond)
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("err = %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Render ignored the cancelled context")
	}
}

func TestProviderDetail(t *testing.T) {
	for body, want := range map[string][2]string{
		`{"detail":[{"msg":"bad","type":"value_error"},{"msg":"no","type":"content_policy_violation"}]}`: {"no", "content_policy_violation"},
		`{"detail":[{"msg":"a"},{"msg":"b"}]}`:                             {"a; b", ""},
		`{"detail":"plain words"}`:                                         {"plain words", ""},
		`{"error":{"message":"nested","type":"content_policy_violation"}}`: {"nested", "content_policy_violation"},
		`{"message":"top level"}`:                                          {"top level", ""},
		`<html>`:                                                           {"", ""},
	} {
		msg, typ := providerDetail([]byte(body))
		if msg != want[0] || typ != want[1] {
			t.Errorf("providerDetail(%s) = %q, %q; want %q, %q", body, msg, typ, want[0], want[1])
		}
	}
}

func TestAuthorizeOnlyProviderOrigin(t *testing.T) {
	q := &QueueVideo{BaseURL: "https://queue.provider.example", APIKey: "k"}
	for target, want := range map[string]string{
		"https://queue.provider.example/a/requests/1":  "Key k",
		"https://cdn.provider.example/files/x.mp4":     "",
		"http://queue.provider.example/a/requests/1":   "",
		"https://queue.provider.example.evil.test/a/1": "",
	} {
		req, _ := http.NewRequest(http.MethodGet, target, nil)
		q.api().authorize(req)
		if got := req.Header.Get("Authorization"); got != want {
			t.Errorf("%s: Authorization %q, want %q", target, got, want)
		}
	}
}
