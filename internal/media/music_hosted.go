package media

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"time"

	"conduit/internal/telemetry"
)

// HostedMusic renders through a hosted music-generation API of the usual
// asynchronous shape:
//
//	POST {BaseURL}/v1/music/generate
//	Authorization: Bearer {APIKey}
//	{"model": "...", "prompt": "...", "duration_seconds": 30}
//	→ 202 {"id": "gen_123", "status": "queued"}
//
//	GET {BaseURL}/v1/music/generate/{id}
//	→ {"status": "queued" | "processing" | "succeeded" | "failed",
//	   "audio_url": "https://...", "error": {"code": "...", "message": "..."}}
//
// then the MP3 at audio_url is downloaded (checked to be an MP3, capped at
// maxMusicBytes). Errors, at submit or in a failed generation, carry
// {"error": {"code", "message"}}; a code naming a content policy, a
// moderation or safety check or copyright (see isMusicRefusal) is a
// *RefusedError in the provider's words.
//
// Submitting is what the provider bills, so the adapter is resumable like
// QueueVideo: the generation's id and status URL are saved as soon as the
// provider accepts the order, and RenderResume with that state polls the
// same generation instead of ordering another.
type HostedMusic struct {
	BaseURL string // e.g. https://api.music.example
	// APIKey is sent as "Authorization: Bearer <APIKey>", only to the
	// BaseURL's origin (never to a CDN the audio is downloaded from).
	APIKey string
	// Models maps our model id to the provider's, e.g. "compose-pro" →
	// "music-2".
	Models    map[string]string
	HTTP      *http.Client       // nil → a client with a 30 s timeout
	PollEvery time.Duration      // default 2 s
	Filters   map[string]*Filter // optional local pre-filter, per model
}

// maxMusicBytes caps a downloaded track: the longest sold (a few minutes
// even at 320 kbit/s) is under 10 MB; a provider's bug must not fill the
// worker's disk.
const maxMusicBytes = 64 << 20

var defaultMusicClient = &http.Client{Timeout: 30 * time.Second, Transport: telemetry.Transport(nil)}

var _ Resumable = (*HostedMusic)(nil)

// Render orders the track and waits for it: RenderResume with no saved
// state and nowhere to save it.
func (h *HostedMusic) Render(ctx context.Context, job Job, workdir string, progress func(string)) (Output, error) {
	var state QueueState
	return h.RenderResume(ctx, job, workdir, progress, &state, nil)
}

// RenderResume renders job, polling the generation in *state when it is
// not empty instead of ordering a new one. After a submit *state is
// filled and save (may be nil) is called with it before anything else
// happens. Transient failures (network, 429, 5xx) are retryable and keep
// the state, so the next attempt polls the same generation; a generation
// the provider reports failed for a transient reason (an internal error,
// a timeout, overload) is retryable too, but its state is cleared (and
// saved cleared), because polling it again would only repeat the failure:
// the next attempt orders afresh.
func (h *HostedMusic) RenderResume(ctx context.Context, job Job, workdir string, progress func(string), state *QueueState, save func(QueueState)) (Output, error) {
	if err := validateMusic(h.Filters, job); err != nil {
		return Output{}, err
	}
	if state == nil {
		state = &QueueState{}
	}
	resumed := !state.Empty()
	if !resumed {
		model := h.Models[job.Model]
		if model == "" {
			return Output{}, &FailedError{Step: "validate", Message: fmt.Sprintf("no provider model is configured for %q", job.Model)}
		}
		if err := h.submit(ctx, job, model, state); err != nil {
			return Output{}, err
		}
		if save != nil {
			save(*state)
		}
		report(progress, "queued")
	} else {
		if state.StatusURL == "" {
			state.StatusURL = h.statusURL(state.RequestID)
		}
		report(progress, "resuming "+state.RequestID)
	}
	last := "queued"
	if resumed {
		last = ""
	}
	audioURL, err := h.wait(ctx, *state, last, progress)
	if err != nil {
		var gf *generationFailed
		if errors.As(err, &gf) {
			*state = QueueState{}
			if save != nil {
				save(*state)
			}
			return Output{}, gf.err
		}
		return Output{}, err
	}
	report(progress, "downloading")
	out, err := h.api().download(ctx, audioURL, filepath.Join(workdir, safeName(job.RunID, "music")), mp3File)
	if err != nil {
		return Output{}, err
	}
	report(progress, "downloaded")
	return out, nil
}

// generationFailed marks a transient failure of the generation itself:
// the attempt fails retryably and the state is dropped.
type generationFailed struct{ err error }

func (g *generationFailed) Error() string { return g.err.Error() }
func (g *generationFailed) Unwrap() error { return g.err }

func (h *HostedMusic) base() string { return strings.TrimRight(h.BaseURL, "/") }

func (h *HostedMusic) statusURL(id string) string {
	return h.base() + "/v1/music/generate/" + url.PathEscape(id)
}

// musicError is the provider's error object.
type musicError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

func (h *HostedMusic) submit(ctx context.Context, job Job, model string, state *QueueState) error {
	body, _ := json.Marshal(struct {
		Model    string `json:"model"`
		Prompt   string `json:"prompt"`
		Duration int    `json:"duration_seconds"`
	}{model, job.Prompt, job.Seconds})
	status, resp, err := h.api().call(ctx, http.MethodPost, h.base()+"/v1/music/generate", body)
	if err != nil {
		return netFailure(ctx, "submit", err)
	}
	if status/100 != 2 {
		return musicFailure("submit", status, resp)
	}
	var sr struct {
		ID     string `json:"id"`
		Status string `json:"status"`
	}
	if err := json.Unmarshal(resp, &sr); err != nil || sr.ID == "" {
		// The generation may exist and be billed: do not retry blindly.
		return &FailedError{Step: "submit", Message: "the provider's answer names no generation: " + providerWords(resp)}
	}
	*state = QueueState{RequestID: sr.ID, StatusURL: h.statusURL(sr.ID)}
	state.ResponseURL = state.StatusURL // the status carries the result
	return nil
}

