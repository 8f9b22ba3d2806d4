// Package media renders pay-per-call files inside the render activity: one
// Renderer interface for the three kinds sold (video, speech, music), the
// local renderers that make real files (the embedded default, so a fresh
// install sells something real without a provider account), a per-model
// content filter, and adapters for hosted render APIs.
//
// Errors are typed so the activity can turn them into the run's reason:
// *RefusedError is "prompt_refused" (never retried), *FailedError is
// "render_failed" and says whether another attempt could help. Context
// cancellation is returned as the context's error.
package media

import (
	"context"
	"fmt"
	"regexp"
	"strings"

	"conduit/internal/mediakind"
)

// Kind is what a run renders.
type Kind string

// The kinds renderers render (internal/mediakind names them).
const (
	KindVideo  Kind = mediakind.Video
	KindSpeech Kind = mediakind.Speech
	KindMusic  Kind = mediakind.Music
)

// Job is one render request as sold.
type Job struct {
	// RunID identifies the run, e.g. "2026-11-22T10:00:00.000Z#1a2b3c4d".
	// It contains '#' and ':', so renderers never use it raw in file names
	// (see safeName).
	RunID       string
	Kind        Kind
	Model       string
	Prompt      string // video and music: the description; speech: unused
	Text        string // speech: what to say
	Voice       string // speech
	Seconds     int    // video and music: the length sold
	AspectRatio string // video: "16:9" or "9:16" ("" is 16:9)
	// ImagePath is the first frame on local disk (JPEG, PNG or WebP; ""
	// for text-to-video); ImageURL is where a hosted provider can download
	// the same image ("" when there is none).
	ImagePath string
	ImageURL  string
}

// NewJob is the render of r, a request of the media kind named kind (the
// image, when r has one, is the caller's to fetch).
func NewJob(runID, kind string, r mediakind.Request) Job {
	return Job{RunID: runID, Kind: Kind(kind), Model: r.Model, Prompt: r.Prompt, Text: r.Text,
		Voice: r.Voice, Seconds: r.Seconds, AspectRatio: r.AspectRatio}
}

// Output is a rendered file on local disk.
type Output struct {
	Path        string // a file inside the workdir given to Render
	ContentType string // "video/mp4", "audio/mpeg"
	Ext         string // "mp4", "mp3" (no dot)
}

// Renderer renders one job into workdir, a directory the caller owns and
// removes afterwards. progress (may be nil) is called now and then with a
// short state text; the activity turns it into a heartbeat, so it must be
// cheap and must not block.
type Renderer interface {
	Render(ctx context.Context, job Job, workdir string, progress func(string)) (Output, error)
}

// QueueState is a hosted job in flight: enough for a later attempt to
// resume polling it instead of ordering (and paying for) the clip again.
// It is plain data so it can travel in a Temporal heartbeat's details.
type QueueState struct {
	RequestID   string
	StatusURL   string
	ResponseURL string
	CancelURL   string `json:",omitempty"`
}

// Empty reports whether no job has been submitted.
func (s QueueState) Empty() bool { return s.RequestID == "" && s.StatusURL == "" }

// Resumable renderers pick up a job a previous attempt submitted (state
// non-empty) instead of ordering it twice. save is called with the new
// state once the provider has accepted the job, before the renderer waits
// for it; the caller persists it (in a heartbeat's details) and passes it
// back on the next attempt.
type Resumable interface {
	Renderer
	RenderResume(ctx context.Context, job Job, workdir string, progress func(string), state *QueueState, save func(QueueState)) (Output, error)
}

// RefusedError: the provider or the content filter declined the prompt
// (reason "prompt_refused"). Retrying cannot help.
type RefusedError struct{ Message string }

func (e *RefusedError) Error() string { return "prompt refused: " + e.Message }

// FailedError: the render did not finish (reason "render_failed"). Step
// names the failing step ("validate", "submit", "status", "render",
// "encode", "download"); Retryable says whether trying the same job again
// could help (network errors and 5xx: yes; validation and 4xx: no).
type FailedError struct {
	Step, Message string
	Retryable     bool
}

func (e *FailedError) Error() string { return e.Step + ": " + e.Message }

// Filter declines prompts that match any of its patterns. It is the local
// stand-in for a provider's safety filter, so refusals are real, can be
// configured per model, and can be tested.
type Filter struct{ res []*regexp.Regexp }

// NewFilter compiles patterns as case-insensitive regular expressions (Go
// RE2 syntax; an inline "(?i)" is allowed but not needed). Blank patterns
// are ignored.
func NewFilter(patterns []string) (*Filter, error) {
	f := &Filter{}
	for _, p := range patterns {
		if strings.TrimSpace(p) == "" {
			continue
		}
		re, err := regexp.Compile("(?i)" + p)
		if err != nil {
			return nil, fmt.Errorf("content filter pattern %q: %w", p, err)
		}
		f.res = append(f.res, re)
	}
	return f, nil
}

// refusedByFilter is what a declined customer reads: it names no pattern,
// so the filter cannot be probed for its word list.
const refusedByFilter = "the model's content filter declined this prompt"

// Check returns nil or a *RefusedError. A nil Filter accepts everything.
func (f *Filter) Check(text string) error {
	if f == nil {
		return nil
	}
	for _, re := range f.res {
		if re.MatchString(text) {
			return &RefusedError{Message: refusedByFilter}
		}
	}
	return nil
}

// checkFilter applies the model's filter from a per-model map (nil map or
// missing model: accept).
func checkFilter(filters map[string]*Filter, model, text string) error {
	return filters[model].Check(text)
}

// aspect gives the frame for an aspect ratio; w, h are the 16:9 frame.
func aspect(ratio string, w, h int) (int, int, error) {
	switch ratio {
	case "", "16:9":
		return w, h, nil
	case "9:16":
		return h, w, nil
	}
	return 0, 0, &FailedError{Step: "validate", Message: fmt.Sprintf("aspect ratio %q is not offered (16:9 or 9:16)", ratio)}
}

// validateVideo rejects a job no video renderer can make; such a job is a
// bug upstream, so it is not retryable.
func validateVideo(job Job) error {
	if job.Kind != "" && job.Kind != KindVideo {
		return &FailedError{Step: "validate", Message: fmt.Sprintf("a video renderer cannot render a %s job", job.Kind)}
	}
	if job.Seconds <= 0 {
		return &FailedError{Step: "validate", Message: "the clip length must be positive"}
	}
	if _, _, err := aspect(job.AspectRatio, 16, 9); err != nil {
		return err
	}
	return nil
}

// safeName turns a run id into a file name stem: only [A-Za-z0-9._-], no
// leading dot, bounded length.
func safeName(runID, fallback string) string {
	var b strings.Builder
	for _, r := range runID {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '.', r == '_', r == '-':
			b.WriteRune(r)
		default:
			b.WriteByte('-')
		}
		if b.Len() >= 100 {
			break
		}
	}
	s := strings.TrimLeft(b.String(), ".-")
	if s == "" {
		return fallback
	}
	return s
}

// report calls progress when there is one.
func report(progress func(string), s string) {
	if progress != nil {
		progress(s)
	}
}
