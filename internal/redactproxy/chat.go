package redactproxy

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"

	"conduit/internal/errs"
	"conduit/internal/logging"
	"conduit/internal/redact"
	"conduit/internal/redactlog"
)

// ChatArgs is one call of POST /api/redact/chat/completions.
type ChatArgs struct {
	AccountID, KeyID string
	// Proxy is x-svc-proxy (the proxy's id or name); ModelKey is
	// x-model-key, the upstream key for this call only: it goes to the
	// upstream and nowhere else (never stored, logged or traced).
	Proxy, ModelKey string
	Body            []byte
}

// Writer is how the chat answer reaches the caller: a whole JSON answer,
// or a stream of chat.completion.chunk events each flushed at once.
type Writer interface {
	Header(name, value string)
	JSON(status int, v any)
	// StartStream sends the status and headers of an event stream;
	// trailers names the trailers announced.
	StartStream(trailers ...string)
	Event(v any) error
	Done()
	// Trailer sets a trailer announced by StartStream.
	Trailer(name, value string)
	// InBandError reports a failure once the stream has begun.
	InBandError(e *errs.Error)
}

// Redaction is what the answer says about the call's redaction (the
// "redaction" field of the answer, and of the last chunk of a stream).
type Redaction struct {
	Proxy    string         `json:"proxy"`
	Entities map[string]int `json:"entities"`
	// Dropped lists the placeholders the answer never mentioned: those
	// values were not restored anywhere.
	Dropped []string `json:"dropped"`
}

// Headers of the answer.
const (
	HeaderProxy    = "x-svc-proxy"
	HeaderModelKey = "x-model-key"
	// HeaderEntities counts the redacted values by type ("EMAIL=2,NAME=1");
	// HeaderDropped lists dropped placeholders (a trailer on streams).
	HeaderEntities = "x-svc-redaction-entities"
	HeaderDropped  = "x-svc-redaction-dropped"
	HeaderProxyID  = "x-svc-proxy-id"
)

type chatRequest struct {
	raw      map[string]json.RawMessage
	messages []map[string]any
	model    string
	stream   bool
}

func parseChat(body []byte) (*chatRequest, error) {
	r := &chatRequest{}
	if err := json.Unmarshal(body, &r.raw); err != nil || r.raw == nil {
		return nil, errs.Invalidf("the request body must be a JSON object (a chat completions request)")
	}
	msgs, ok := r.raw["messages"]
	if !ok {
		return nil, errs.Invalidf("messages is required")
	}
	dec := json.NewDecoder(bytes.NewReader(msgs))
	dec.UseNumber()
	if err := dec.Decode(&r.messages); err != nil || len(r.messages) == 0 {
		return nil, errs.Invalidf("messages must be a non-empty array of message objects")
	}
	for i, m := range r.messages {
		if _, ok := m["role"].(string); !ok || m == nil {
			return nil, errs.Invalidf("messages[%d].role must be a string", i)
		}
	}
	if m, ok := r.raw["model"]; ok {
		if err := json.Unmarshal(m, &r.model); err != nil {
			return nil, errs.Invalidf("model must be a string")
		}
	}
	if st, ok := r.raw["stream"]; ok && string(st) != "null" {
		if err := json.Unmarshal(st, &r.stream); err != nil {
			return nil, errs.Invalidf("stream must be a boolean")
		}
	}
	return r, nil
}

// texts is every text of the request, for reserving literal placeholders.
func (r *chatRequest) texts() []string {
	var out []string
	for _, m := range r.messages {
		walkStrings(m, func(s string) string { out = append(out, s); return s })
	}
	return out
}

