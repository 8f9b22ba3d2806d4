package apptest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"conduit/internal/media"
)

// StudioKey is the API key the Studio accepts.
const StudioKey = "studio-test-key:0123456789"

// Studio plays a hosted video API's queue protocol — the far edge the
// queue renderer talks to: POST {model} submits a job, GET
// {model}/requests/{id}/status reports IN_QUEUE, IN_PROGRESS and
// COMPLETED, GET {model}/requests/{id} gives the result naming the file,
// and /files/{id}.mp4 serves a real clip of the requested length and
// aspect ratio. Every job is held IN_PROGRESS until the test releases it,
// so tests decide when a render finishes.
type Studio struct {
	URL string
	srv *httptest.Server

	mu       sync.Mutex
	jobs     map[string]*studioJob
	order    []string
	released map[string]bool // prompts released before or after submit
}

type studioJob struct {
	id, model, prompt, ratio string
	seconds                  int
	polls                    int
	// The job's file, rendered once (see clip).
	render sync.Once
	clip   []byte
	err    error
}

func newStudio() *Studio {
	s := &Studio{jobs: map[string]*studioJob{}, released: map[string]bool{}}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	s.URL = s.srv.URL
	return s
}

func (s *Studio) close() { s.srv.Close() }

// Release lets every job with this prompt (submitted or still to come)
// complete.
func (s *Studio) Release(prompt string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.released[prompt] = true
}

// Submits counts the jobs submitted with this prompt (each one is billed
// by the provider).
func (s *Studio) Submits(prompt string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, j := range s.jobs {
		if j.prompt == prompt {
			n++
		}
	}
	return n
}

// Polls counts status polls of the jobs with this prompt.
func (s *Studio) Polls(prompt string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, j := range s.jobs {
		if j.prompt == prompt {
			n += j.polls
		}
	}
	return n
}

// WaitSubmitted waits until a job with this prompt was submitted.
func (s *Studio) WaitSubmitted(t testing.TB, prompt string) {
	t.Helper()
	Eventually(t, time.Minute, fmt.Sprintf("a job with prompt %q to reach the studio", prompt), func() error {
		if s.Submits(prompt) == 0 {
			return errors.New("none submitted")
		}
		return nil
	})
}

func (s *Studio) reply(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func (s *Studio) serve(w http.ResponseWriter, r *http.Request) {
	path := strings.TrimPrefix(r.URL.Path, "/")
	if id, ok := strings.CutPrefix(path, "files/"); ok {
		s.file(w, strings.TrimSuffix(id, ".mp4"))
		return
	}
	if r.Header.Get("Authorization") != "Key "+StudioKey {
		s.reply(w, http.StatusUnauthorized, map[string]any{"detail": "Invalid API key"})
		return
	}
	model, rest, isRequest := strings.Cut(path, "/requests/")
	if !isRequest {
		if r.Method != http.MethodPost {
			s.reply(w, http.StatusMethodNotAllowed, map[string]any{"detail": "Method Not Allowed"})
			return
		}
		s.submit(w, r, model)
		return
	}
	id, isStatus := strings.CutSuffix(rest, "/status")
	s.mu.Lock()
	j, ok := s.jobs[id]
	done := ok && s.released[j.prompt]
	if ok && isStatus {
		j.polls++
	}
	s.mu.Unlock()
	switch {
	case !ok || j.model != model:
		s.reply(w, http.StatusNotFound, map[string]any{"detail": "Request not found"})
	case isStatus && !done:
		s.reply(w, http.StatusAccepted, map[string]any{"status": "IN_PROGRESS", "logs": []any{}})
	case isStatus:
		s.reply(w, http.StatusOK, map[string]any{"status": "COMPLETED", "logs": []any{}})
	case !done:
		s.reply(w, http.StatusBadRequest, map[string]any{"detail": "Request is still in progress"})
	default:
		clip, err := s.clip(j)
		if err != nil {
			s.reply(w, http.StatusInternalServerError, map[string]any{"detail": err.Error()})
			return
		}
		s.reply(w, http.StatusOK, map[string]any{"video": map[string]any{
			"url": s.URL + "/files/" + id + ".mp4", "content_type": "video/mp4", "file_size": len(clip)}})
	}
}

func (s *Studio) submit(w http.ResponseWriter, r *http.Request, model string) {
	var in struct {
		Prompt      string `json:"prompt"`
		Duration    string `json:"duration"`
		AspectRatio string `json:"aspect_ratio"`
	}
	if err := json.NewDecoder(r.Body).Decode(&in); err != nil || in.Prompt == "" {
		s.reply(w, http.StatusUnprocessableEntity, map[string]any{"detail": []any{map[string]any{"msg": "prompt is required", "type": "value_error"}}})
		return
	}
	secs, err := strconv.Atoi(in.Duration)
	if err != nil || secs <= 0 {
		s.reply(w, http.StatusUnprocessableEntity, map[string]any{"detail": []any{map[string]any{"msg": "duration is invalid", "type": "value_error"}}})
		return
	}
	s.mu.Lock()
	id := fmt.Sprintf("req-%04d", len(s.order)+1)
	j := &studioJob{id: id, model: model, prompt: in.Prompt, ratio: in.AspectRatio, seconds: secs}
	s.jobs[id] = j
	s.order = append(s.order, id)
	s.mu.Unlock()
	// The file is rendered while the job is held, so a release is answered
	// at once: a test's render budget (a late render's collection window)
	// then covers the test's own steps, not ffmpeg on a loaded machine.
	go func() { _, _ = s.clip(j) }()
	base := s.URL + "/" + model + "/requests/" + id
	s.reply(w, http.StatusOK, map[string]any{"request_id": id, "status": "IN_QUEUE",
		"status_url": base + "/status", "response_url": base, "cancel_url": base + "/cancel"})
}

// clip renders the job's file once, with the real local renderer; a
// caller while it renders waits for it.
func (s *Studio) clip(j *studioJob) ([]byte, error) {
	j.render.Do(func() { j.clip, j.err = renderClip(j) })
	return j.clip, j.err
}

func renderClip(j *studioJob) ([]byte, error) {
	dir, err := os.MkdirTemp("", "studio-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	out, err := (&media.LocalVideo{}).Render(context.Background(), media.Job{
		RunID: j.id, Kind: media.KindVideo, Model: j.model, Prompt: j.prompt, Seconds: j.seconds, AspectRatio: j.ratio,
	}, dir, nil)
	if err != nil {
		return nil, err
	}
	return os.ReadFile(out.Path)
}

// file serves a released job's clip (its URL is in the job's result).
func (s *Studio) file(w http.ResponseWriter, id string) {
	s.mu.Lock()
	j, ok := s.jobs[id]
	released := ok && s.released[j.prompt]
	s.mu.Unlock()
	var clip []byte
	if released {
		clip, _ = s.clip(j)
	}
	if clip == nil {
		http.NotFound(w, nil)
		return
	}
	w.Header().Set("Content-Type", "video/mp4")
	w.Header().Set("Content-Length", strconv.Itoa(len(clip)))
	_, _ = w.Write(clip)
}
