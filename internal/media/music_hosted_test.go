package media

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"
)

const musicKey = "sk-music-test"

// fakeMusicAPI plays a hosted music-generation API: POST
// /v1/music/generate (Bearer key, JSON model/prompt/duration_seconds) →
// 202 {"id","status":"queued"}; GET /v1/music/generate/{id} → queued
// once, processing twice, then succeeded with an audio_url on a separate
// CDN origin (or failed with {"error":{"code","message"}}). Errors are
// {"error":{"code","message"}}. What a generation ends in depends on
// words in its prompt.
type fakeMusicAPI struct {
	t        *testing.T
	api, cdn *httptest.Server
	audio    []byte

	mu      sync.Mutex
	submits int
	last    map[string]any // the last submit's body
	gens    map[string]*fakeGen
	cdnAuth []string // Authorization headers the CDN saw
}

type fakeGen struct {
	prompt string
	polls  int
}

func newFakeMusic(t *testing.T) (*fakeMusicAPI, *HostedMusic) {
	f := &fakeMusicAPI{t: t, audio: sampleMusic(t), gens: map[string]*fakeGen{}}
	f.api = httptest.NewServer(http.HandlerFunc(f.serveAPI))
	f.cdn = httptest.NewServer(http.HandlerFunc(f.serveCDN))
	t.Cleanup(f.api.Close)
	t.Cleanup(f.cdn.Close)
	h := &HostedMusic{
		BaseURL: f.api.URL + "/", APIKey: musicKey, PollEvery: 5 * time.Millisecond,
		Models: map[string]string{"compose-pro": "music-2", "compose-old": "music-0"},
	}
	return f, h
}