// redactMessages redacts every content text and every tool call's
// arguments in place.
func (r *chatRequest) redactMessages(s *Session) error {
	for _, m := range r.messages {
		switch c := m["content"].(type) {
		case string:
			out, err := s.Redact(c)
			if err != nil {
				return err
			}
			m["content"] = out
		case []any:
			for _, part := range c {
				p, ok := part.(map[string]any)
				if !ok {
					continue
				}
				if t, ok := p["text"].(string); ok {
					out, err := s.Redact(t)
					if err != nil {
						return err
					}
					p["text"] = out
				}
			}
		}
		if calls, ok := m["tool_calls"].([]any); ok {
			for _, call := range calls {
				fn, _ := asMap(call)["function"].(map[string]any)
				if args, ok := fn["arguments"].(string); ok {
					out, err := s.RedactJSON(args)
					if err != nil {
						return err
					}
					fn["arguments"] = out
				}
			}
		}
		if fc, ok := m["function_call"].(map[string]any); ok {
			if args, ok := fc["arguments"].(string); ok {
				out, err := s.RedactJSON(args)
				if err != nil {
					return err
				}
				fc["arguments"] = out
			}
		}
	}
	return nil
}

func asMap(v any) map[string]any {
	m, _ := v.(map[string]any)
	return m
}

// Chat redacts the request, calls the proxy's upstream, restores the
// answer and writes it. An error returned means nothing was written (the
// handler answers it in the chat error shape); once a stream has begun,
// failures are reported in band.
func (s *Service) Chat(ctx context.Context, a ChatArgs, w Writer) error {
	started := time.Now()
	p, err := s.find(ctx, a.AccountID, a.Proxy)
	if err != nil {
		return err
	}
	req, err := parseChat(a.Body)
	if err != nil {
		return err
	}
	key, err := s.upstreamKey(p, a.ModelKey)
	if err != nil {
		return err
	}
	sess := NewSession(p.Policy, s.hashKeyFor(a.AccountID), req.texts()...)
	rec := redactlog.Record{AccountID: a.AccountID, KeyID: a.KeyID, ProxyID: p.ID, Source: redactlog.SourceProxy}
	audit := func(status int) {
		if !p.Audit || s.Log == nil {
			return
		}
		rec.Counts = countsOf(sess.Counts())
		rec.UpstreamStatus = status
		rec.Latency = time.Since(started)
		if _, err := s.Log.Append(context.WithoutCancel(ctx), rec); err != nil {
			logging.From(ctx).Error("the redaction audit entry could not be written", "proxy", p.ID, "err", err)
		}
	}
	if err := req.redactMessages(sess); err != nil {
		audit(0)
		return err
	}
	up, err := s.buildUpstream(p, req, key)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, s.Timeout)
	defer cancel()
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, up.url, bytes.NewReader(up.body))
	if err != nil {
		return errs.Invalidf("the proxy's upstream URL cannot be requested")
	}
	for k, v := range up.headers {
		hreq.Header.Set(k, v)
	}
	resp, err := s.httpClient().Do(hreq)
	if err != nil {
		audit(0)
		return upstreamFailure(ctx, err, s.Timeout)
	}
	defer resp.Body.Close()
	if resp.StatusCode >= 300 {
		audit(resp.StatusCode)
		return upstreamStatus(resp, key)
	}
	w.Header(HeaderProxyID, p.ID)
	w.Header(HeaderEntities, countsHeader(sess.Counts()))
	tr := &translator{sess: sess, output: p.Output, style: p.Style, model: req.model}
	if !req.stream {
		body, err := io.ReadAll(io.LimitReader(resp.Body, 32<<20))
		if err != nil {
			audit(resp.StatusCode)
			return upstreamFailure(ctx, err, s.Timeout)
		}
		answer, err := tr.whole(body)
		audit(resp.StatusCode)
		if err != nil {
			return err
		}
		red := Redaction{Proxy: p.ID, Entities: countsOf(sess.Counts()), Dropped: orNone(sess.Dropped())}
		answer["redaction"] = red
		w.Header(HeaderDropped, strings.Join(red.Dropped, ","))
		w.JSON(http.StatusOK, answer)
		return nil
	}
	w.StartStream(HeaderDropped)
	err = tr.stream(resp.Body, w.Event)
	if err == nil {
		red := Redaction{Proxy: p.ID, Entities: countsOf(sess.Counts()), Dropped: orNone(sess.Dropped())}
		err = w.Event(map[string]any{"id": tr.id, "object": "chat.completion.chunk", "created": tr.created, "model": tr.modelName(), "choices": []any{}, "redaction": red})
		w.Trailer(HeaderDropped, strings.Join(red.Dropped, ","))
		if err == nil {
			w.Done()
		}
	} else if ctx.Err() == nil || errors.Is(ctx.Err(), context.DeadlineExceeded) {
		var e *errs.Error
		if !errors.As(err, &e) {
			e = upstreamFailure(ctx, err, s.Timeout)
		}
		w.InBandError(e)
	}
	audit(resp.StatusCode)
	return nil
}

