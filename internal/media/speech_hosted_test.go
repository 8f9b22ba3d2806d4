package media

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// sampleSpeechMP3 is a real MP3 made by LocalSpeech: what the fake
// provider answers with.
var (
	speechOnce sync.Once
	speechMP3  []byte
	speechErr  error
)

func sampleSpeechMP3(t testing.TB) []byte {
	t.Helper()
	needEspeak(t)
	speechOnce.Do(func() {
		dir, err := os.MkdirTemp("", "media-speech-")
		if err != nil {
			speechErr = err
			return
		}
		defer os.RemoveAll(dir)
		s := &LocalSpeech{Voices: testVoices}
		out, err := s.Render(context.Background(), Job{RunID: "sample#1", Kind: KindSpeech, Model: "speech-v3", Text: "Hello from the provider.", Voice: "aria"}, dir, nil)
		if err != nil {
			speechErr = err
			return
		}
		speechMP3, speechErr = os.ReadFile(out.Path)
	})
	if speechErr != nil {
		t.Fatalf("rendering the sample speech: %v", speechErr)
	}
	return speechMP3
}

// fakeTTS plays the hosted text-to-speech API: POST
// /v1/text-to-speech/{voice}?output_format=..., key in xi-api-key, JSON
// {"text","model_id"}; the MP3 on success, {"detail":{"status","message"}}
// on errors (FastAPI's list for 422 validation errors).
type fakeTTS struct {
	t     *testing.T
	key   string
	audio []byte
	mu    sync.Mutex
	calls int
	last  struct{ Text, ModelID, Voice string }
}

func (f *fakeTTS) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	f.calls++
	f.mu.Unlock()
	fail := func(code int, status, msg string) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		_ = json.NewEncoder(w).Encode(map[string]any{"detail": map[string]string{"status": status, "message": msg}})
	}
	voice, ok := strings.CutPrefix(r.URL.Path, "/v1/text-to-speech/")
	if r.Method != http.MethodPost || !ok || strings.Contains(voice, "/") {
		fail(http.StatusNotFound, "not_found", "no such route")
		return
	}
	if r.Header.Get("xi-api-key") != f.key {
		fail(http.StatusUnauthorized, "invalid_api_key", "Invalid API key")
		return
	}
	if got := r.URL.Query().Get("output_format"); got != "mp3_44100_128" {
		f.t.Errorf("output_format %q", got)
	}
	if ct := r.Header.Get("Content-Type"); ct != "application/json" {
		f.t.Errorf("Content-Type %q", ct)
	}
	var body struct {
		Text    *string `json:"text"`
		ModelID string  `json:"model_id"`
	}
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil || body.Text == nil || *body.Text == "" {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnprocessableEntity)
		_, _ = io.WriteString(w, `{"detail":[{"loc":["body","text"],"msg":"field required","type":"value_error.missing"}]}`)
		return
	}
	f.mu.Lock()
	f.last.Text, f.last.ModelID, f.last.Voice = *body.Text, body.ModelID, voice
	f.mu.Unlock()
	text := *body.Text
	switch {
	case body.ModelID != "eleven_v3" && body.ModelID != "eleven_multilingual_v2":
		fail(http.StatusBadRequest, "model_not_found", "A model with model ID "+body.ModelID+" does not exist")
	case voice == "v-busy":
		fail(http.StatusTooManyRequests, "too_many_concurrent_requests", "Too many concurrent requests")
	case voice == "v-down":
		fail(http.StatusServiceUnavailable, "service_unavailable", "The service is temporarily unavailable")
	case voice == "v-unvalidated":
		fail(http.StatusUnprocessableEntity, "invalid_voice_settings", "Voice settings are out of range")
	case voice == "v-quota":
		fail(http.StatusUnauthorized, "quota_exceeded", "This request exceeds your quota")
	case strings.Contains(strings.ToLower(text), "forbidden words"):
		fail(http.StatusBadRequest, "content_policy_violation", "This text violates our content policy.")
	case voice == "v-html":
		w.Header().Set("Content-Type", "audio/mpeg")
		_, _ = io.WriteString(w, "<html>maintenance</html>")
	case voice == "v-huge":
		w.Header().Set("Content-Type", "audio/mpeg")
		chunk := make([]byte, 1<<20)
		copy(chunk, f.audio)
		for range maxSpeechBytes>>20 + 1 {
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
	case voice == "v-hang":
		<-r.Context().Done()
	default:
		w.Header().Set("Content-Type", "audio/mpeg")
		w.Header().Set("Content-Length", fmt.Sprint(len(f.audio)))
		_, _ = w.Write(f.audio)
	}
}

