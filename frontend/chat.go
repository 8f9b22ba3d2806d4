package frontend

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"conduit/internal/errs"
	"conduit/internal/graph"
	"conduit/internal/logging"
	"conduit/internal/runs"
	"conduit/workflows"
)

// Response headers naming the recorded run and the version that served it.
const (
	HeaderRunID           = "x-svc-run-id"
	HeaderPipelineVersion = "x-svc-pipeline-version"
)

// keepAliveEvery is how long a stream may stay silent before an SSE comment
// keeps proxies from closing it.
const keepAliveEvery = 10 * time.Second

type chatMessage struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

type chatRequest struct {
	Messages json.RawMessage `json:"messages"`
	Stream   bool            `json:"stream"`
	Model    json.RawMessage `json:"model"`
}

// parseChat validates the request body (spec §4.3); unknown fields are
// ignored as OpenAI-compatible servers do.
func parseChat(c *gin.Context) (chatRequest, string, error) {
	var req chatRequest
	b, err := readBody(c)
	if err != nil {
		return req, "", err
	}
	if err := json.NewDecoder(bytes.NewReader(b)).Decode(&req); err != nil {
		return req, "", badJSON(err)
	}
	if len(req.Model) > 0 && string(req.Model) != "null" {
		var s string
		if json.Unmarshal(req.Model, &s) != nil {
			return req, "", errs.Invalidf("model must be a string")
		}
	}
	var msgs []chatMessage
	if len(req.Messages) == 0 || string(req.Messages) == "null" {
		return req, "", errs.Invalidf("messages is required: an array of {role, content}")
	}
	if err := json.Unmarshal(req.Messages, &msgs); err != nil {
		return req, "", errs.Invalidf("messages must be an array of objects with string role and content")
	}
	if len(msgs) == 0 {
		return req, "", errs.Invalidf("messages must not be empty")
	}
	last := ""
	found := false
	for i, m := range msgs {
		switch m.Role {
		case "system", "developer", "user", "assistant", "tool":
		case "":
			return req, "", errs.Invalidf("messages[%d].role is required", i)
		default:
			return req, "", errs.Invalidf("messages[%d].role %q is not one of system, developer, user, assistant, tool", i, m.Role)
		}
		var content string
		if err := json.Unmarshal(m.Content, &content); err != nil {
			return req, "", errs.Invalidf("messages[%d].content must be a string", i)
		}
		if m.Role == "user" {
			last, found = content, true
		}
	}
	if !found {
		return req, "", errs.Invalidf("messages contain no user message")
	}
	return req, last, nil
}

// chatMethodNotAllowed: another method on the chat route is a 405 in
// OpenAI's shape, as OpenAI-compatible clients expect there.
func chatMethodNotAllowed(c *gin.Context) {
	c.Header("Allow", http.MethodPost)
	fail(c, errs.New(errs.MethodNotAllowed, "method %s is not allowed on %s; chat completions are created with POST", c.Request.Method, c.Request.URL.Path))
}

// chatCompletions: POST /api/pipelines/{id}/chat/completions.
func (s *Server) chatCompletions(c *gin.Context) {
	p := currentPipeline(c)
	req, userText, err := parseChat(c)
	if err != nil {
		fail(c, err)
		return
	}
	serving, err := s.runs.Serving(c.Request.Context(), p)
	if err != nil {
		fail(c, err)
		return
	}
	target, err := serving.Graph.ChatShape()
	if err != nil {
		fail(c, err)
		return
	}
	rr := runs.Request{Kind: "chat", Inputs: map[string]string{target.Entry.Key: userText}}
	if req.Stream {
		rr.StreamNode = target.StreamNode
		rr.StartedAt = time.Now()
		rr.RunID = runs.NewRunID(rr.StartedAt)
		s.streamChat(c, serving, rr, target, req)
		return
	}
	run, _, err := s.runs.Start(c.Request.Context(), principal(c).AccountID, serving, rr)
	if err != nil {
		fail(c, err)
		return
	}
	cc := chatCompletion(c, run, req)
	st, err := s.runs.Await(c.Request.Context(), run.WorkflowID)
	if err != nil {
		fail(c, err)
		return
	}
	if st.Status != workflows.StatusSuccess {
		fail(c, errs.New(errs.Upstream, "the pipeline ran but a node failed: %s", st.Error))
		return
	}
	c.JSON(http.StatusOK, gin.H{
		"id": cc.id, "object": "chat.completion", "created": cc.created, "model": cc.model,
		"choices": []gin.H{{"index": 0, "message": gin.H{"role": "assistant", "content": st.Outputs[target.Output.Key]}, "finish_reason": "stop"}},
		"usage":   usageJSON(st),
	})
}

