package frontend_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"conduit/internal/redact"
)

// The PII values the tests send: the detector certainly finds the emails;
// the others are asserted only when it finds them (so a better detector
// passes too).
var piiValues = []string{"alice@example.com", "bob.smith@example.org", "+1 415 555 0132", "4111 1111 1111 1111", "123-45-6789"}

const piiPrompt = "Please email alice@example.com and bob.smith@example.org, call +1 415 555 0132, card 4111 1111 1111 1111, SSN 123-45-6789."

var placeholderRE = regexp.MustCompile(`\[[A-Za-z]+_[0-9]+\]`)

// detected are the values the detector finds in the prompt: each must
// never reach the upstream and must come back restored.
func detected(t *testing.T) []string {
	t.Helper()
	ents, err := redact.Detect(piiPrompt, redact.Options{})
	if err != nil {
		t.Fatal(err)
	}
	runes := []rune(piiPrompt)
	var out []string
	for _, v := range piiValues {
		for _, e := range ents {
			if strings.Contains(string(runes[e.Start:e.End]), v) {
				out = append(out, v)
				break
			}
		}
	}
	if len(out) < 2 {
		t.Fatalf("the detector finds fewer than the two emails: %v", out)
	}
	return out
}

// fakeUpstream plays one upstream style faithfully enough for the proxy:
// it records what it received and answers with the placeholders it saw,
// as a model does (case changed, possessives added), plus a tool call.
type fakeUpstream struct {
	style string
	mu    sync.Mutex
	// got records every request: path with query, headers, body.
	paths   []string
	headers []http.Header
	bodies  []string
	// split cuts the answer text into two deltas at this byte (-1: one
	// delta per byte); argSplit the same for the tool call's arguments.
	split, argSplit atomic.Int64
	// hold, when set, holds the stream after its first content event until
	// closed; waited says the hold ran out (the proxy did not pass the
	// first token on).
	hold   chan struct{}
	waited atomic.Bool
	status int
}

func (f *fakeUpstream) answer(received string) (text, args string) {
	var phs []string
	seen := map[string]bool{}
	for _, p := range placeholderRE.FindAllString(received, -1) {
		if !seen[p] {
			seen[p] = true
			phs = append(phs, p)
		}
	}
	var b strings.Builder
	b.WriteString("Sure. ")
	for i, p := range phs {
		if i%2 == 1 {
			us := strings.LastIndex(p, "_")
			p = "[" + p[1:2] + strings.ToLower(p[2:us]) + p[us:]
		}
		fmt.Fprintf(&b, "%s's turn; ", p)
	}
	b.WriteString("unknown [NAME_99] stays.\nBye")
	first := ""
	if len(phs) > 0 {
		first = phs[0]
	}
	a, _ := json.Marshal(map[string]any{"to": first, "note": "O'Brien said \"hi\""})
	return b.String(), string(a)
}

func cut(s string, at int64) []string {
	if at < 0 {
		return strings.Split(s, "")
	}
	if at > int64(len(s)) {
		at = int64(len(s))
	}
	return []string{s[:at], s[at:]}
}

