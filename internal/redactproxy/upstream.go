package redactproxy

import (
	"bufio"
	"encoding/json"
	"io"
	"net/url"
	"strings"
	"time"

	"conduit/internal/errs"
)

// AnthropicVersion is the anthropic-version header the anthropic style sends.
const AnthropicVersion = "2023-06-01"

type upstreamCall struct {
	url     string
	headers map[string]string
	body    []byte
}

func (s *Service) buildUpstream(p Proxy, r *chatRequest, key string) (upstreamCall, error) {
	model := r.model
	if m, ok := p.Models[model]; ok {
		model = m
	} else if p.DefaultModel != "" {
		model = p.DefaultModel
	}
	if model == "" {
		return upstreamCall{}, errs.Invalidf("model is required (this proxy maps no default model)")
	}
	msgs, _ := json.Marshal(r.messages)
	c := upstreamCall{headers: map[string]string{"Content-Type": "application/json"}}
	if r.stream {
		c.headers["Accept"] = "text/event-stream"
	}
	switch p.Style {
	case StyleAnthropic:
		base := p.BaseURL
		if base == "" {
			base = s.AnthropicURL
		}
		c.url = strings.TrimRight(base, "/") + "/v1/messages"
		c.headers["x-api-key"] = key
		c.headers["anthropic-version"] = AnthropicVersion
		body, err := toAnthropic(r, model)
		if err != nil {
			return c, err
		}
		c.body = body
		return c, nil
	case StyleAzure:
		c.url = p.BaseURL + "/openai/deployments/" + url.PathEscape(model) + "/chat/completions?api-version=" + url.QueryEscape(p.APIVersion)
		c.headers["api-key"] = key
	case StyleOpenAI:
		base := p.BaseURL
		if base == "" {
			base = s.OpenAIURL
		}
		c.url = strings.TrimRight(base, "/") + "/chat/completions"
		c.headers["Authorization"] = "Bearer " + key
	default:
		c.url = p.BaseURL + "/chat/completions"
		c.headers["Authorization"] = "Bearer " + key
	}
	out := make(map[string]json.RawMessage, len(r.raw))
	for k, v := range r.raw {
		out[k] = v
	}
	out["messages"] = msgs
	mb, _ := json.Marshal(model)
	out["model"] = mb
	c.body, _ = json.Marshal(out)
	return c, nil
}

