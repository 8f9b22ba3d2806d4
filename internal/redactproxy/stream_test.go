package redactproxy

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"conduit/internal/redact"
)

const userText = "Write to alice@example.com, cc bob@example.org; card 4111 1111 1111 1111, SSN 123-45-6789, call +1 415 555 0132. Keep [EMAIL_1] literal."

// answerFor is what a model answers, written with the placeholders the
// session issued for the user's text (whatever the detector found).
func answerFor(t *testing.T, s *Session) (text, args string) {
	t.Helper()
	issued := s.Issued()
	if len(issued) < 2 {
		t.Fatalf("the detector found fewer than two values in %q: %v", userText, issued)
	}
	var b strings.Builder
	b.WriteString("Sure. ")
	for i, p := range issued {
		// Models change case and add possessives.
		if i%2 == 1 {
			p = "[" + strings.ToUpper(p[1:2]) + strings.ToLower(p[2:strings.LastIndex(p, "_")]) + p[strings.LastIndex(p, "_"):]
		}
		fmt.Fprintf(&b, "%s's turn; ", p)
	}
	b.WriteString("unknown [NAME_99] stays, and [EMAIL_1] too. New: carol@example.net.\nBye [")
	a, _ := json.Marshal(map[string]any{"to": issued[0], "note": "O'Brien said \"hi\" to " + issued[1]})
	return b.String(), string(a)
}

func newTestSession(t *testing.T) *Session {
	t.Helper()
	p, _ := Policy{}.Check()
	s := NewSession(p, []byte("k"), userText)
	if _, err := s.Redact(userText); err != nil {
		t.Fatal(err)
	}
	return s
}

func TestRedactStablePlaceholdersSkipLiterals(t *testing.T) {
	p, _ := Policy{}.Check()
	text := "mail alice@example.com or [EMAIL_1]; again alice@example.com, then bob@example.org"
	s := NewSession(p, []byte("k"), text)
	out, err := s.Redact(text)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out, "alice@") || strings.Contains(out, "bob@") {
		t.Fatalf("a value left: %s", out)
	}
	if strings.Count(out, "[EMAIL_2]") != 2 || !strings.Contains(out, "[EMAIL_3]") || strings.Count(out, "[EMAIL_1]") != 1 {
		t.Fatalf("placeholders: %s", out)
	}
	back := s.RestoreText("Hi [email_2]'s and [Email_3]; [EMAIL_1] is yours")
	if back != "Hi alice@example.com's and bob@example.org; [EMAIL_1] is yours" {
		t.Fatalf("restored %q", back)
	}
	if d := s.Dropped(); len(d) != 0 {
		t.Fatalf("dropped %v", d)
	}
	s2 := NewSession(p, nil, text)
	_, _ = s2.Redact(text)
	s2.RestoreText("only [EMAIL_2]")
	if d := s2.Dropped(); len(d) != 1 || d[0] != "[EMAIL_3]" {
		t.Fatalf("dropped %v", d)
	}
}

func TestPolicyActions(t *testing.T) {
	p, err := Policy{Types: []redact.Type{"EMAIL"}, Actions: map[redact.Type]Action{"EMAIL": ActMask}}.Check()
	if err != nil {
		t.Fatal(err)
	}
	s := NewSession(p, []byte("k"))
	out, _ := s.Redact("x a@b.co y")
	if out != "x ****** y" {
		t.Fatalf("%q", out)
	}
	p.Actions["EMAIL"] = ActHash
	h1, _ := NewSession(p, []byte("k")).Redact("a@b.co")
	h2, _ := NewSession(p, []byte("k")).Redact("a@b.co")
	h3, _ := NewSession(p, []byte("other")).Redact("a@b.co")
	if h1 != h2 || h1 == h3 || !strings.HasPrefix(h1, "[EMAIL_h") {
		t.Fatalf("%q %q %q", h1, h2, h3)
	}
	p.Actions["EMAIL"] = ActBlock
	if _, err := NewSession(p, nil).Redact("x a@b.co"); err == nil || strings.Contains(err.Error(), "a@b.co") {
		t.Fatalf("block: %v", err)
	}
	if out, err := NewSession(p, nil).RedactOutput("x a@b.co"); err != nil || out != "x ******" {
		t.Fatalf("a blocked type in the answer: %q %v", out, err)
	}
	if _, err := (Policy{Types: []redact.Type{"NOPE"}}).Check(); err == nil {
		t.Fatal("unknown type accepted")
	}
	if _, err := (Policy{Actions: map[redact.Type]Action{"EMAIL": "shred"}}).Check(); err == nil {
		t.Fatal("unknown action accepted")
	}
}