func (f *fakeUpstream) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	f.mu.Lock()
	f.paths = append(f.paths, r.URL.RequestURI())
	f.headers = append(f.headers, r.Header.Clone())
	f.bodies = append(f.bodies, string(body))
	status := f.status
	f.mu.Unlock()
	if status != 0 {
		w.WriteHeader(status)
		_, _ = io.WriteString(w, `{"error":{"message":"upstream says no","type":"invalid_request_error"}}`)
		return
	}
	var req struct {
		Stream   bool              `json:"stream"`
		Messages []json.RawMessage `json:"messages"`
	}
	_ = json.Unmarshal(body, &req)
	text, args := f.answer(string(body))
	if !req.Stream {
		w.Header().Set("Content-Type", "application/json")
		if f.style == "anthropic" {
			var input any
			_ = json.Unmarshal([]byte(args), &input)
			_ = json.NewEncoder(w).Encode(map[string]any{"id": "msg_1", "type": "message", "role": "assistant", "model": "claude-x", "stop_reason": "tool_use",
				"content": []any{map[string]any{"type": "text", "text": text}, map[string]any{"type": "tool_use", "id": "toolu_1", "name": "send", "input": input}},
				"usage":   map[string]any{"input_tokens": 11, "output_tokens": 7}})
			return
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": "gpt-x",
			"choices": []any{map[string]any{"index": 0, "finish_reason": "tool_calls", "message": map[string]any{"role": "assistant", "content": text,
				"tool_calls": []any{map[string]any{"id": "call_1", "type": "function", "function": map[string]any{"name": "send", "arguments": args}}}}}},
			"usage": map[string]any{"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18}})
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	fl := w.(http.Flusher)
	ev := func(name string, v any) {
		j, _ := json.Marshal(v)
		if name != "" {
			fmt.Fprintf(w, "event: %s\n", name)
		}
		// The event's bytes go out in two writes, split inside the JSON.
		line := "data: " + string(j) + "\n\n"
		_, _ = io.WriteString(w, line[:len(line)/2])
		fl.Flush()
		_, _ = io.WriteString(w, line[len(line)/2:])
		fl.Flush()
	}
	texts, argParts := cut(text, f.split.Load()), cut(args, f.argSplit.Load())
	held := false
	hold := func() {
		if f.hold == nil || held {
			return
		}
		held = true
		select {
		case <-f.hold:
		case <-time.After(time.Minute):
			f.waited.Store(true)
		}
	}
	if f.style == "anthropic" {
		ev("message_start", map[string]any{"type": "message_start", "message": map[string]any{"id": "msg_1", "model": "claude-x", "usage": map[string]any{"input_tokens": 11}}})
		ev("content_block_start", map[string]any{"type": "content_block_start", "index": 0, "content_block": map[string]any{"type": "text", "text": ""}})
		for _, s := range texts {
			ev("content_block_delta", map[string]any{"type": "content_block_delta", "index": 0, "delta": map[string]any{"type": "text_delta", "text": s}})
			hold()
		}
		ev("content_block_stop", map[string]any{"type": "content_block_stop", "index": 0})
		ev("content_block_start", map[string]any{"type": "content_block_start", "index": 1, "content_block": map[string]any{"type": "tool_use", "id": "toolu_1", "name": "send", "input": map[string]any{}}})
		for _, s := range argParts {
			ev("content_block_delta", map[string]any{"type": "content_block_delta", "index": 1, "delta": map[string]any{"type": "input_json_delta", "partial_json": s}})
		}
		ev("content_block_stop", map[string]any{"type": "content_block_stop", "index": 1})
		ev("message_delta", map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": "tool_use"}, "usage": map[string]any{"output_tokens": 7}})
		ev("message_stop", map[string]any{"type": "message_stop"})
		return
	}
	chunk := func(delta map[string]any, finish any) map[string]any {
		return map[string]any{"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "gpt-x", "choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}}}
	}
	ev("", chunk(map[string]any{"role": "assistant", "content": ""}, nil))
	for _, s := range texts {
		ev("", chunk(map[string]any{"content": s}, nil))
		hold()
	}
	ev("", chunk(map[string]any{"tool_calls": []any{map[string]any{"index": 0, "id": "call_1", "type": "function", "function": map[string]any{"name": "send", "arguments": ""}}}}, nil))
	for _, s := range argParts {
		ev("", chunk(map[string]any{"tool_calls": []any{map[string]any{"index": 0, "function": map[string]any{"arguments": s}}}}, nil))
	}
	ev("", chunk(map[string]any{}, "tool_calls"))
	_, _ = io.WriteString(w, "data: [DONE]\n\n")
}

func (f *fakeUpstream) received() (paths []string, headers []http.Header, bodies []string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.paths...), append([]http.Header(nil), f.headers...), append([]string(nil), f.bodies...)
}

type styleCase struct {
	style, host string
	proxy       map[string]any
}

func styleCases() []styleCase {
	return []styleCase{
		{"openai", "openai.upstream.test", map[string]any{"style": "openai", "baseUrl": "https://openai.upstream.test/v1"}},
		{"azure", "azure.upstream.test", map[string]any{"style": "azure", "baseUrl": "https://azure.upstream.test", "apiVersion": "2024-10-21", "models": map[string]string{"gpt-4o": "prod-deploy"}}},
		{"anthropic", "anthropic.upstream.test", map[string]any{"style": "anthropic", "baseUrl": "https://anthropic.upstream.test", "models": map[string]string{"gpt-4o": "claude-x"}}},
		{"custom", "custom.upstream.test", map[string]any{"style": "custom", "baseUrl": "https://custom.upstream.test/v1"}},
	}
}

