package media

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"conduit/internal/telemetry"
)

// HostedSpeech renders through a hosted text-to-speech API of the widely
// used shape
//
//	POST {BaseURL}/v1/text-to-speech/{voice_id}?output_format=mp3_44100_128
//	xi-api-key: {APIKey}
//	{"text": "...", "model_id": "..."}
//
// answered with the MP3 itself (200, audio/mpeg), or with an error as
// {"detail": {"status": "...", "message": "..."}} (a 422 validation error
// may instead carry {"detail": [{"msg": "...", "type": "..."}]}).
//
// One call is one billed render and it either returns the file or fails,
// so unlike QueueVideo there is nothing to resume.
type HostedSpeech struct {
	BaseURL string // e.g. https://api.provider.example
	APIKey  string // sent as the xi-api-key header
	// Voices maps our menu voice id to the provider's voice id.
	Voices map[string]string
	// Models maps our model id to the provider's model id, e.g.
	// "speech-v3" → "eleven_v3".
	Models  map[string]string
	HTTP    *http.Client       // nil → a client with a 2 minute timeout
	Filters map[string]*Filter // optional local pre-filter, per model
}

const (
	// maxSpeechBytes caps the MP3 read from the provider: the longest text
	// sold is a few minutes of speech, a few MB at 128 kbit/s.
	maxSpeechBytes = 32 << 20
	// speechOutputFormat is what we ask for: MP3, 44.1 kHz, 128 kbit/s.
	speechOutputFormat = "mp3_44100_128"
)

// defaultSpeechClient allows for a long text: the provider answers only
// when the whole file is made.
var defaultSpeechClient = &http.Client{Timeout: 2 * time.Minute, Transport: telemetry.Transport(nil)}

// refusalStatuses are the provider's detail.status values (and, in a 422
// list, type values) that mean its content policy declined the text; they
// become a *RefusedError. Any status containing "content_policy" or
// "moderation" counts too, so a renamed status still refuses rather than
// retries.
var refusalStatuses = map[string]bool{"content_policy_violation": true, "content_moderation_failed": true}

func isRefusal(status string) bool {
	s := strings.ToLower(status)
	return refusalStatuses[s] || strings.Contains(s, "content_policy") || strings.Contains(s, "moderation")
}

// Render sends the text and stores the MP3 the provider answers with as
// workdir/<run id made safe>.mp3. "speech-v3" text goes as typed (the
// provider's v3 model performs the square-bracket directions itself);
// for other models the directions are left out first, as the local
// renderer does, so no model reads them aloud.
func (h *HostedSpeech) Render(ctx context.Context, job Job, workdir string, progress func(string)) (Output, error) {
	if _, err := prepareSpeech(h.Filters, job); err != nil {
		return Output{}, err
	}
	voiceID := h.Voices[job.Voice]
	if voiceID == "" {
		return Output{}, &FailedError{Step: "validate", Message: fmt.Sprintf("voice %q is not offered by the hosted provider", job.Voice)}
	}
	modelID := h.Models[job.Model]
	if modelID == "" {
		return Output{}, &FailedError{Step: "validate", Message: fmt.Sprintf("no provider model is configured for %q", job.Model)}
	}
	text := job.Text
	if job.Model != directionModel {
		text = stripDirections(text)
	}
	body, _ := json.Marshal(struct {
		Text    string `json:"text"`
		ModelID string `json:"model_id"`
	}{text, modelID})
	target := strings.TrimRight(h.BaseURL, "/") + "/v1/text-to-speech/" + url.PathEscape(voiceID) + "?output_format=" + speechOutputFormat
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, target, bytes.NewReader(body))
	if err != nil {
		return Output{}, &FailedError{Step: "validate", Message: "the provider URL is not valid: " + err.Error()}
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "audio/mpeg")
	req.Header.Set("xi-api-key", h.APIKey)

	report(progress, "speaking")
	resp, err := h.client().Do(req)
	if err != nil {
		return Output{}, netFailure(ctx, "render", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		return Output{}, speechFailure(resp.StatusCode, b)
	}
	if resp.ContentLength > maxSpeechBytes {
		return Output{}, &FailedError{Step: "download", Message: fmt.Sprintf("the audio is %d bytes, over the %d MB limit", resp.ContentLength, maxSpeechBytes>>20)}
	}
	report(progress, "downloading")
	audio, err := io.ReadAll(io.LimitReader(resp.Body, maxSpeechBytes+1))
	if err != nil {
		return Output{}, netFailure(ctx, "download", err)
	}
	if len(audio) > maxSpeechBytes {
		return Output{}, &FailedError{Step: "download", Message: fmt.Sprintf("the audio is over the %d MB limit", maxSpeechBytes>>20)}
	}
	if !isMP3(audio) {
		ct := resp.Header.Get("Content-Type")
		return Output{}, &FailedError{Step: "download", Message: fmt.Sprintf("the provider's answer (%s, %d bytes) is not an MP3 file", ct, len(audio))}
	}
	stem := filepath.Join(workdir, safeName(job.RunID, "speech"))
	part, final := stem+".part.mp3", stem+".mp3"
	if err := os.WriteFile(part, audio, 0o600); err != nil {
		_ = os.Remove(part)
		return Output{}, &FailedError{Step: "download", Message: err.Error(), Retryable: true}
	}
	if err := os.Rename(part, final); err != nil {
		_ = os.Remove(part)
		return Output{}, &FailedError{Step: "download", Message: err.Error(), Retryable: true}
	}
	report(progress, "downloaded")
	return Output{Path: final, ContentType: "audio/mpeg", Ext: "mp3"}, nil
}

