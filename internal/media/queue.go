package media

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"conduit/internal/telemetry"
)

// QueueVideo renders through a hosted video API that speaks the "queue"
// protocol common to hosted inference APIs: submit a request, poll its
// status until COMPLETED, read the result, download the file it names.
//
// Submitting is what the provider bills, so the adapter is resumable: the
// request's URLs are handed to a save hook as soon as the provider accepts
// the job, and RenderResume with that state polls the same job instead of
// ordering it again (see Resumable).
type QueueVideo struct {
	BaseURL string // e.g. https://queue.provider.example
	// APIKey is sent as "Authorization: Key <APIKey>", only to the
	// BaseURL's origin (never to a CDN the video is downloaded from).
	APIKey string
	// Models maps our model id to the provider's model path, e.g.
	// "kine-3.0" → "vendor/kine/v3/text-to-video".
	Models    map[string]string
	HTTP      *http.Client       // nil → a client with a 30 s timeout
	PollEvery time.Duration      // default 2 s
	Filters   map[string]*Filter // optional local pre-filter, per model
}

const (
	// maxVideoBytes caps a download: a provider's bug must not fill the
	// worker's disk.
	maxVideoBytes = 500 << 20
	// maxTransient is how many failed polls in a row are shrugged off
	// before the attempt gives up (retryably: the next attempt resumes).
	maxTransient = 3
	// downloadIdle aborts a download that stalls this long; the whole
	// download has no deadline but the activity's own.
	downloadIdle = 60 * time.Second
)

var defaultQueueClient = &http.Client{Timeout: 30 * time.Second, Transport: telemetry.Transport(nil)}

// Render orders the clip and waits for it: RenderResume with no saved
// state and nowhere to save it.
func (q *QueueVideo) Render(ctx context.Context, job Job, workdir string, progress func(string)) (Output, error) {
	var state QueueState
	return q.RenderResume(ctx, job, workdir, progress, &state, nil)
}

// RenderResume renders job, resuming the provider request in *state when
// it is not empty instead of submitting a new one. After a submit *state
// is filled and save (may be nil) is called with it before anything else
// happens, so a caller that persists it (a heartbeat's details) never pays
// twice for one run. Transient failures after the submit are retryable and
// leave the state in place, so the next attempt picks up the same request.
func (q *QueueVideo) RenderResume(ctx context.Context, job Job, workdir string, progress func(string), state *QueueState, save func(QueueState)) (Output, error) {
	if err := checkFilter(q.Filters, job.Model, job.Prompt); err != nil {
		return Output{}, err
	}
	if err := validateVideo(job); err != nil {
		return Output{}, err
	}
	if state == nil {
		state = &QueueState{}
	}
	modelPath := strings.Trim(q.Models[job.Model], "/")
	if state.Empty() {
		if modelPath == "" {
			return Output{}, &FailedError{Step: "validate", Message: fmt.Sprintf("no provider model is configured for %q", job.Model)}
		}
		if err := q.submit(ctx, job, modelPath, state); err != nil {
			return Output{}, err
		}
		if save != nil {
			save(*state)
		}
		report(progress, "IN_QUEUE")
	} else {
		q.fillURLs(state, modelPath)
		report(progress, "resuming "+state.RequestID)
	}
	if state.StatusURL == "" || state.ResponseURL == "" {
		return Output{}, &FailedError{Step: "status", Message: "the provider request has no status or result URL"}
	}
	if err := q.wait(ctx, *state, progress); err != nil {
		return Output{}, err
	}
	video, err := q.result(ctx, *state)
	if err != nil {
		return Output{}, err
	}
	report(progress, "downloading")
	out, err := q.api().download(ctx, video.url, filepath.Join(workdir, safeName(job.RunID, "video")), mp4File(video.size))
	if err != nil {
		return Output{}, err
	}
	report(progress, "downloaded")
	return out, nil
}

// Cancel asks the provider to drop a request that is still queued (best
// effort; a running render may still be billed). The activity does not
// call it on context cancellation, because a cancelled attempt (worker
// shutdown, lost heartbeat) is resumed by the next one.
func (q *QueueVideo) Cancel(ctx context.Context, state QueueState) error {
	if state.CancelURL == "" {
		return errors.New("the request has no cancel URL")
	}
	status, body, err := q.api().call(ctx, http.MethodPut, state.CancelURL, nil)
	if err != nil {
		return err
	}
	if status/100 != 2 {
		return fmt.Errorf("cancel: HTTP %d: %s", status, providerWords(body))
	}
	return nil
}

type submitRequest struct {
	Prompt      string `json:"prompt"`
	Duration    string `json:"duration"`
	AspectRatio string `json:"aspect_ratio"`
	ImageURL    string `json:"image_url,omitempty"`
}

type submitResponse struct {
	RequestID   string `json:"request_id"`
	Status      string `json:"status"`
	StatusURL   string `json:"status_url"`
	ResponseURL string `json:"response_url"`
	CancelURL   string `json:"cancel_url"`
}