func createProxy(t *testing.T, key string, body map[string]any) map[string]any {
	t.Helper()
	resp := env.Do(t, "POST", "/api/proxies", body, "Authorization", "Bearer "+key)
	if resp.Status != http.StatusCreated {
		t.Fatalf("create proxy: %d %s", resp.Status, resp.Body)
	}
	return resp.JSON(t)
}

func chatParams() openai.ChatCompletionNewParams {
	return openai.ChatCompletionNewParams{
		Model: "gpt-4o",
		Messages: []openai.ChatCompletionMessageParamUnion{
			openai.SystemMessage("You are terse."),
			openai.UserMessage(piiPrompt),
		},
		Tools: []openai.ChatCompletionToolUnionParam{openai.ChatCompletionFunctionTool(openai.FunctionDefinitionParam{
			Name: "send", Parameters: openai.FunctionParameters{"type": "object", "properties": map[string]any{"to": map[string]any{"type": "string"}}},
		})},
	}
}

func redactClient(key, proxy, modelKey string) openai.Client {
	return openai.NewClient(option.WithBaseURL(env.URL+"/api/redact/"), option.WithAPIKey(key), option.WithMaxRetries(0),
		option.WithHeader("x-svc-proxy", proxy), option.WithHeader("x-model-key", modelKey))
}

// TestRedactingChatThroughEveryStyle drives the redacting endpoint with
// the official OpenAI client through a proxy of each upstream style, plain
// and streamed, the stream split at every byte of the answer: no original
// value reaches the upstream, every value comes back, the streamed answer
// equals the plain one, and the first token arrives before the upstream's
// stream ends.
func TestRedactingChatThroughEveryStyle(t *testing.T) {
	values := detected(t)
	_, key := env.NewAccount(t)
	modelKey := fmt.Sprintf("sk-upstream-SECRET-%d", time.Now().UnixNano())
	for _, sc := range styleCases() {
		t.Run(sc.style, func(t *testing.T) {
			up := &fakeUpstream{style: sc.style}
			env.Internet.Host(t, sc.host, up)
			sc.proxy["name"] = "p-" + sc.style
			px := createProxy(t, key, sc.proxy)
			client := redactClient(key, px["name"].(string), modelKey)
			ctx := context.Background()

			var raw *http.Response
			resp, err := client.Chat.Completions.New(ctx, chatParams(), option.WithResponseInto(&raw))
			if err != nil {
				t.Fatal(err)
			}
			plain := resp.Choices[0].Message.Content
			if len(resp.Choices[0].Message.ToolCalls) != 1 {
				t.Fatalf("tool calls: %+v", resp.Choices[0].Message)
			}
			plainArgs := resp.Choices[0].Message.ToolCalls[0].Function.Arguments
			for _, v := range values {
				if !strings.Contains(plain, v) {
					t.Fatalf("%q not restored in %q", v, plain)
				}
			}
			if strings.Contains(plain, "[NAME_99]") == false || placeholderRE.ReplaceAllString(plain, "") != strings.ReplaceAll(plain, "[NAME_99]", "") {
				t.Fatalf("a placeholder left (or the unknown one lost): %q", plain)
			}
			var args map[string]string
			if err := json.Unmarshal([]byte(plainArgs), &args); err != nil || args["to"] != values[0] || args["note"] != `O'Brien said "hi"` {
				t.Fatalf("arguments %q", plainArgs)
			}
			if raw.Header.Get("x-svc-redaction-entities") == "" || raw.Header.Get("x-svc-proxy-id") != px["id"] {
				t.Fatalf("headers %v", raw.Header)
			}

			// Streamed, split at every byte of the answer text (and once
			// into single bytes, arguments too).
			_, _, bodies := up.received()
			text, _ := up.answer(bodies[0])
			for at := int64(-1); at <= int64(len(text)); at++ {
				up.split.Store(at)
				up.argSplit.Store(at)
				content, gotArgs := streamChat(t, client, nil)
				if content != plain {
					t.Fatalf("split at %d: streamed %q, plain %q", at, content, plain)
				}
				var a map[string]string
				if err := json.Unmarshal([]byte(gotArgs), &a); err != nil || a["to"] != args["to"] || a["note"] != args["note"] {
					t.Fatalf("split at %d: streamed arguments %q", at, gotArgs)
				}
			}

			// The first token reaches the caller while the upstream holds
			// the rest of its stream.
			up.split.Store(int64(strings.Index(text, "turn")))
			up.hold = make(chan struct{})
			content, _ := streamChat(t, client, up.hold)
			up.hold = nil
			if up.waited.Load() || content != plain {
				t.Fatalf("the first token waited for the upstream's end (waited %v) or differs: %q", up.waited.Load(), content)
			}

			// What the upstream received: no value, the key in its header.
			paths, headers, bodies := up.received()
			for i, b := range bodies {
				for _, v := range values {
					if strings.Contains(b, v) {
						t.Fatalf("%q reached the upstream: %s", v, b)
					}
				}
				got := map[string]string{"openai": headers[i].Get("Authorization"), "custom": headers[i].Get("Authorization"),
					"azure": headers[i].Get("api-key"), "anthropic": headers[i].Get("x-api-key")}[sc.style]
				if want := map[bool]string{true: "Bearer " + modelKey, false: modelKey}[sc.style == "openai" || sc.style == "custom"]; got != want {
					t.Fatalf("upstream key header %q", got)
				}
			}
			wantPath := map[string]string{"openai": "/v1/chat/completions", "custom": "/v1/chat/completions",
				"azure": "/openai/deployments/prod-deploy/chat/completions?api-version=2024-10-21", "anthropic": "/v1/messages"}[sc.style]
			if paths[0] != wantPath {
				t.Fatalf("path %q, want %q", paths[0], wantPath)
			}
			if sc.style == "anthropic" {
				var b map[string]any
				_ = json.Unmarshal([]byte(bodies[0]), &b)
				tools, _ := b["tools"].([]any)
				if b["system"] != "You are terse." || b["model"] != "claude-x" || len(tools) != 1 || headers[0].Get("anthropic-version") == "" {
					t.Fatalf("anthropic request %s", bodies[0])
				}
			}
		})
	}
	assertKeyNowhere(t, modelKey)
}