// toAnthropic translates a chat completions request to Anthropic's
// messages API: system messages become system, tool calls tool_use
// blocks, tool answers tool_result blocks, consecutive turns of one role
// are merged.
func toAnthropic(r *chatRequest, model string) ([]byte, error) {
	body := map[string]any{"model": model, "max_tokens": 4096}
	var system []string
	var msgs []map[string]any
	add := func(role string, blocks ...map[string]any) {
		if n := len(msgs); n > 0 && msgs[n-1]["role"] == role {
			msgs[n-1]["content"] = append(msgs[n-1]["content"].([]map[string]any), blocks...)
			return
		}
		msgs = append(msgs, map[string]any{"role": role, "content": blocks})
	}
	for i, m := range r.messages {
		role, _ := m["role"].(string)
		var blocks []map[string]any
		switch c := m["content"].(type) {
		case string:
			if c != "" {
				blocks = append(blocks, map[string]any{"type": "text", "text": c})
			}
		case []any:
			for _, part := range c {
				p := asMap(part)
				switch p["type"] {
				case "text":
					blocks = append(blocks, map[string]any{"type": "text", "text": p["text"]})
				case "image_url":
					u, _ := asMap(p["image_url"])["url"].(string)
					if rest, ok := strings.CutPrefix(u, "data:"); ok {
						mt, data, _ := strings.Cut(rest, ";base64,")
						blocks = append(blocks, map[string]any{"type": "image", "source": map[string]any{"type": "base64", "media_type": mt, "data": data}})
					} else {
						blocks = append(blocks, map[string]any{"type": "image", "source": map[string]any{"type": "url", "url": u}})
					}
				}
			}
		}
		switch role {
		case "system", "developer":
			for _, b := range blocks {
				if t, ok := b["text"].(string); ok {
					system = append(system, t)
				}
			}
		case "user":
			add("user", blocks...)
		case "assistant":
			for _, call := range asSlice(m["tool_calls"]) {
				cm := asMap(call)
				fn := asMap(cm["function"])
				var input any = map[string]any{}
				if args, _ := fn["arguments"].(string); args != "" {
					if err := json.Unmarshal([]byte(args), &input); err != nil {
						return nil, errs.Invalidf("messages[%d].tool_calls: arguments must be JSON for the anthropic style", i)
					}
				}
				blocks = append(blocks, map[string]any{"type": "tool_use", "id": cm["id"], "name": fn["name"], "input": input})
			}
			add("assistant", blocks...)
		case "tool":
			text := ""
			for _, b := range blocks {
				t, _ := b["text"].(string)
				text += t
			}
			add("user", map[string]any{"type": "tool_result", "tool_use_id": m["tool_call_id"], "content": text})
		default:
			return nil, errs.Invalidf("messages[%d].role %q is not one the anthropic style can carry", i, role)
		}
	}
	if len(system) > 0 {
		body["system"] = strings.Join(system, "\n\n")
	}
	body["messages"] = msgs
	var v any
	for _, k := range []string{"max_tokens", "max_completion_tokens"} {
		if raw, ok := r.raw[k]; ok && json.Unmarshal(raw, &v) == nil && v != nil {
			body["max_tokens"] = v
		}
	}
	for from, to := range map[string]string{"temperature": "temperature", "top_p": "top_p"} {
		if raw, ok := r.raw[from]; ok {
			body[to] = raw
		}
	}
	if raw, ok := r.raw["stop"]; ok {
		var one string
		var many []string
		if json.Unmarshal(raw, &one) == nil {
			body["stop_sequences"] = []string{one}
		} else if json.Unmarshal(raw, &many) == nil {
			body["stop_sequences"] = many
		}
	}
	if raw, ok := r.raw["tools"]; ok {
		var tools []struct {
			Function struct {
				Name        string          `json:"name"`
				Description string          `json:"description"`
				Parameters  json.RawMessage `json:"parameters"`
			} `json:"function"`
		}
		if err := json.Unmarshal(raw, &tools); err != nil {
			return nil, errs.Invalidf("tools must be an array of function tools")
		}
		var out []map[string]any
		for _, t := range tools {
			schema := t.Function.Parameters
			if len(schema) == 0 {
				schema = json.RawMessage(`{"type":"object"}`)
			}
			out = append(out, map[string]any{"name": t.Function.Name, "description": t.Function.Description, "input_schema": schema})
		}
		body["tools"] = out
	}
	if raw, ok := r.raw["tool_choice"]; ok {
		var s string
		var obj struct {
			Function struct {
				Name string `json:"name"`
			} `json:"function"`
		}
		switch {
		case json.Unmarshal(raw, &s) == nil && s == "required":
			body["tool_choice"] = map[string]any{"type": "any"}
		case s == "auto" || s == "none":
			body["tool_choice"] = map[string]any{"type": s}
		case json.Unmarshal(raw, &obj) == nil && obj.Function.Name != "":
			body["tool_choice"] = map[string]any{"type": "tool", "name": obj.Function.Name}
		}
	}
	if r.stream {
		body["stream"] = true
	}
	return json.Marshal(body)
}

func asSlice(v any) []any {
	s, _ := v.([]any)
	return s
}

// translator turns the upstream's answer into the caller's: Anthropic's
// shapes into chat completions, and every text through the call's
// session (output redaction when on, then restoration).
type translator struct {
	sess    *Session
	output  Output
	style   string
	model   string
	id      string
	created int64
	upModel string
	// per choice (OpenAI shape) or per content block (Anthropic).
	content map[int]*textPipe
	args    map[[2]int]*Restorer
	// anthropic: content block index → tool call index.
	toolIndex map[int]int
	usage     map[string]any
}

func (t *translator) modelName() string {
	if t.upModel != "" {
		return t.upModel
	}
	return t.model
}

// textPipe is one stream of answer text: output redaction (when on) then
// restoration, each holding back only what it must.
type textPipe struct {
	out *OutputRedactor
	res *Restorer
}

func (t *translator) pipe(i int) *textPipe {
	if t.content == nil {
		t.content = map[int]*textPipe{}
	}
	p, ok := t.content[i]
	if !ok {
		p = &textPipe{res: t.sess.NewRestorer(false)}
		if t.output == OutRedact {
			p.out = t.sess.NewOutputRedactor()
		}
		t.content[i] = p
	}
	return p
}