func (f *fakeMusicAPI) json(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func (f *fakeMusicAPI) fail(w http.ResponseWriter, status int, code, msg string) {
	f.json(w, status, map[string]any{"error": map[string]string{"code": code, "message": msg}})
}

func (f *fakeMusicAPI) serveAPI(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("Authorization") != "Bearer "+musicKey {
		f.fail(w, http.StatusUnauthorized, "invalid_api_key", "Invalid API key")
		return
	}
	switch id, isGet := strings.CutPrefix(r.URL.Path, "/v1/music/generate/"); {
	case r.URL.Path == "/v1/music/generate" && r.Method == http.MethodPost:
		f.submit(w, r)
	case isGet && r.Method == http.MethodGet && !strings.Contains(id, "/"):
		f.status(w, id)
	default:
		f.fail(w, http.StatusNotFound, "not_found", "No route "+r.Method+" "+r.URL.Path)
	}
}

func (f *fakeMusicAPI) submit(w http.ResponseWriter, r *http.Request) {
	if ct := r.Header.Get("Content-Type"); ct != "application/json" {
		f.t.Errorf("submit Content-Type %q", ct)
	}
	var body struct {
		Model    string  `json:"model"`
		Prompt   *string `json:"prompt"`
		Duration *int    `json:"duration_seconds"`
	}
	dec := json.NewDecoder(r.Body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&body); err != nil || body.Prompt == nil || body.Duration == nil {
		f.fail(w, http.StatusUnprocessableEntity, "invalid_request", fmt.Sprintf("model, prompt and duration_seconds are required (%v)", err))
		return
	}
	f.mu.Lock()
	f.submits++
	f.last = map[string]any{"model": body.Model, "prompt": *body.Prompt, "duration_seconds": *body.Duration}
	f.mu.Unlock()
	prompt := strings.ToLower(*body.Prompt)
	switch {
	case body.Model != "music-2":
		f.fail(w, http.StatusUnprocessableEntity, "invalid_model", "Unknown model "+body.Model)
	case *body.Duration < 1 || *body.Duration > 300:
		f.fail(w, http.StatusUnprocessableEntity, "invalid_duration", "duration_seconds must be 1..300")
	case strings.Contains(prompt, "busy"):
		w.Header().Set("Retry-After", "2")
		f.fail(w, http.StatusTooManyRequests, "rate_limited", "Too many requests")
	case strings.Contains(prompt, "outage"):
		f.fail(w, http.StatusServiceUnavailable, "unavailable", "The service is temporarily unavailable")
	case strings.Contains(prompt, "forbidden"):
		f.fail(w, http.StatusBadRequest, "content_policy", "This prompt violates our content policy.")
	case strings.Contains(prompt, "nameless"):
		f.json(w, http.StatusAccepted, map[string]any{"status": "queued"})
	default:
		f.mu.Lock()
		id := fmt.Sprintf("gen_%04d", len(f.gens)+1)
		f.gens[id] = &fakeGen{prompt: prompt}
		f.mu.Unlock()
		f.json(w, http.StatusAccepted, map[string]any{"id": id, "status": "queued"})
	}
}

func (f *fakeMusicAPI) status(w http.ResponseWriter, id string) {
	f.mu.Lock()
	g, ok := f.gens[id]
	n := 0
	if ok {
		n = g.polls
		g.polls++
	}
	f.mu.Unlock()
	if !ok {
		f.fail(w, http.StatusNotFound, "not_found", "No such generation")
		return
	}
	p := g.prompt
	switch {
	case strings.Contains(p, "flaky") && n == 1:
		http.Error(w, "bad gateway", http.StatusBadGateway)
		return
	case strings.Contains(p, "down") && n >= 1:
		http.Error(w, "bad gateway", http.StatusBadGateway)
		return
	case n == 0:
		f.json(w, http.StatusOK, map[string]any{"id": id, "status": "queued"})
		return
	case n < 3 || strings.Contains(p, "endless"):
		f.json(w, http.StatusOK, map[string]any{"id": id, "status": "processing"})
		return
	}
	failed := func(code, msg string) {
		f.json(w, http.StatusOK, map[string]any{"id": id, "status": "failed", "error": map[string]string{"code": code, "message": msg}})
	}
	switch {
	case strings.Contains(p, "artist"):
		failed("copyright", "The prompt names a protected work.")
	case strings.Contains(p, "crash"):
		failed("internal_error", "The generator crashed.")
	case strings.Contains(p, "garbled"):
		failed("invalid_prompt", "Could not understand the prompt.")
	case strings.Contains(p, "noaudio"):
		f.json(w, http.StatusOK, map[string]any{"id": id, "status": "succeeded"})
	default:
		file := id + ".mp3"
		for _, k := range []string{"html", "huge", "gone"} {
			if strings.Contains(p, k) {
				file = k
			}
		}
		f.json(w, http.StatusOK, map[string]any{"id": id, "status": "succeeded", "audio_url": f.cdn.URL + "/files/" + file, "duration_seconds": 2})
	}
}

// serveCDN is where the audio lives: another origin, no key needed.
func (f *fakeMusicAPI) serveCDN(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	f.cdnAuth = append(f.cdnAuth, r.Header.Get("Authorization"))
	f.mu.Unlock()
	switch strings.TrimPrefix(r.URL.Path, "/files/") {
	case "html":
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprint(w, "<html>maintenance</html>")
	case "huge":
		w.Header().Set("Content-Type", "audio/mpeg")
		w.Header().Set("Content-Length", fmt.Sprint(maxMusicBytes+1))
		_, _ = w.Write(f.audio) // then the connection ends short
	case "gone":
		http.Error(w, "gone", http.StatusGone)
	default:
		w.Header().Set("Content-Type", "audio/mpeg")
		_, _ = w.Write(f.audio)
	}
}

func (f *fakeMusicAPI) counts() (submits int, cdnAuth []string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.submits, append([]string(nil), f.cdnAuth...)
}

func proJob(prompt string) Job {
	return Job{RunID: "2026-11-22T10:00:00.000Z#h1", Kind: KindMusic, Model: "compose-pro", Prompt: prompt, Seconds: 30}
}

func TestHostedMusicSuccess(t *testing.T) {
	t.Parallel()
	f, h := newFakeMusic(t)
	dir := t.TempDir()
	var seen []string
	out, err := h.Render(context.Background(), proJob("upbeat synthwave with drums at 118 bpm"), dir, func(s string) { seen = append(seen, s) })
	if err != nil {
		t.Fatal(err)
	}
	if out.ContentType != "audio/mpeg" || out.Ext != "mp3" || out.Path != dir+"/2026-11-22T10-00-00.000Z-h1.mp3" {
		t.Errorf("output %+v", out)
	}
	if files := listDir(t, dir); len(files) != 1 || files[0] != out.Path {
		t.Errorf("workdir holds %v", files)
	}
	got, err := os.ReadFile(out.Path)
	if err != nil || string(got) != string(f.audio) {
		t.Errorf("stored %d bytes (%v), want the provider's %d", len(got), err, len(f.audio))
	}
	checkMP3(t, out.Path, 2)
	if strings.Join(seen, "|") != "queued|processing|succeeded|downloading|downloaded" {
		t.Errorf("progress %v", seen)
	}
	submits, cdnAuth := f.counts()
	f.mu.Lock()
	want := map[string]any{"model": "music-2", "prompt": "upbeat synthwave with drums at 118 bpm", "duration_seconds": 30}
	if fmt.Sprint(f.last) != fmt.Sprint(want) {
		t.Errorf("the provider got %v, want %v", f.last, want)
	}
	f.mu.Unlock()
	if submits != 1 {
		t.Errorf("%d submits", submits)
	}
	// The key goes to the provider only, not to the CDN.
	if len(cdnAuth) != 1 || cdnAuth[0] != "" {
		t.Errorf("the CDN got Authorization %q", cdnAuth)
	}
}

func TestHostedMusicFailures(t *testing.T) {
	t.Parallel()
	f, h := newFakeMusic(t)
	wrongKey := *h
	wrongKey.APIKey = "sk-wrong"
	gone := *h
	gone.BaseURL = "http://127.0.0.1:1" // nothing listens there
	filter, err := NewFilter([]string{`\bin the style of\b`})
	if err != nil {
		t.Fatal(err)
	}
	filtered := *h
	filtered.Filters = map[string]*Filter{"compose-pro": filter}
	for _, tc := range []struct {
		name      string
		h         *HostedMusic
		job       Job
		refused   string // a RefusedError with this text, or:
		step      string
		retryable bool
		msg       string
		submits   int // orders the provider took
	}{
		{name: "wrong key", h: &wrongKey, job: proJob("piano"), step: "submit", msg: "refused the API key (HTTP 401): Invalid API key"},
		{name: "upstream model unknown", h: h, job: Job{Kind: KindMusic, Model: "compose-old", Prompt: "piano", Seconds: 30}, step: "submit", msg: "HTTP 422: Unknown model music-0", submits: 1},
		{name: "too long for the provider", h: h, job: Job{Kind: KindMusic, Model: "compose-pro", Prompt: "piano", Seconds: 400}, step: "submit", msg: "HTTP 422", submits: 1},
		{name: "rate limited", h: h, job: proJob("busy piano"), step: "submit", retryable: true, msg: "HTTP 429: Too many requests", submits: 1},
		{name: "outage", h: h, job: proJob("outage"), step: "submit", retryable: true, msg: "HTTP 503", submits: 1},
		{name: "unreachable", h: &gone, job: proJob("piano"), step: "submit", retryable: true, msg: "could not be reached"},
		{name: "no generation id", h: h, job: proJob("nameless"), step: "submit", msg: "names no generation", submits: 1},
		{name: "refused at submit", h: h, job: proJob("forbidden words"), refused: "This prompt violates our content policy.", submits: 1},
		{name: "refused while generating", h: h, job: proJob("like that famous artist"), refused: "The prompt names a protected work.", submits: 1},
		{name: "local filter", h: &filtered, job: proJob("piano in the style of someone"), refused: refusedByFilter},
		{name: "generator crashed", h: h, job: proJob("crash"), step: "render", retryable: true, msg: "The generator crashed. (internal_error)", submits: 1},
		{name: "generation failed", h: h, job: proJob("garbled"), step: "render", msg: "Could not understand the prompt. (invalid_prompt)", submits: 1},
		{name: "status down", h: h, job: proJob("down"), step: "status", retryable: true, msg: "HTTP 502", submits: 1},
		{name: "no audio", h: h, job: proJob("noaudio"), step: "render", msg: "without an audio URL", submits: 1},
		{name: "not an MP3", h: h, job: proJob("html"), step: "download", msg: "is not an MP3", submits: 1},
		{name: "too big", h: h, job: proJob("huge"), step: "download", msg: "over the 64 MB limit", submits: 1},
		{name: "file gone", h: h, job: proJob("gone"), step: "download", msg: "HTTP 410", submits: 1},
		{name: "unknown model", h: h, job: Job{Kind: KindMusic, Model: "compose-x", Prompt: "piano", Seconds: 30}, step: "validate", msg: `no provider model is configured for "compose-x"`},
		{name: "blank prompt", h: h, job: Job{Kind: KindMusic, Model: "compose-pro", Prompt: " ", Seconds: 30}, step: "validate", msg: "empty"},
		{name: "wrong kind", h: h, job: Job{Kind: KindSpeech, Model: "compose-pro", Text: "hi"}, step: "validate", msg: "cannot render a speech job"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before, _ := f.counts()
			dir := t.TempDir()
			_, err := tc.h.Render(context.Background(), tc.job, dir, nil)
			if tc.refused != "" {
				var re *RefusedError
				if !errors.As(err, &re) || re.Message != tc.refused {
					t.Fatalf("got %v, want refusal %q", err, tc.refused)
				}
			} else {
				var fe *FailedError
				if !errors.As(err, &fe) || fe.Step != tc.step || fe.Retryable != tc.retryable || !strings.Contains(fe.Message, tc.msg) {
					t.Fatalf("got %#v (%v), want a FailedError at %s, retryable %t, saying %q", err, err, tc.step, tc.retryable, tc.msg)
				}
			}
			if after, _ := f.counts(); after-before != tc.submits {
				t.Errorf("the provider took %d orders, want %d", after-before, tc.submits)
			}
			if files := listDir(t, dir); len(files) != 0 {
				t.Errorf("a failure left %v", files)
			}
		})
	}
}