// musicRefusalCodes are error codes that mean the provider declined the
// prompt; any code containing "content_policy", "moderation", "safety"
// or "copyright" counts too (a provider declines prompts naming artists
// or works as a copyright matter), so a renamed code still refuses rather
// than retries.
var musicRefusalCodes = map[string]bool{"content_policy": true, "content_policy_violation": true, "prompt_rejected": true, "flagged": true}

func isMusicRefusal(code string) bool {
	c := strings.ToLower(code)
	return musicRefusalCodes[c] || isRefusal(c) || strings.Contains(c, "safety") || strings.Contains(c, "copyright")
}

// musicRefusal is a declined prompt in the provider's words.
func musicRefusal(msg string) error {
	if msg == "" {
		msg = "the provider's content policy declined this prompt"
	}
	return &RefusedError{Message: clip(msg, 300)}
}

// transientCodes are a failed generation's codes that another try may
// get past.
var transientCodes = []string{"internal", "server_error", "timeout", "timed_out", "overloaded", "capacity", "unavailable", "rate_limit"}

// musicFailure reads an error answer: a 4xx whose error.code is a
// refusal is a *RefusedError; the rest is read as every hosted API's
// error is (httpFailure: 401/403/422 and other 4xx permanent, 429 and
// 5xx retryable).
func musicFailure(step string, status int, body []byte) error {
	var e struct {
		Error musicError `json:"error"`
	}
	if json.Unmarshal(body, &e) == nil && status/100 == 4 && isMusicRefusal(e.Error.Code) {
		return musicRefusal(e.Error.Message)
	}
	return httpFailure(step, status, body)
}

// wait polls the status until the generation has succeeded (its audio
// URL) or failed, telling progress each new status (last is the one
// already told). A few failed polls in a row are tolerated (the generation runs on regardless); more
// end the attempt retryably, keeping the state.
func (h *HostedMusic) wait(ctx context.Context, state QueueState, last string, progress func(string)) (string, error) {
	every := h.PollEvery
	if every <= 0 {
		every = 2 * time.Second
	}
	transient := 0
	for {
		status, body, err := h.api().call(ctx, http.MethodGet, state.StatusURL, nil)
		var failure error
		var sr struct {
			Status   string      `json:"status"`
			AudioURL string      `json:"audio_url"`
			Error    *musicError `json:"error"`
		}
		switch {
		case err != nil:
			failure = netFailure(ctx, "status", err)
		case status/100 != 2:
			failure = musicFailure("status", status, body)
		case json.Unmarshal(body, &sr) != nil:
			failure = &FailedError{Step: "status", Message: "the provider's status is not JSON: " + providerWords(body), Retryable: true}
		}
		if failure != nil {
			var fe *FailedError
			if !errors.As(failure, &fe) || !fe.Retryable {
				return "", failure
			}
			if transient++; transient >= maxTransient {
				return "", failure
			}
		} else {
			transient = 0
			st := strings.ToLower(sr.Status)
			if st != last {
				report(progress, st)
				last = st
			}
			switch st {
			case "succeeded", "success", "completed", "complete":
				if sr.AudioURL == "" {
					return "", &FailedError{Step: "render", Message: "the provider finished the generation without an audio URL"}
				}
				return sr.AudioURL, nil
			case "failed", "error", "cancelled", "canceled":
				return "", generationFailure(sr.Error)
			}
			// queued, processing, or a status we do not know: keep waiting
			// (the activity's deadline bounds it).
		}
		if err := sleep(ctx, every); err != nil {
			return "", err
		}
	}
}

// generationFailure is a failed generation in the provider's words: a
// refusal, a transient failure (retryable, and the next attempt orders
// again), or a permanent one.
func generationFailure(e *musicError) error {
	if e == nil {
		e = &musicError{}
	}
	if isMusicRefusal(e.Code) {
		return musicRefusal(e.Message)
	}
	msg := "the provider could not generate the track"
	if e.Message != "" {
		msg += ": " + clip(e.Message, 300)
	}
	if e.Code != "" {
		msg += " (" + e.Code + ")"
	}
	code := strings.ToLower(e.Code)
	for _, t := range transientCodes {
		if strings.Contains(code, t) {
			return &generationFailed{err: &FailedError{Step: "render", Message: msg, Retryable: true}}
		}
	}
	return &FailedError{Step: "render", Message: msg}
}

// api is the provider's HTTP side; the key travels as a bearer token.
func (h *HostedMusic) api() hostedAPI {
	a := hostedAPI{client: h.HTTP, baseURL: h.BaseURL, header: "Authorization"}
	if a.client == nil {
		a.client = defaultMusicClient
	}
	if h.APIKey != "" {
		a.value = "Bearer " + h.APIKey
	}
	return a
}

// mp3File is what a finished track must be: an MP3 (an ID3 tag, cover art
// included, may come first; 256 KiB covers any sane one).
var mp3File = fileSpec{noun: "audio", ext: "mp3", contentType: "audio/mpeg", max: maxMusicBytes,
	headLen: 256 << 10, check: isMP3, is: "an MP3"}