func (p *textPipe) push(s string) (string, error) {
	if p.out != nil {
		var err error
		if s, err = p.out.Push(s); err != nil {
			return "", err
		}
	}
	return p.res.Push(s), nil
}

func (p *textPipe) flush() (string, error) {
	s := ""
	if p.out != nil {
		var err error
		if s, err = p.out.Flush(); err != nil {
			return "", err
		}
	}
	return p.res.Push(s) + p.res.Flush(), nil
}

func (t *translator) argPipe(choice, call int) *Restorer {
	if t.args == nil {
		t.args = map[[2]int]*Restorer{}
	}
	k := [2]int{choice, call}
	r, ok := t.args[k]
	if !ok {
		r = t.sess.NewRestorer(true)
		t.args[k] = r
	}
	return r
}

// wholeText runs a whole text through a fresh pipe.
func (t *translator) wholeText(s string) (string, error) {
	p := &textPipe{res: t.sess.NewRestorer(false)}
	if t.output == OutRedact {
		p.out = t.sess.NewOutputRedactor()
	}
	a, err := p.push(s)
	if err != nil {
		return "", err
	}
	b, err := p.flush()
	return a + b, err
}

// whole translates a non-streamed answer.
func (t *translator) whole(body []byte) (map[string]any, error) {
	var m map[string]any
	dec := json.NewDecoder(strings.NewReader(string(body)))
	dec.UseNumber()
	if err := dec.Decode(&m); err != nil {
		return nil, &errs.Error{Kind: errs.Upstream, Code: "upstream_malformed", Msg: "the upstream's answer is not JSON"}
	}
	if t.style == StyleAnthropic {
		m = fromAnthropic(m, t.model)
	}
	for _, c := range asSlice(m["choices"]) {
		msg := asMap(asMap(c)["message"])
		if msg == nil {
			continue
		}
		if s, ok := msg["content"].(string); ok {
			out, err := t.wholeText(s)
			if err != nil {
				return nil, err
			}
			msg["content"] = out
		}
		for _, call := range asSlice(msg["tool_calls"]) {
			fn := asMap(asMap(call)["function"])
			if args, ok := fn["arguments"].(string); ok {
				fn["arguments"] = t.sess.RestoreJSON(args)
			}
		}
		if fc := asMap(msg["function_call"]); fc != nil {
			if args, ok := fc["arguments"].(string); ok {
				fc["arguments"] = t.sess.RestoreJSON(args)
			}
		}
	}
	return m, nil
}

var stopReasons = map[string]string{"end_turn": "stop", "stop_sequence": "stop", "max_tokens": "length", "tool_use": "tool_calls", "pause_turn": "stop", "refusal": "content_filter"}

func finishReason(stop any) any {
	s, _ := stop.(string)
	if s == "" {
		return nil
	}
	if r, ok := stopReasons[s]; ok {
		return r
	}
	return "stop"
}

func fromAnthropic(m map[string]any, model string) map[string]any {
	var text strings.Builder
	var calls []any
	hasText := false
	for _, b := range asSlice(m["content"]) {
		bm := asMap(b)
		switch bm["type"] {
		case "text":
			s, _ := bm["text"].(string)
			text.WriteString(s)
			hasText = true
		case "tool_use":
			args, _ := json.Marshal(bm["input"])
			calls = append(calls, map[string]any{"id": bm["id"], "type": "function", "function": map[string]any{"name": bm["name"], "arguments": string(args)}})
		}
	}
	msg := map[string]any{"role": "assistant", "content": nil}
	if hasText || len(calls) == 0 {
		msg["content"] = text.String()
	}
	if len(calls) > 0 {
		msg["tool_calls"] = calls
	}
	u := asMap(m["usage"])
	in, _ := u["input_tokens"].(json.Number).Int64()
	out, _ := u["output_tokens"].(json.Number).Int64()
	name, _ := m["model"].(string)
	if name == "" {
		name = model
	}
	return map[string]any{"id": m["id"], "object": "chat.completion", "created": time.Now().Unix(), "model": name,
		"choices":            []any{map[string]any{"index": 0, "message": msg, "finish_reason": finishReason(m["stop_reason"])}},
		"usage":              map[string]any{"prompt_tokens": in, "completion_tokens": out, "total_tokens": in + out},
		"system_fingerprint": nil}
}