// A status poll failing once is shrugged off.
func TestHostedMusicFlakyStatus(t *testing.T) {
	t.Parallel()
	_, h := newFakeMusic(t)
	if _, err := h.Render(context.Background(), proJob("flaky piano"), t.TempDir(), nil); err != nil {
		t.Fatal(err)
	}
}

func TestHostedMusicResume(t *testing.T) {
	t.Parallel()
	f, h := newFakeMusic(t)
	job := proJob("calm piano")

	// Attempt 1 is lost (the worker stops) right after the order: the
	// state was saved first.
	ctx, cancel := context.WithCancel(context.Background())
	var state QueueState
	var saved []QueueState
	_, err := h.RenderResume(ctx, job, t.TempDir(), nil, &state, func(s QueueState) {
		saved = append(saved, s)
		cancel()
	})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("attempt 1: %v", err)
	}
	if len(saved) != 1 || saved[0].RequestID != "gen_0001" || saved[0].StatusURL != f.api.URL+"/v1/music/generate/gen_0001" || saved[0] != state {
		t.Fatalf("saved %+v, state %+v", saved, state)
	}

	// Attempt 2 polls the same generation and does not order again.
	dir := t.TempDir()
	var seen []string
	resumed := saved[0]
	out, err := h.RenderResume(context.Background(), job, dir, func(s string) { seen = append(seen, s) }, &resumed, func(s QueueState) {
		t.Errorf("attempt 2 saved %+v", s)
	})
	if err != nil {
		t.Fatal(err)
	}
	checkMP3(t, out.Path, 2)
	if submits, _ := f.counts(); submits != 1 {
		t.Errorf("%d orders for one run", submits)
	}
	if len(seen) == 0 || seen[0] != "resuming gen_0001" || seen[len(seen)-1] != "downloaded" {
		t.Errorf("progress %v", seen)
	}

	// A saved id without its URL (an older heartbeat) still resumes.
	f.mu.Lock()
	f.gens["gen_0001"].polls = 0
	f.mu.Unlock()
	bare := QueueState{RequestID: "gen_0001"}
	if _, err := h.RenderResume(context.Background(), job, t.TempDir(), nil, &bare, nil); err != nil {
		t.Errorf("resuming by id: %v", err)
	}
	if submits, _ := f.counts(); submits != 1 {
		t.Errorf("%d orders for one run", submits)
	}

	// A generation the provider no longer knows: permanent.
	unknown := QueueState{RequestID: "gen_9999"}
	var fe *FailedError
	if _, err := h.RenderResume(context.Background(), job, t.TempDir(), nil, &unknown, nil); !errors.As(err, &fe) || fe.Retryable || fe.Step != "status" {
		t.Errorf("unknown generation: %v", err)
	}
}