func orNone(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func (s *Service) hashKeyFor(accountID string) []byte {
	return append(append([]byte{}, s.HashKey...), []byte("/"+accountID)...)
}

func countsOf(m map[redact.Type]int) map[string]int {
	out := make(map[string]int, len(m))
	for k, v := range m {
		out[string(k)] = v
	}
	return out
}

func countsHeader(m map[redact.Type]int) string {
	parts := make([]string, 0, len(m))
	for k, v := range m {
		parts = append(parts, string(k)+"="+strconv.Itoa(v))
	}
	sort.Strings(parts)
	return strings.Join(parts, ",")
}

func upstreamFailure(ctx context.Context, err error, timeout time.Duration) *errs.Error {
	var e *errs.Error
	if errors.As(err, &e) {
		return e
	}
	if errors.Is(ctx.Err(), context.DeadlineExceeded) || errors.Is(err, context.DeadlineExceeded) {
		return &errs.Error{Kind: errs.Upstream, Code: "upstream_timeout", Msg: fmt.Sprintf("the upstream did not answer within %s", timeout)}
	}
	if ctx.Err() != nil {
		return &errs.Error{Kind: errs.Upstream, Code: "cancelled", Msg: "the call was cancelled"}
	}
	msg := "the upstream could not be reached"
	var ie interface{ Error() string }
	if errors.As(err, &ie) && strings.Contains(err.Error(), "IMAGE_URL_BLOCKED") {
		msg = "the upstream's address is private, loopback or internal"
	}
	return &errs.Error{Kind: errs.Upstream, Code: "upstream_unreachable", Msg: msg}
}

// upstreamStatus maps an upstream's refusal to the chat error shape; its
// message is kept (with the key scrubbed should the upstream echo it).
func upstreamStatus(resp *http.Response, key string) *errs.Error {
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	var body struct {
		Error   json.RawMessage `json:"error"`
		Message string          `json:"message"`
	}
	msg := ""
	if json.Unmarshal(b, &body) == nil {
		var inner struct {
			Message string `json:"message"`
		}
		if json.Unmarshal(body.Error, &inner) == nil && inner.Message != "" {
			msg = inner.Message
		} else if s := ""; json.Unmarshal(body.Error, &s) == nil && s != "" {
			msg = s
		} else {
			msg = body.Message
		}
	}
	if msg == "" {
		msg = http.StatusText(resp.StatusCode)
	}
	if key != "" {
		msg = strings.ReplaceAll(msg, key, "[upstream key]")
	}
	if len(msg) > 500 {
		msg = msg[:500]
	}
	e := &errs.Error{Msg: fmt.Sprintf("the upstream answered %d: %s", resp.StatusCode, msg), Code: "upstream_" + strconv.Itoa(resp.StatusCode)}
	switch {
	case resp.StatusCode == http.StatusTooManyRequests:
		e.Kind = errs.TooManyRequests
	case resp.StatusCode == 400 || resp.StatusCode == 404 || resp.StatusCode == 413 || resp.StatusCode == 422:
		e.Kind = errs.Invalid
	default:
		e.Kind = errs.Upstream
	}
	return e.With("upstreamStatus", resp.StatusCode)
}