// sseData reads the data payloads of an event stream, one per event.
type sseData struct {
	r *bufio.Reader
}

func (s *sseData) next() (string, error) {
	var data []string
	for {
		line, err := s.r.ReadString('\n')
		if err != nil && (err != io.EOF || line == "") {
			if len(data) > 0 && err == io.EOF {
				return strings.Join(data, "\n"), nil
			}
			return "", err
		}
		line = strings.TrimRight(line, "\r\n")
		if line == "" {
			if len(data) > 0 {
				return strings.Join(data, "\n"), nil
			}
			if err == io.EOF {
				return "", io.EOF
			}
			continue
		}
		if rest, ok := strings.CutPrefix(line, "data:"); ok {
			data = append(data, strings.TrimPrefix(rest, " "))
		}
		if err == io.EOF {
			if len(data) > 0 {
				return strings.Join(data, "\n"), nil
			}
			return "", io.EOF
		}
	}
}

// stream translates an event stream, emitting each chunk as soon as it is
// made: nothing is buffered but a possible partial placeholder (and, with
// output redaction, the sentence being written).
func (t *translator) stream(body io.Reader, emit func(any) error) error {
	t.created = time.Now().Unix()
	src := &sseData{r: bufio.NewReaderSize(body, 64<<10)}
	if t.style == StyleAnthropic {
		return t.anthropicStream(src, emit)
	}
	sawDone := false
	for {
		data, err := src.next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
		if data == "[DONE]" {
			sawDone = true
			break
		}
		var chunk map[string]any
		dec := json.NewDecoder(strings.NewReader(data))
		dec.UseNumber()
		if err := dec.Decode(&chunk); err != nil {
			return &errs.Error{Kind: errs.Upstream, Code: "upstream_malformed", Msg: "the upstream's stream carried an event that is not JSON"}
		}
		if e := asMap(chunk["error"]); e != nil {
			msg, _ := e["message"].(string)
			return &errs.Error{Kind: errs.Upstream, Code: "upstream_error", Msg: "the upstream failed mid-stream: " + msg}
		}
		if id, ok := chunk["id"].(string); ok && t.id == "" {
			t.id = id
		}
		if mdl, ok := chunk["model"].(string); ok && mdl != "" {
			t.upModel = mdl
		}
		var finishing []map[string]any
		for _, c := range asSlice(chunk["choices"]) {
			cm := asMap(c)
			idx := jsonInt(cm["index"])
			delta := asMap(cm["delta"])
			if delta != nil {
				if s, ok := delta["content"].(string); ok {
					out, err := t.pipe(idx).push(s)
					if err != nil {
						return err
					}
					delta["content"] = out
				}
				for _, call := range asSlice(delta["tool_calls"]) {
					callm := asMap(call)
					fn := asMap(callm["function"])
					if args, ok := fn["arguments"].(string); ok {
						fn["arguments"] = t.argPipe(idx, jsonInt(callm["index"])).Push(args)
					}
				}
			}
			if cm["finish_reason"] != nil {
				finishing = append(finishing, cm)
			}
		}
		// A finishing choice's text goes out, then what its pipes held
		// back, then its finish_reason.
		reasons := make([]any, len(finishing))
		for i, cm := range finishing {
			reasons[i], cm["finish_reason"] = cm["finish_reason"], nil
		}
		if err := emit(chunk); err != nil {
			return err
		}
		for i, cm := range finishing {
			idx := jsonInt(cm["index"])
			if err := t.flushChoice(idx, emit); err != nil {
				return err
			}
			if err := emit(t.chunk(idx, map[string]any{}, reasons[i])); err != nil {
				return err
			}
		}
	}
	_ = sawDone
	for idx := range t.content {
		if err := t.flushChoice(idx, emit); err != nil {
			return err
		}
	}
	return nil
}

func jsonInt(v any) int {
	switch n := v.(type) {
	case json.Number:
		i, _ := n.Int64()
		return int(i)
	case float64:
		return int(n)
	case int:
		return n
	}
	return 0
}