func newHostedSpeech(t *testing.T) (*HostedSpeech, *fakeTTS) {
	fake := &fakeTTS{t: t, key: "sk-test", audio: sampleSpeechMP3(t)}
	srv := httptest.NewServer(fake)
	t.Cleanup(srv.Close)
	voices := map[string]string{"aria": "v-aria"}
	for _, v := range []string{"busy", "down", "unvalidated", "quota", "html", "huge", "hang"} {
		voices[v] = "v-" + v
	}
	return &HostedSpeech{
		BaseURL: srv.URL + "/", APIKey: "sk-test", Voices: voices,
		Models: map[string]string{"speech-v3": "eleven_v3", "speech-multilingual-v2": "eleven_multilingual_v2", "speech-old": "retired_model"},
		HTTP:   srv.Client(),
	}, fake
}

func TestHostedSpeechSuccess(t *testing.T) {
	t.Parallel()
	h, fake := newHostedSpeech(t)
	for _, tc := range []struct{ model, text, sent, upstream string }{
		// v3 performs directions itself, so they go as typed.
		{"speech-v3", "Hello. [whispers] A secret.", "Hello. [whispers] A secret.", "eleven_v3"},
		// Other models would read them out: they are left out.
		{"speech-multilingual-v2", "Hallo. [whispers] Ein Geheimnis [laughs].", "Hallo. Ein Geheimnis.", "eleven_multilingual_v2"},
	} {
		dir := t.TempDir()
		var seen []string
		out, err := h.Render(context.Background(), Job{RunID: "2026-11-22T10:00:00.000Z#abc", Kind: KindSpeech, Model: tc.model, Text: tc.text, Voice: "aria"}, dir, func(s string) { seen = append(seen, s) })
		if err != nil {
			t.Fatalf("%s: %v", tc.model, err)
		}
		if out.ContentType != "audio/mpeg" || out.Ext != "mp3" || out.Path != filepath.Join(dir, "2026-11-22T10-00-00.000Z-abc.mp3") {
			t.Errorf("output %+v", out)
		}
		if files := listDir(t, dir); len(files) != 1 || files[0] != out.Path {
			t.Errorf("workdir holds %v", files)
		}
		got, err := os.ReadFile(out.Path)
		if err != nil || string(got) != string(fake.audio) {
			t.Errorf("stored %d bytes (%v), want the provider's %d", len(got), err, len(fake.audio))
		}
		if r := decodeSpeech(t, out); r.secs < 0.8 || r.secs > 4 {
			t.Errorf("%.2f s", r.secs)
		}
		fake.mu.Lock()
		if fake.last.Text != tc.sent || fake.last.ModelID != tc.upstream || fake.last.Voice != "v-aria" {
			t.Errorf("the provider got %+v, want text %q, model %s, voice v-aria", fake.last, tc.sent, tc.upstream)
		}
		fake.mu.Unlock()
		if strings.Join(seen, "|") != "speaking|downloading|downloaded" {
			t.Errorf("progress %v", seen)
		}
	}
}