// Polls failing for good end the attempt retryably and keep the state,
// so the next attempt polls the same generation.
func TestHostedMusicKeepsStateOnTransientPolls(t *testing.T) {
	t.Parallel()
	f, h := newFakeMusic(t)
	var state QueueState
	var saved []QueueState
	_, err := h.RenderResume(context.Background(), proJob("down"), t.TempDir(), nil, &state, func(s QueueState) { saved = append(saved, s) })
	var fe *FailedError
	if !errors.As(err, &fe) || !fe.Retryable || fe.Step != "status" {
		t.Fatalf("got %v", err)
	}
	if len(saved) != 1 || state.Empty() || state != saved[0] {
		t.Errorf("state %+v, saved %+v", state, saved)
	}
	if submits, _ := f.counts(); submits != 1 {
		t.Errorf("%d orders", submits)
	}
}

// A generation that failed transiently is dropped: retrying it would
// repeat the failure, so the state is cleared (and saved cleared) and the
// next attempt orders again.
func TestHostedMusicDropsFailedGeneration(t *testing.T) {
	t.Parallel()
	f, h := newFakeMusic(t)
	var state QueueState
	var saved []QueueState
	save := func(s QueueState) { saved = append(saved, s) }
	_, err := h.RenderResume(context.Background(), proJob("crash"), t.TempDir(), nil, &state, save)
	var fe *FailedError
	if !errors.As(err, &fe) || !fe.Retryable {
		t.Fatalf("got %v", err)
	}
	if len(saved) != 2 || saved[0].RequestID != "gen_0001" || !saved[1].Empty() || !state.Empty() {
		t.Fatalf("saved %+v, state %+v", saved, state)
	}
	if _, err := h.RenderResume(context.Background(), proJob("crash"), t.TempDir(), nil, &state, save); !errors.As(err, &fe) {
		t.Fatalf("attempt 2: %v", err)
	}
	if submits, _ := f.counts(); submits != 2 || saved[2].RequestID != "gen_0002" {
		t.Errorf("%d orders, saved %+v", submits, saved)
	}
}