func TestRedactJSONKeepsQuotes(t *testing.T) {
	p, _ := Policy{}.Check()
	s := NewSession(p, nil)
	in := `{"who":"O'Brien \"Bob\" <bob@example.org>","n":1.50}`
	out, err := s.RedactJSON(in)
	if err != nil || strings.Contains(out, "bob@") || !strings.Contains(out, `O'Brien \"Bob\" <[EMAIL_1]>`) || !strings.Contains(out, "1.50") {
		t.Fatalf("%s %v", out, err)
	}
	if back := s.RestoreJSON(out); !strings.Contains(back, `<bob@example.org>`) {
		t.Fatalf("%s", back)
	}
}

// sse renders events for a style from text deltas and argument deltas.
func sse(style string, texts, args []string) string {
	var b strings.Builder
	ev := func(name string, v any) {
		j, _ := json.Marshal(v)
		if name != "" {
			fmt.Fprintf(&b, "event: %s\n", name)
		}
		fmt.Fprintf(&b, "data: %s\n\n", j)
	}
	if style == StyleAnthropic {
		ev("message_start", map[string]any{"type": "message_start", "message": map[string]any{"id": "msg_1", "model": "claude", "usage": map[string]any{"input_tokens": 5}}})
		ev("content_block_start", map[string]any{"type": "content_block_start", "index": 0, "content_block": map[string]any{"type": "text", "text": ""}})
		for _, s := range texts {
			ev("content_block_delta", map[string]any{"type": "content_block_delta", "index": 0, "delta": map[string]any{"type": "text_delta", "text": s}})
		}
		ev("content_block_stop", map[string]any{"type": "content_block_stop", "index": 0})
		ev("content_block_start", map[string]any{"type": "content_block_start", "index": 1, "content_block": map[string]any{"type": "tool_use", "id": "toolu_1", "name": "send", "input": map[string]any{}}})
		for _, s := range args {
			ev("content_block_delta", map[string]any{"type": "content_block_delta", "index": 1, "delta": map[string]any{"type": "input_json_delta", "partial_json": s}})
		}
		ev("content_block_stop", map[string]any{"type": "content_block_stop", "index": 1})
		ev("message_delta", map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": "tool_use"}, "usage": map[string]any{"output_tokens": 9}})
		ev("message_stop", map[string]any{"type": "message_stop"})
		return b.String()
	}
	chunk := func(delta map[string]any, finish any) map[string]any {
		return map[string]any{"id": "c1", "object": "chat.completion.chunk", "created": 1, "model": "m", "choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}}}
	}
	ev("", chunk(map[string]any{"role": "assistant", "content": ""}, nil))
	for _, s := range texts {
		ev("", chunk(map[string]any{"content": s}, nil))
	}
	ev("", chunk(map[string]any{"tool_calls": []any{map[string]any{"index": 0, "id": "call_1", "type": "function", "function": map[string]any{"name": "send", "arguments": ""}}}}, nil))
	for _, s := range args {
		ev("", chunk(map[string]any{"tool_calls": []any{map[string]any{"index": 0, "function": map[string]any{"arguments": s}}}}, nil))
	}
	ev("", chunk(map[string]any{}, "tool_calls"))
	b.WriteString("data: [DONE]\n\n")
	return b.String()
}

func wholeBody(style, text, args string) []byte {
	if style == StyleAnthropic {
		var input any
		_ = json.Unmarshal([]byte(args), &input)
		b, _ := json.Marshal(map[string]any{"id": "msg_1", "type": "message", "role": "assistant", "model": "claude", "stop_reason": "tool_use",
			"content": []any{map[string]any{"type": "text", "text": text}, map[string]any{"type": "tool_use", "id": "toolu_1", "name": "send", "input": input}},
			"usage":   map[string]any{"input_tokens": 5, "output_tokens": 9}})
		return b
	}
	b, _ := json.Marshal(map[string]any{"id": "c1", "object": "chat.completion", "created": 1, "model": "m", "choices": []any{map[string]any{"index": 0,
		"message":       map[string]any{"role": "assistant", "content": text, "tool_calls": []any{map[string]any{"id": "call_1", "type": "function", "function": map[string]any{"name": "send", "arguments": args}}}},
		"finish_reason": "tool_calls"}}})
	return b
}

// collect runs a stream and concatenates the caller's content and the
// first tool call's arguments.
func collect(t *testing.T, tr *translator, body io.Reader) (content, args string, finish any) {
	t.Helper()
	err := tr.stream(body, func(v any) error {
		b, _ := json.Marshal(v)
		var c struct {
			Choices []struct {
				Delta struct {
					Content   string `json:"content"`
					ToolCalls []struct {
						Function struct {
							Arguments string `json:"arguments"`
						} `json:"function"`
					} `json:"tool_calls"`
				} `json:"delta"`
				FinishReason any `json:"finish_reason"`
			} `json:"choices"`
		}
		if err := json.Unmarshal(b, &c); err != nil {
			t.Fatal(err)
		}
		for _, ch := range c.Choices {
			content += ch.Delta.Content
			for _, tc := range ch.Delta.ToolCalls {
				args += tc.Function.Arguments
			}
			if ch.FinishReason != nil {
				finish = ch.FinishReason
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return content, args, finish
}

func sameJSON(a, b string) bool {
	var x, y any
	if json.Unmarshal([]byte(a), &x) != nil || json.Unmarshal([]byte(b), &y) != nil {
		return false
	}
	xa, _ := json.Marshal(x)
	ya, _ := json.Marshal(y)
	return string(xa) == string(ya)
}

// TestStreamEqualsWholeAtEveryBoundary splits the answer text and the tool
// call's arguments at every byte boundary (and into single bytes) across
// events, for every upstream style and both output modes: the caller's
// concatenated stream must equal the restored whole answer.
func TestStreamEqualsWholeAtEveryBoundary(t *testing.T) {
	for _, style := range []string{StyleOpenAI, StyleAzure, StyleCustom, StyleAnthropic} {
		for _, out := range []Output{OutRestore, OutRedact} {
			t.Run(style+"/"+string(out), func(t *testing.T) {
				text, args := answerFor(t, newTestSession(t))
				tr := &translator{sess: newTestSession(t), output: out, style: style}
				want, err := tr.whole(wholeBody(style, text, args))
				if err != nil {
					t.Fatal(err)
				}
				msg := asMap(asMap(asSlice(want["choices"])[0])["message"])
				wantText := msg["content"].(string)
				wantArgs := asMap(asMap(asSlice(msg["tool_calls"])[0])["function"])["arguments"].(string)
				for _, v := range []string{"alice@example.com", "bob@example.org", "O'Brien said \\\"hi\\\""} {
					if !strings.Contains(wantText+wantArgs, v) {
						t.Fatalf("%q not restored in %q / %q", v, wantText, wantArgs)
					}
				}
				if out == OutRedact && strings.Contains(wantText, "carol@example.net") {
					t.Fatalf("new PII not redacted: %q", wantText)
				}
				if out == OutRestore && !strings.Contains(wantText, "carol@example.net") {
					t.Fatalf("restore-only changed new text: %q", wantText)
				}
				splits := [][2][]string{}
				for i := 0; i <= len(text); i++ {
					splits = append(splits, [2][]string{{text[:i], text[i:]}, {args}})
				}
				for i := 0; i <= len(args); i++ {
					splits = append(splits, [2][]string{{text}, {args[:i], args[i:]}})
				}
				splits = append(splits, [2][]string{strings.Split(text, ""), strings.Split(args, "")})
				for _, sp := range splits {
					tr := &translator{sess: newTestSession(t), output: out, style: style}
					gotText, gotArgs, finish := collect(t, tr, strings.NewReader(sse(style, sp[0], sp[1])))
					if gotText != wantText {
						t.Fatalf("split %q: streamed text\n%q\nwant\n%q", sp[0], gotText, wantText)
					}
					if !sameJSON(gotArgs, wantArgs) {
						t.Fatalf("split %q: streamed args %q want %q", sp[1], gotArgs, wantArgs)
					}
					if finish != "tool_calls" {
						t.Fatalf("finish %v", finish)
					}
				}
			})
		}
	}
}

// TestStreamDoesNotWaitForTheEnd: the first restored token reaches the
// caller while the upstream's stream is still open.
func TestStreamDoesNotWaitForTheEnd(t *testing.T) {
	for _, style := range []string{StyleOpenAI, StyleAnthropic} {
		for _, out := range []Output{OutRestore, OutRedact} {
			t.Run(style+"/"+string(out), func(t *testing.T) {
				pr, pw := io.Pipe()
				sess := newTestSession(t)
				first := sess.Issued()[0]
				value, _ := sess.ph.Value(first)
				full := sse(style, []string{"Hello " + first + ".\n", " more text"}, []string{`{}`})
				// Everything up to the first content event's end.
				cut := strings.Index(full, "\\n\"") + 1
				cut += strings.Index(full[cut:], "\n\n") + 2
				got := make(chan string, 100)
				done := make(chan error, 1)
				tr := &translator{sess: sess, output: out, style: style}
				go func() {
					done <- tr.stream(pr, func(v any) error {
						b, _ := json.Marshal(v)
						got <- string(b)
						return nil
					})
				}()
				if _, err := pw.Write([]byte(full[:cut])); err != nil {
					t.Fatal(err)
				}
				// The upstream has not ended: the restored value must still
				// arrive (bounded, so a regression fails instead of hanging).
				bound := time.After(time.Minute)
			wait:
				for {
					select {
					case c := <-got:
						if strings.Contains(c, value) {
							break wait
						}
					case <-bound:
						t.Fatal("nothing restored reached the caller before the upstream ended")
					}
				}
				_, _ = pw.Write([]byte(full[cut:]))
				pw.Close()
				if err := <-done; err != nil {
					t.Fatal(err)
				}
			})
		}
	}
}