// client is the HTTP client with one change: a redirect to another origin
// does not carry the API key along (Go drops only its own authorization
// headers there, and xi-api-key is not one of them).
func (h *HostedSpeech) client() *http.Client {
	base := h.HTTP
	if base == nil {
		base = defaultSpeechClient
	}
	c := *base
	next := base.CheckRedirect
	c.CheckRedirect = func(req *http.Request, via []*http.Request) error {
		if first := via[0].URL; !strings.EqualFold(req.URL.Scheme, first.Scheme) || !strings.EqualFold(req.URL.Host, first.Host) {
			req.Header.Del("xi-api-key")
		}
		if next != nil {
			return next(req, via)
		}
		if len(via) >= 10 {
			return errors.New("stopped after 10 redirects")
		}
		return nil
	}
	return &c
}

// speechFailure turns the provider's error answer into ours: a 4xx whose
// detail.status (or 422 type) is a content policy status (see
// refusalStatuses) is a refusal in the provider's words; the rest is read
// as every hosted API's error is (httpFailure): 401 and 403 (a refused
// key, or a quota it has used up), 422 (validation) and other 4xx are
// permanent, 429 and 5xx may pass.
func speechFailure(status int, body []byte) error {
	var e struct {
		Detail json.RawMessage `json:"detail"`
	}
	var detail struct {
		Status string `json:"status"`
	}
	_ = json.Unmarshal(body, &e)
	_ = json.Unmarshal(e.Detail, &detail)
	msg, typ := providerDetail(body)
	if status/100 == 4 && (isRefusal(detail.Status) || isRefusal(typ)) {
		if msg == "" {
			msg = "the provider's content policy declined this text"
		}
		return &RefusedError{Message: clip(msg, 300)}
	}
	return httpFailure("render", status, body)
}

// isMP3 reports whether b starts like an MP3 file: an MPEG audio Layer III
// frame header (11 sync bits, a valid version, layer III, a valid bitrate
// and sample rate), possibly after an ID3v2 tag and zero padding.
func isMP3(b []byte) bool {
	if len(b) >= 10 && string(b[:3]) == "ID3" {
		if b[6]|b[7]|b[8]|b[9] >= 0x80 {
			return false // the size is four 7-bit bytes
		}
		size := 10 + (int(b[6])<<21 | int(b[7])<<14 | int(b[8])<<7 | int(b[9]))
		if b[5]&0x10 != 0 {
			size += 10 // a footer
		}
		if size >= len(b) {
			return false
		}
		b = b[size:]
		for i := 0; i < 4096 && len(b) > 0 && b[0] == 0; i++ {
			b = b[1:]
		}
	}
	return mpegFrame(b)
}

func mpegFrame(b []byte) bool {
	if len(b) < 4 || b[0] != 0xFF || b[1]&0xE0 != 0xE0 {
		return false
	}
	version, layer := (b[1]>>3)&3, (b[1]>>1)&3
	bitrate, rate := b[2]>>4, (b[2]>>2)&3
	return version != 1 && layer == 1 && bitrate != 0 && bitrate != 15 && rate != 3
}