func TestHostedMusicCancel(t *testing.T) {
	t.Parallel()
	_, h := newFakeMusic(t)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	dir := t.TempDir()
	var state QueueState
	_, err := h.RenderResume(ctx, proJob("endless"), dir, nil, &state, nil)
	if !errors.Is(err, context.DeadlineExceeded) || time.Since(start) > 3*time.Second {
		t.Errorf("got %v after %v, want context.DeadlineExceeded promptly", err, time.Since(start))
	}
	// Cancellation is not a failure of the generation: the state stays
	// for the next attempt.
	if state.Empty() {
		t.Error("a cancelled attempt dropped the state")
	}
	if files := listDir(t, dir); len(files) != 0 {
		t.Errorf("a cancelled render left %v", files)
	}
}

func TestMusicErrorCodes(t *testing.T) {
	t.Parallel()
	body := func(code string) []byte {
		return []byte(`{"error":{"code":"` + code + `","message":"declined"}}`)
	}
	for _, code := range []string{"content_policy", "content_policy_violation", "moderation_blocked", "safety_filter", "copyright_infringement", "Content_Policy"} {
		var re *RefusedError
		if err := musicFailure("submit", http.StatusBadRequest, body(code)); !errors.As(err, &re) || re.Message != "declined" {
			t.Errorf("%s: %v", code, err)
		}
		if err := generationFailure(&musicError{Code: code, Message: "declined"}); !errors.As(err, &re) {
			t.Errorf("failed generation %s: %v", code, err)
		}
	}
	var fe *FailedError
	// A 5xx naming a policy is still the provider's trouble.
	if err := musicFailure("submit", http.StatusInternalServerError, body("content_policy")); !errors.As(err, &fe) || !fe.Retryable {
		t.Errorf("500: %v", err)
	}
	for status, retryable := range map[int]bool{401: false, 403: false, 422: false, 404: false, 429: true, 500: true, 503: true} {
		if err := musicFailure("submit", status, body("whatever")); !errors.As(err, &fe) || fe.Retryable != retryable {
			t.Errorf("HTTP %d: %v, want retryable %t", status, err, retryable)
		}
	}
	for code, transient := range map[string]bool{"internal_error": true, "timeout": true, "overloaded": true, "invalid_prompt": false, "": false} {
		err := generationFailure(&musicError{Code: code})
		var gf *generationFailed
		if errors.As(err, &gf) != transient || !errors.As(err, &fe) || fe.Retryable != transient {
			t.Errorf("failed generation %q: %v", code, err)
		}
	}
	if err := generationFailure(nil); !errors.As(err, &fe) || fe.Retryable {
		t.Errorf("failed generation without an error: %v", err)
	}
}