func (q *QueueVideo) submit(ctx context.Context, job Job, modelPath string, state *QueueState) error {
	ratio := job.AspectRatio
	if ratio == "" {
		ratio = "16:9"
	}
	body, _ := json.Marshal(submitRequest{Prompt: job.Prompt, Duration: strconv.Itoa(job.Seconds), AspectRatio: ratio, ImageURL: job.ImageURL})
	status, resp, err := q.api().call(ctx, http.MethodPost, strings.TrimRight(q.BaseURL, "/")+"/"+modelPath, body)
	if err != nil {
		return netFailure(ctx, "submit", err)
	}
	if status/100 != 2 {
		return httpFailure("submit", status, resp)
	}
	var sr submitResponse
	if err := json.Unmarshal(resp, &sr); err != nil || (sr.RequestID == "" && sr.StatusURL == "") {
		// The job may exist and be billed: do not retry blindly.
		return &FailedError{Step: "submit", Message: "the provider's answer names no request: " + providerWords(resp)}
	}
	*state = QueueState{RequestID: sr.RequestID, StatusURL: sr.StatusURL, ResponseURL: sr.ResponseURL, CancelURL: sr.CancelURL}
	q.fillURLs(state, modelPath)
	return nil
}

// fillURLs derives missing URLs from the request id the way queue APIs
// lay them out: {base}/{model}/requests/{id}[/status|/cancel].
func (q *QueueVideo) fillURLs(s *QueueState, modelPath string) {
	if s.RequestID == "" || modelPath == "" {
		return
	}
	base := strings.TrimRight(q.BaseURL, "/") + "/" + modelPath + "/requests/" + url.PathEscape(s.RequestID)
	if s.ResponseURL == "" {
		s.ResponseURL = base
	}
	if s.StatusURL == "" {
		s.StatusURL = base + "/status"
	}
	if s.CancelURL == "" {
		s.CancelURL = base + "/cancel"
	}
}

type statusResponse struct {
	Status        string `json:"status"`
	QueuePosition *int   `json:"queue_position"`
}

// wait polls the status URL until the provider reports the job done,
// telling progress the status each time. A few failed polls in a row are
// tolerated (the job runs on regardless); more end the attempt retryably.
func (q *QueueVideo) wait(ctx context.Context, state QueueState, progress func(string)) error {
	every := q.PollEvery
	if every <= 0 {
		every = 2 * time.Second
	}
	transient := 0
	for {
		status, body, err := q.api().call(ctx, http.MethodGet, state.StatusURL, nil)
		var failure error
		switch {
		case err != nil:
			failure = netFailure(ctx, "status", err)
		case status/100 != 2:
			failure = httpFailure("status", status, body)
		}
		if failure != nil {
			var fe *FailedError
			if !errors.As(failure, &fe) || !fe.Retryable {
				return failure
			}
			if transient++; transient >= maxTransient {
				return failure
			}
		} else {
			transient = 0
			var sr statusResponse
			if err := json.Unmarshal(body, &sr); err != nil {
				return &FailedError{Step: "status", Message: "the provider's status is not JSON: " + providerWords(body), Retryable: true}
			}
			st := strings.ToUpper(sr.Status)
			text := st
			if sr.QueuePosition != nil && st == "IN_QUEUE" {
				text += fmt.Sprintf(" (position %d)", *sr.QueuePosition)
			}
			report(progress, text)
			switch st {
			case "COMPLETED", "FAILED", "ERROR", "CANCELLED", "CANCELED":
				// The result says how it ended, in the provider's words.
				return nil
			}
		}
		t := time.NewTimer(every)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
	}
}

type resultResponse struct {
	Video *struct {
		URL         string `json:"url"`
		ContentType string `json:"content_type"`
		FileSize    int64  `json:"file_size"`
	} `json:"video"`
	Detail json.RawMessage `json:"detail"`
	Error  json.RawMessage `json:"error"`
}

type resultVideo struct {
	url  string
	size int64
}

// result reads the finished request: the video's URL, or the provider's
// reason it failed.
func (q *QueueVideo) result(ctx context.Context, state QueueState) (resultVideo, error) {
	var status int
	var body []byte
	var err error
	for transient := 0; ; {
		status, body, err = q.api().call(ctx, http.MethodGet, state.ResponseURL, nil)
		if err == nil {
			break
		}
		if ctx.Err() != nil || transient+1 >= maxTransient {
			return resultVideo{}, netFailure(ctx, "render", err)
		}
		transient++
		if err := sleep(ctx, q.PollEvery); err != nil {
			return resultVideo{}, err
		}
	}
	if status/100 != 2 {
		return resultVideo{}, httpFailure("render", status, body)
	}
	var rr resultResponse
	if err := json.Unmarshal(body, &rr); err != nil {
		return resultVideo{}, &FailedError{Step: "render", Message: "the provider's result is not JSON: " + providerWords(body), Retryable: true}
	}
	if hasValue(rr.Detail) || hasValue(rr.Error) {
		// A 200 carrying an error: the job itself failed.
		return resultVideo{}, httpFailure("render", http.StatusUnprocessableEntity, body)
	}
	if rr.Video == nil || rr.Video.URL == "" {
		return resultVideo{}, &FailedError{Step: "render", Message: "the provider completed the request without a video"}
	}
	return resultVideo{url: rr.Video.URL, size: rr.Video.FileSize}, nil
}