// flushChoice emits what a choice's pipes still hold, as one chunk.
func (t *translator) flushChoice(idx int, emit func(any) error) error {
	delta := map[string]any{}
	if p, ok := t.content[idx]; ok {
		s, err := p.flush()
		if err != nil {
			return err
		}
		delete(t.content, idx)
		if s != "" {
			delta["content"] = s
		}
	}
	var calls []any
	for k, r := range t.args {
		if k[0] != idx {
			continue
		}
		if s := r.Flush(); s != "" {
			calls = append(calls, map[string]any{"index": k[1], "function": map[string]any{"arguments": s}})
		}
		delete(t.args, k)
	}
	if len(calls) > 0 {
		delta["tool_calls"] = calls
	}
	if len(delta) == 0 {
		return nil
	}
	return emit(t.chunk(idx, delta, nil))
}

func (t *translator) chunk(idx int, delta map[string]any, finish any) map[string]any {
	return map[string]any{"id": t.id, "object": "chat.completion.chunk", "created": t.created, "model": t.modelName(),
		"choices": []any{map[string]any{"index": idx, "delta": delta, "finish_reason": finish}}}
}

// anthropicStream turns Anthropic's message events into chunks.
func (t *translator) anthropicStream(src *sseData, emit func(any) error) error {
	t.toolIndex = map[int]int{}
	var inTokens, outTokens int64
	for {
		data, err := src.next()
		if err == io.EOF {
			return &errs.Error{Kind: errs.Upstream, Code: "upstream_truncated", Msg: "the upstream's stream ended before message_stop"}
		}
		if err != nil {
			return err
		}
		var ev map[string]any
		dec := json.NewDecoder(strings.NewReader(data))
		dec.UseNumber()
		if err := dec.Decode(&ev); err != nil {
			return &errs.Error{Kind: errs.Upstream, Code: "upstream_malformed", Msg: "the upstream's stream carried an event that is not JSON"}
		}
		switch ev["type"] {
		case "message_start":
			msg := asMap(ev["message"])
			t.id, _ = msg["id"].(string)
			t.upModel, _ = msg["model"].(string)
			if n, ok := asMap(msg["usage"])["input_tokens"].(json.Number); ok {
				inTokens, _ = n.Int64()
			}
			if err := emit(t.chunk(0, map[string]any{"role": "assistant", "content": ""}, nil)); err != nil {
				return err
			}
		case "content_block_start":
			block := asMap(ev["content_block"])
			bi := jsonInt(ev["index"])
			if block["type"] == "tool_use" {
				ti := len(t.toolIndex)
				t.toolIndex[bi] = ti
				call := map[string]any{"index": ti, "id": block["id"], "type": "function", "function": map[string]any{"name": block["name"], "arguments": ""}}
				if err := emit(t.chunk(0, map[string]any{"tool_calls": []any{call}}, nil)); err != nil {
					return err
				}
			}
		case "content_block_delta":
			d := asMap(ev["delta"])
			bi := jsonInt(ev["index"])
			switch d["type"] {
			case "text_delta":
				s, _ := d["text"].(string)
				out, err := t.pipe(0).push(s)
				if err != nil {
					return err
				}
				if out != "" {
					if err := emit(t.chunk(0, map[string]any{"content": out}, nil)); err != nil {
						return err
					}
				}
			case "input_json_delta":
				s, _ := d["partial_json"].(string)
				ti := t.toolIndex[bi]
				if out := t.argPipe(0, ti).Push(s); out != "" {
					call := map[string]any{"index": ti, "function": map[string]any{"arguments": out}}
					if err := emit(t.chunk(0, map[string]any{"tool_calls": []any{call}}, nil)); err != nil {
						return err
					}
				}
			}
		case "message_delta":
			if n, ok := asMap(ev["usage"])["output_tokens"].(json.Number); ok {
				outTokens, _ = n.Int64()
			}
			if err := t.flushChoice(0, emit); err != nil {
				return err
			}
			c := t.chunk(0, map[string]any{}, finishReason(asMap(ev["delta"])["stop_reason"]))
			c["usage"] = map[string]any{"prompt_tokens": inTokens, "completion_tokens": outTokens, "total_tokens": inTokens + outTokens}
			if err := emit(c); err != nil {
				return err
			}
		case "message_stop":
			return t.flushChoice(0, emit)
		case "error":
			e := asMap(ev["error"])
			msg, _ := e["message"].(string)
			return &errs.Error{Kind: errs.Upstream, Code: "upstream_error", Msg: "the upstream failed mid-stream: " + msg}
		}
	}
}