func TestHostedSpeechFailures(t *testing.T) {
	t.Parallel()
	h, fake := newHostedSpeech(t)
	wrongKey := *h
	wrongKey.APIKey = "sk-wrong"
	filter, err := NewFilter([]string{`\bbomb threat\b`})
	if err != nil {
		t.Fatal(err)
	}
	filtered := *h
	filtered.Filters = map[string]*Filter{"speech-v3": filter}
	gone := *h
	gone.BaseURL = "http://127.0.0.1:1" // nothing listens there
	for _, tc := range []struct {
		name      string
		h         *HostedSpeech
		model     string
		voice     string
		text      string
		refused   string // a RefusedError with this text, or:
		step      string
		retryable bool
		msg       string
		calls     int // requests the provider saw
	}{
		{name: "wrong key", h: &wrongKey, voice: "aria", text: "hi", step: "render", msg: "refused the API key (HTTP 401): Invalid API key", calls: 1},
		{name: "quota", h: h, voice: "quota", text: "hi", step: "render", msg: "HTTP 401", calls: 1},
		{name: "validation", h: h, voice: "unvalidated", text: "hi", step: "render", msg: "HTTP 422: Voice settings are out of range", calls: 1},
		{name: "upstream model gone", h: h, model: "speech-old", voice: "aria", text: "hi", step: "render", msg: "HTTP 400", calls: 1},
		{name: "rate limited", h: h, voice: "busy", text: "hi", step: "render", retryable: true, msg: "HTTP 429: Too many concurrent requests", calls: 1},
		{name: "provider down", h: h, voice: "down", text: "hi", step: "render", retryable: true, msg: "HTTP 503", calls: 1},
		{name: "unreachable", h: &gone, voice: "aria", text: "hi", step: "render", retryable: true, msg: "could not be reached"},
		{name: "provider refuses", h: h, voice: "aria", text: "Say the Forbidden Words.", refused: "This text violates our content policy.", calls: 1},
		{name: "local filter", h: &filtered, voice: "aria", text: "a bomb [pause] threat", refused: refusedByFilter},
		{name: "not an MP3", h: h, voice: "html", text: "hi", step: "download", msg: "not an MP3", calls: 1},
		{name: "too big", h: h, voice: "huge", text: "hi", step: "download", msg: "over the 32 MB limit", calls: 1},
		{name: "unknown voice", h: h, voice: "nobody", text: "hi", step: "validate", msg: `voice "nobody" is not offered`},
		{name: "unknown model", h: h, model: "speech-x", voice: "aria", text: "hi", step: "validate", msg: `no provider model is configured for "speech-x"`},
		{name: "nothing to say", h: h, model: "speech-multilingual-v2", voice: "aria", text: "[laughs]", step: "validate", msg: "nothing to say"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fake.mu.Lock()
			fake.calls = 0
			fake.mu.Unlock()
			if tc.model == "" {
				tc.model = "speech-v3"
			}
			dir := t.TempDir()
			_, err := tc.h.Render(context.Background(), Job{RunID: "r#1", Kind: KindSpeech, Model: tc.model, Text: tc.text, Voice: tc.voice}, dir, nil)
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
			fake.mu.Lock()
			if fake.calls != tc.calls {
				t.Errorf("the provider saw %d requests, want %d", fake.calls, tc.calls)
			}
			fake.mu.Unlock()
			if files := listDir(t, dir); len(files) != 0 {
				t.Errorf("a failure left %v", files)
			}
		})
	}
}

func TestHostedSpeechValidationError(t *testing.T) {
	t.Parallel()
	// The FastAPI-style 422 list reads as a permanent failure too.
	err := speechFailure(http.StatusUnprocessableEntity, []byte(`{"detail":[{"loc":["body","text"],"msg":"field required","type":"value_error.missing"}]}`))
	var fe *FailedError
	if !errors.As(err, &fe) || fe.Retryable || !strings.Contains(fe.Message, "HTTP 422: field required") {
		t.Errorf("got %v", err)
	}
	// A refusal is a 4xx; a 5xx naming a policy is still the provider's
	// trouble, and retryable.
	err = speechFailure(http.StatusInternalServerError, []byte(`{"detail":{"status":"content_policy_violation","message":"checker down"}}`))
	if !errors.As(err, &fe) || !fe.Retryable {
		t.Errorf("got %v", err)
	}
	var re *RefusedError
	if err := speechFailure(http.StatusBadRequest, []byte(`{"detail":{"status":"content_moderation_failed","message":"flagged"}}`)); !errors.As(err, &re) || re.Message != "flagged" {
		t.Errorf("got %v", err)
	}
}