type completion struct {
	id      string
	created int64
	model   string
}

// chatCompletion names the run in the response headers and says what the
// completion's chunks are called.
func chatCompletion(c *gin.Context, run runs.Run, req chatRequest) completion {
	c.Header(HeaderRunID, run.RunID)
	c.Header(HeaderPipelineVersion, strconv.Itoa(run.Version))
	model := "pipeline/" + run.PipelineID + "@" + strconv.Itoa(run.Version)
	if len(req.Model) > 0 {
		var m string
		if json.Unmarshal(req.Model, &m) == nil && m != "" {
			model = m
		}
	}
	return completion{id: "chatcmpl-" + strings.NewReplacer("-", "", ":", "", ".", "", "#", "").Replace(run.RunID), created: run.StartedAt.Unix(), model: model}
}

func usageJSON(st workflows.RunState) gin.H {
	return gin.H{"prompt_tokens": st.PromptTokens, "completion_tokens": st.CompletionTokens, "total_tokens": st.PromptTokens + st.CompletionTokens}
}

// streamChat answers with Server-Sent Events: a first chunk with the role,
// content deltas as the model produces them (read from the run's delta
// rows, woken by NOTIFY, so the worker may be another process), then a last
// chunk with finish_reason stop and usage, then [DONE].
//
// The run's id is chosen here, so its tokens are read while its admission
// is still being answered: a run whose model call runs inline, in the
// workflow task that admits it, answers its admission only when that task
// ends, with the whole answer made. Tokens exist only for an admitted run.
//
// Nothing is written until there is something to send — the first token,
// or the answer when the run ends — so a run refused or failing before its
// first token is a plain error in OpenAI's shape, like a non-streamed call.
// A failure after the stream began is sent the way OpenAI's own API does
// it: a last event whose data is {"error": {...}} (official clients raise
// it as an error), without [DONE], which means success.
func (s *Server) streamChat(c *gin.Context, serving *runs.Target, rr runs.Request, target graph.Chat, req chatRequest) {
	ctx := c.Request.Context()
	log := logging.From(ctx).With("run_id", rr.RunID)
	wake, unsubscribe := s.runs.Subscribe(rr.RunID)
	defer func() { unsubscribe() }()
	run := runs.Run{RunID: rr.RunID, PipelineID: serving.Pipeline.ID, Version: serving.Version.Version, StartedAt: rr.StartedAt,
		WorkflowID: workflows.PipelineRunWorkflowID(rr.RunID)}
	defer func() { _ = s.runs.ForgetDeltas(context.WithoutCancel(ctx), run.RunID) }()

	type started struct {
		run runs.Run
		err error
	}
	admitted := make(chan started, 1)
	go func() {
		r, _, err := s.runs.Start(ctx, principal(c).AccountID, serving, rr)
		admitted <- started{r, err}
	}()
	type outcome struct {
		st  workflows.RunState
		err error
	}
	var done chan outcome // set once the run is admitted
	await := func() {
		done = make(chan outcome, 1)
		go func() {
			st, err := s.runs.Await(ctx, run.WorkflowID)
			done <- outcome{st, err}
		}()
	}

	w := &sseWriter{c: c}
	var cc completion
	begin := func() {
		if w.begun {
			return
		}
		cc = chatCompletion(c, run, req)
		h := c.Writer.Header()
		h.Set("Content-Type", "text/event-stream")
		h.Set("Cache-Control", "no-cache")
		h.Set("Connection", "keep-alive")
		h.Set("X-Accel-Buffering", "no")
		c.Status(http.StatusOK)
		w.begun = true
		w.chunk(cc, gin.H{"role": "assistant", "content": ""}, nil, nil)
	}
	// failed ends the call: a 502 (or the error's own status) before the
	// stream began, the error event after.
	failed := func(e *errs.Error) {
		if !w.begun {
			writeError(c, e)
			return
		}
		w.data(inBandError(e))
	}

	tr := &deltaTracker{}
	pull := func() bool {
		ds, err := s.runs.DeltasAfter(ctx, run.RunID, tr.lastSeq)
		if err != nil {
			if ctx.Err() == nil {
				log.Error("reading run deltas", "err", err)
			}
			return false
		}
		for _, d := range ds {
			if text := tr.add(d); text != "" {
				begin()
				w.chunk(cc, gin.H{"content": text}, nil, nil)
			}
		}
		return true
	}
	poll := time.NewTicker(time.Second)
	defer poll.Stop()
	for {
		select {
		case <-ctx.Done():
			log.Info("chat client went away; the run goes on and is recorded")
			return
		case <-wake:
			pull()
		case <-poll.C:
			// Covers a notification lost while the listener reconnected.
			pull()
			if w.begun && time.Since(w.last) >= keepAliveEvery {
				w.comment("keep-alive")
			}
		case a := <-admitted:
			admitted = nil
			switch {
			case a.err != nil && !w.begun:
				fail(c, a.err)
				return
			case a.err != nil:
				// Its tokens came, so the run was admitted; only the
				// answer to its admission was lost: await the run.
				log.Warn("the admission's answer was lost after the run began streaming", "err", a.err)
			case a.run.RunID != run.RunID:
				// Another run answers (not for chat today, which sends no
				// Idempotency-Key): stream that one's tokens.
				unsubscribe()
				wake, unsubscribe = s.runs.Subscribe(a.run.RunID)
				_ = s.runs.ForgetDeltas(context.WithoutCancel(ctx), run.RunID)
				run, tr = a.run, &deltaTracker{}
				pull()
			default:
				run = a.run
			}
			if !w.begun {
				cc = chatCompletion(c, run, req) // an error before the first token names the run too
			}
			await()
		case out := <-done:
			pull()
			if out.err != nil {
				log.Error("waiting for the run failed", "err", out.err)
				failed(toError(c, out.err))
				return
			}
			if out.st.Status != workflows.StatusSuccess {
				failed(errs.New(errs.Upstream, "the pipeline ran but a node failed: %s", out.st.Error))
				return
			}
			begin()
			// Whatever the stream has not carried yet (all of it when the
			// answer was not streamable) goes out before the last chunk.
			answer := out.st.Outputs[target.Output.Key]
			if rest, ok := strings.CutPrefix(answer, tr.sent); ok && rest != "" {
				w.chunk(cc, gin.H{"content": rest}, nil, nil)
			} else if !ok {
				log.Warn("streamed text is not a prefix of the answer; sending the answer's remainder is impossible")
			}
			stop := "stop"
			w.chunk(cc, gin.H{}, &stop, usageJSON(out.st))
			w.done()
			return
		}
	}
}