// streamChat reads a streamed answer with the official client; with hold,
// it closes hold once the first restored text arrives.
func streamChat(t *testing.T, client openai.Client, hold chan struct{}) (content, args string) {
	t.Helper()
	stream := client.Chat.Completions.NewStreaming(context.Background(), chatParams())
	acc := openai.ChatCompletionAccumulator{}
	for stream.Next() {
		ch := stream.Current()
		acc.AddChunk(ch)
		for _, c := range ch.Choices {
			content += c.Delta.Content
			for _, tc := range c.Delta.ToolCalls {
				args += tc.Function.Arguments
			}
		}
		if hold != nil && content != "" {
			close(hold)
			hold = nil
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	if len(acc.Choices) != 1 || acc.Choices[0].Message.Content != content {
		t.Fatalf("accumulated %+v", acc.Choices)
	}
	return content, args
}

// assertKeyNowhere: the per-call upstream key is in no log line and no
// database row.
func assertKeyNowhere(t *testing.T, secret string) {
	t.Helper()
	if strings.Contains(env.Logs(), secret) {
		t.Fatal("x-model-key was logged")
	}
	conn, err := pgx.Connect(context.Background(), env.Config.Database.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	rows, err := conn.Query(context.Background(), `SELECT table_name FROM information_schema.tables WHERE table_schema = 'public' AND table_type = 'BASE TABLE'`)
	if err != nil {
		t.Fatal(err)
	}
	var tables []string
	for rows.Next() {
		var n string
		_ = rows.Scan(&n)
		tables = append(tables, n)
	}
	rows.Close()
	for _, tbl := range tables {
		var hits int
		if err := conn.QueryRow(context.Background(), `SELECT count(*) FROM `+pgx.Identifier{tbl}.Sanitize()+` t WHERE strpos(t::text, $1) > 0 OR strpos(encode(convert_to(t::text, 'UTF8'), 'escape'), $1) > 0`, secret).Scan(&hits); err != nil {
			t.Fatalf("%s: %v", tbl, err)
		}
		if hits > 0 {
			t.Fatalf("x-model-key is stored in table %s", tbl)
		}
	}
}