func TestHostedSpeechCancel(t *testing.T) {
	t.Parallel()
	h, _ := newHostedSpeech(t)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	dir := t.TempDir()
	_, err := h.Render(ctx, Job{RunID: "r#1", Kind: KindSpeech, Model: "speech-v3", Text: "hi", Voice: "hang"}, dir, nil)
	if !errors.Is(err, context.DeadlineExceeded) || time.Since(start) > 3*time.Second {
		t.Errorf("got %v after %v, want context.DeadlineExceeded promptly", err, time.Since(start))
	}
	if files := listDir(t, dir); len(files) != 0 {
		t.Errorf("a cancelled render left %v", files)
	}
}

// The key goes to the provider only, not to wherever it redirects.
func TestHostedSpeechRedirect(t *testing.T) {
	t.Parallel()
	audio := sampleSpeechMP3(t)
	var mu sync.Mutex
	var keys []string
	cdn := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		keys = append(keys, r.Header.Get("xi-api-key"))
		mu.Unlock()
		w.Header().Set("Content-Type", "audio/mpeg")
		_, _ = w.Write(audio)
	}))
	t.Cleanup(cdn.Close)
	provider := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("xi-api-key") != "sk-test" {
			t.Errorf("the provider got key %q", r.Header.Get("xi-api-key"))
		}
		http.Redirect(w, r, cdn.URL+"/audio.mp3", http.StatusTemporaryRedirect)
	}))
	t.Cleanup(provider.Close)
	h := &HostedSpeech{BaseURL: provider.URL, APIKey: "sk-test", Voices: map[string]string{"aria": "v-aria"}, Models: map[string]string{"speech-v3": "eleven_v3"}}
	if _, err := h.Render(context.Background(), Job{RunID: "r#1", Kind: KindSpeech, Model: "speech-v3", Text: "hi", Voice: "aria"}, t.TempDir(), nil); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(keys) != 1 || keys[0] != "" {
		t.Errorf("the other origin got keys %q", keys)
	}
}

func TestIsMP3(t *testing.T) {
	t.Parallel()
	real := sampleSpeechMP3(t)
	if !isMP3(real) {
		t.Fatalf("LocalSpeech's MP3 (starting % x) is not recognised", real[:16])
	}
	// The same audio without its ID3 tag starts with a frame header.
	size := 10 + (int(real[6])<<21 | int(real[7])<<14 | int(real[8])<<7 | int(real[9]))
	if string(real[:3]) != "ID3" || !isMP3(real[size:]) {
		t.Errorf("the bare MPEG frames are not recognised")
	}
	for name, b := range map[string][]byte{
		"empty":        nil,
		"html":         []byte("<html></html>"),
		"json":         []byte(`{"detail":{"status":"ok"}}`),
		"tag only":     real[:size],
		"bad tag size": append([]byte("ID3\x04\x00\x00\x80\x00\x00\x00"), real[size:]...),
		"layer II":     {0xFF, 0xFD, 0x90, 0x00},
		"free bitrate": {0xFF, 0xFB, 0x00, 0x00},
		"bad rate":     {0xFF, 0xFB, 0x9C, 0x00},
		"mp4":          []byte("\x00\x00\x00\x20ftypisom"),
	} {
		if isMP3(b) {
			t.Errorf("%s is taken for an MP3", name)
		}
	}
}