// api is the provider's HTTP side; the key travels as "Authorization: Key …".
func (q *QueueVideo) api() hostedAPI {
	a := hostedAPI{client: q.HTTP, baseURL: q.BaseURL, header: "Authorization"}
	if a.client == nil {
		a.client = defaultQueueClient
	}
	if q.APIKey != "" {
		a.value = "Key " + q.APIKey
	}
	return a
}

// mp4File is what a finished video must be: an MP4 (an ftyp box first) of
// the size the provider announced.
func mp4File(size int64) fileSpec {
	return fileSpec{noun: "video", ext: "mp4", contentType: "video/mp4", max: maxVideoBytes, size: size,
		headLen: 12, check: func(h []byte) bool { return len(h) >= 8 && string(h[4:8]) == "ftyp" }, is: "an MP4 video"}
}

// netFailure is a transport error: retryable, unless the context ended
// (then the context's error, so cancellation reads as cancellation).
func netFailure(ctx context.Context, step string, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return &FailedError{Step: step, Message: "the provider could not be reached: " + err.Error(), Retryable: true}
}

// httpFailure turns a provider's error answer into ours: a content policy
// violation is a refusal in the provider's words; a refused key, a
// validation error or another 4xx is permanent; 429 and 5xx may pass.
func httpFailure(step string, status int, body []byte) error {
	msg, typ := providerDetail(body)
	if typ == "content_policy_violation" {
		if msg == "" {
			msg = "the provider's content policy declined this prompt"
		}
		return &RefusedError{Message: msg}
	}
	if msg == "" {
		msg = providerWords(body)
	}
	switch {
	case status == http.StatusUnauthorized || status == http.StatusForbidden:
		return &FailedError{Step: step, Message: fmt.Sprintf("the provider refused the API key (HTTP %d): %s", status, msg)}
	case status == http.StatusTooManyRequests || status >= 500:
		return &FailedError{Step: step, Message: fmt.Sprintf("the provider answered HTTP %d: %s", status, msg), Retryable: true}
	}
	return &FailedError{Step: step, Message: fmt.Sprintf("the provider answered HTTP %d: %s", status, msg)}
}

// providerDetail reads the usual error shapes: {"detail":[{"msg","type"}]},
// {"detail":"..."}, {"error":"..."} or {"error":{"message","type"}}. The
// first entry of type content_policy_violation wins, else the messages
// are joined.
func providerDetail(body []byte) (msg, typ string) {
	var e struct {
		Detail  json.RawMessage `json:"detail"`
		Error   json.RawMessage `json:"error"`
		Message string          `json:"message"`
	}
	if json.Unmarshal(body, &e) != nil {
		return "", ""
	}
	type item struct {
		Msg     string `json:"msg"`
		Message string `json:"message"`
		Type    string `json:"type"`
	}
	var items []item
	for _, raw := range []json.RawMessage{e.Detail, e.Error} {
		if !hasValue(raw) {
			continue
		}
		var s string
		var one item
		var many []item
		switch {
		case json.Unmarshal(raw, &s) == nil:
			items = append(items, item{Msg: s})
		case json.Unmarshal(raw, &many) == nil:
			items = append(items, many...)
		case json.Unmarshal(raw, &one) == nil:
			items = append(items, one)
		}
	}
	if len(items) == 0 && e.Message != "" {
		items = append(items, item{Msg: e.Message})
	}
	var msgs []string
	for _, it := range items {
		m := it.Msg
		if m == "" {
			m = it.Message
		}
		if it.Type == "content_policy_violation" {
			return m, it.Type
		}
		if m != "" {
			msgs = append(msgs, m)
		}
		if typ == "" {
			typ = it.Type
		}
	}
	return strings.Join(msgs, "; "), typ
}

// providerWords is a body as a short one-line message.
func providerWords(body []byte) string {
	if msg, _ := providerDetail(body); msg != "" {
		return clip(msg, 300)
	}
	s := strings.Join(strings.Fields(string(body)), " ")
	if s == "" {
		return "(empty answer)"
	}
	return clip(s, 300)
}

func clip(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n]) + "…"
}

func hasValue(raw json.RawMessage) bool {
	s := strings.TrimSpace(string(raw))
	return s != "" && s != "null" && s != `""` && s != "[]" && s != "{}"
}

func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		d = 2 * time.Second
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