// deltaTracker turns delta rows into text to send. Rows of a retried model
// call (a higher attempt) replay text already sent; only what goes beyond
// it is new.
type deltaTracker struct {
	lastSeq int64
	attempt int64
	current string // text of the current attempt
	sent    string // text sent to the client
}

func (t *deltaTracker) add(d runs.Delta) string {
	t.lastSeq = d.Seq
	if a := d.Seq / 1_000_000; a != t.attempt {
		t.attempt, t.current = a, ""
	}
	t.current += d.Text
	if len(t.current) <= len(t.sent) || !strings.HasPrefix(t.current, t.sent) {
		return ""
	}
	text := t.current[len(t.sent):]
	t.sent = t.current
	return text
}

// sseWriter writes events and flushes each one at once.
type sseWriter struct {
	c    *gin.Context
	last time.Time
	// begun: the 200 and the first chunk are written.
	begun bool
}

func (w *sseWriter) write(s string) {
	_, _ = w.c.Writer.WriteString(s)
	w.c.Writer.Flush()
	w.last = time.Now()
}

func (w *sseWriter) data(v any) {
	b, _ := json.Marshal(v)
	w.write("data: " + string(b) + "\n\n")
}

func (w *sseWriter) chunk(cc completion, delta gin.H, finish *string, usage gin.H) {
	ch := gin.H{
		"id": cc.id, "object": "chat.completion.chunk", "created": cc.created, "model": cc.model,
		"choices": []gin.H{{"index": 0, "delta": delta, "finish_reason": finish}},
	}
	if usage != nil {
		ch["usage"] = usage
	}
	w.data(ch)
}

func (w *sseWriter) comment(s string) { w.write(": " + s + "\n\n") }

func (w *sseWriter) done() { w.write("data: [DONE]\n\n") }
