package frontend_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"conduit/internal/money"
	"conduit/workflows"
)

// chatPipeline publishes question → local model → answer and returns the
// base URL an OpenAI client uses for it.
func chatPipeline(t *testing.T, key, model string) (id, baseURL string) {
	t.Helper()
	id = createPipeline(t, key, echoGraph("{{question}}", model))
	publish(t, key, id)
	return id, env.URL + "/api/pipelines/" + id + "/"
}

func TestChatWithTheOpenAIClient(t *testing.T) {
	_, key := env.NewAccount(t)
	id, base := chatPipeline(t, key, "local-echo")
	client := openai.NewClient(option.WithBaseURL(base), option.WithAPIKey(key), option.WithMaxRetries(0))

	var raw *http.Response
	resp, err := client.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{
		Model: "whatever-you-like",
		Messages: []openai.ChatCompletionMessageParamUnion{
			openai.SystemMessage("ignored by this pipeline"),
			openai.UserMessage("first question"),
			openai.AssistantMessage("first answer"),
			openai.UserMessage("Hello there, pipeline"),
		},
	}, option.WithResponseInto(&raw))
	if err != nil {
		t.Fatal(err)
	}
	if resp.Object != "chat.completion" || len(resp.Choices) != 1 || resp.Choices[0].Message.Content != "Hello there, pipeline" ||
		resp.Choices[0].FinishReason != "stop" || string(resp.Choices[0].Message.Role) != "assistant" || resp.Model != "whatever-you-like" {
		t.Fatalf("%+v", resp)
	}
	if resp.Usage.PromptTokens != 4 || resp.Usage.CompletionTokens != 4 || resp.Usage.TotalTokens != 8 || resp.Created == 0 || resp.ID == "" {
		t.Fatalf("usage %+v", resp.Usage)
	}
	runID := raw.Header.Get("x-svc-run-id")
	if raw.Header.Get("x-svc-pipeline-version") != "1" || runID == "" {
		t.Fatalf("headers %v", raw.Header)
	}
	// The same run is recorded: the invoke poll and Temporal both know it.
	run := wantStatus(t, do(t, "GET", "/api/pipelines/"+id+"/invoke?runId="+url.QueryEscape(runID), key, nil), http.StatusOK)
	if run["status"] != "success" || run["outputs"].(map[string]any)["answer"] != "Hello there, pipeline" {
		t.Fatalf("%v", run)
	}
	if _, err := env.Platform.Temporal.DescribeWorkflowExecution(context.Background(), workflows.PipelineRunWorkflowID(runID), ""); err != nil {
		t.Fatalf("run not in Temporal: %v", err)
	}
}

func TestChatStreamingWithTheOpenAIClient(t *testing.T) {
	_, key := env.NewAccount(t)
	_, base := chatPipeline(t, key, "local-echo")
	client := openai.NewClient(option.WithBaseURL(base), option.WithAPIKey(key), option.WithMaxRetries(0))
	stream := client.Chat.Completions.NewStreaming(context.Background(), openai.ChatCompletionNewParams{
		Model:    "m",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Stream me, token by token.")},
	})
	acc := openai.ChatCompletionAccumulator{}
	chunks := 0
	for stream.Next() {
		acc.AddChunk(stream.Current())
		chunks++
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	if acc.Choices[0].Message.Content != "Stream me, token by token." || acc.Choices[0].FinishReason != "stop" {
		t.Fatalf("%+v", acc.Choices)
	}
	if acc.Usage.CompletionTokens != 7 || acc.Usage.TotalTokens != 14 || chunks != 1+7+1 {
		t.Fatalf("usage %+v over %d chunks", acc.Usage, chunks)
	}
}

// The exact bytes of a stream: role chunk, one chunk per token, the stop
// chunk with usage, [DONE].
func TestChatStreamExactBytes(t *testing.T) {
	_, key := env.NewAccount(t)
	_, base := chatPipeline(t, key, "local-echo")
	req, _ := http.NewRequest("POST", base+"chat/completions", strings.NewReader(`{"model":"m","stream":true,"messages":[{"role":"user","content":"Hi there"}]}`))
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" || resp.Header.Get("X-Accel-Buffering") != "no" || resp.Header.Get("Cache-Control") != "no-cache" {
		t.Fatalf("%d %v", resp.StatusCode, resp.Header)
	}
	var first struct {
		ID      string `json:"id"`
		Created int64  `json:"created"`
	}
	line, _, _ := strings.Cut(string(body), "\n")
	if err := json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &first); err != nil {
		t.Fatalf("first event %q: %v", line, err)
	}
	head := fmt.Sprintf(`"created":%d,"id":%q,"model":"m","object":"chat.completion.chunk"`, first.Created, first.ID)
	want := `data: {"choices":[{"delta":{"content":"","role":"assistant"},"finish_reason":null,"index":0}],` + head + "}\n\n" +
		`data: {"choices":[{"delta":{"content":"Hi"},"finish_reason":null,"index":0}],` + head + "}\n\n" +
		`data: {"choices":[{"delta":{"content":" there"},"finish_reason":null,"index":0}],` + head + "}\n\n" +
		`data: {"choices":[{"delta":{},"finish_reason":"stop","index":0}],` + head + `,"usage":{"completion_tokens":2,"prompt_tokens":2,"total_tokens":4}}` + "\n\n" +
		"data: [DONE]\n\n"
	if string(body) != want {
		t.Fatalf("stream bytes:\n%s\nwant:\n%s", body, want)
	}
}

// With a slow model the first token reaches the client long before the run
// ends: tokens are relayed as produced, not buffered.
func TestChatStreamIsIncremental(t *testing.T) {
	_, key := env.NewAccount(t)
	_, base := chatPipeline(t, key, "local-echo-slow")
	prompt := strings.Repeat("tick ", 100) // 100 tokens × 25 ms
	body, _ := json.Marshal(map[string]any{"stream": true, "messages": []map[string]string{{"role": "user", "content": prompt}}})
	req, _ := http.NewRequest("POST", base+"chat/completions", strings.NewReader(string(body)))
	req.Header.Set("Authorization", "Bearer "+key)
	start := time.Now()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var firstContent, end time.Duration
	var text strings.Builder
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		if data == "[DONE]" {
			end = time.Since(start)
			break
		}
		var ch struct {
			Choices []struct {
				Delta struct{ Content string } `json:"delta"`
			} `json:"choices"`
		}
		_ = json.Unmarshal([]byte(data), &ch)
		if len(ch.Choices) > 0 && ch.Choices[0].Delta.Content != "" {
			if firstContent == 0 {
				firstContent = time.Since(start)
			}
			text.WriteString(ch.Choices[0].Delta.Content)
		}
	}
	if text.String() != prompt {
		t.Fatalf("streamed %q", text.String())
	}
	if end < 2*time.Second || firstContent > end/2 {
		t.Fatalf("first token after %s, stream ended after %s: not incremental", firstContent, end)
	}
	t.Logf("first token %s, done %s", firstContent, end)
}

// A client that hangs up mid-stream does not stop the run: it completes,
// is recorded and charged.
func TestChatClientDisconnectStillRecordsTheRun(t *testing.T) {
	acct, key := env.NewAccount(t)
	id, base := chatPipeline(t, key, "local-echo-slow")
	ctx, cancel := context.WithCancel(context.Background())
	body := `{"stream":true,"messages":[{"role":"user","content":"` + strings.Repeat("bye ", 60) + `"}]}`
	req, _ := http.NewRequestWithContext(ctx, "POST", base+"chat/completions", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	runID := resp.Header.Get("x-svc-run-id")
	sc := bufio.NewScanner(resp.Body)
	sc.Scan() // the role chunk
	cancel()
	resp.Body.Close()

	run := waitRun(t, key, env.URL+"/api/pipelines/"+id+"/invoke?runId="+url.QueryEscape(runID))
	if run["status"] != "success" || run["outputs"].(map[string]any)["answer"] != strings.Repeat("bye ", 60) {
		t.Fatalf("%v", run)
	}
	if bal, _ := env.Platform.Store.Balance(context.Background(), acct); bal >= 5*money.USD {
		t.Fatalf("the run was not charged: %s", bal)
	}
}

func TestChatErrorsAreOpenAIShaped(t *testing.T) {
	acct, key := env.NewAccount(t)
	_, other := env.NewAccount(t)
	id, _ := chatPipeline(t, key, "local-echo")
	unpublished := createPipeline(t, key, echoGraph("{{question}}", "local-echo"))
	noOutput := createPipeline(t, key, map[string]any{"nodes": []map[string]any{{"id": "q", "type": "input", "key": "q"}}})
	publish(t, key, noOutput)
	twoInputs := createPipeline(t, key, map[string]any{
		"nodes": []map[string]any{{"id": "q", "type": "input", "key": "q"}, {"id": "ctx", "type": "input", "key": "ctx"}, {"id": "o", "type": "output", "key": "o", "from": "q"}},
		"edges": []map[string]any{{"from": "q", "to": "o"}},
	})
	publish(t, key, twoInputs)
	user := []map[string]string{{"role": "user", "content": "hi"}}
	path := func(id string) string { return "/api/pipelines/" + id + "/chat/completions" }

	cases := []struct {
		name, path, key string
		body            any
		status          int
		typ, want       string
	}{
		{"no messages", path(id), key, map[string]any{}, 400, "invalid_request_error", "messages is required"},
		{"empty messages", path(id), key, map[string]any{"messages": []any{}}, 400, "invalid_request_error", "messages must not be empty"},
		{"no user message", path(id), key, map[string]any{"messages": []map[string]string{{"role": "system", "content": "x"}}}, 400, "invalid_request_error", "no user message"},
		{"content not a string", path(id), key, map[string]any{"messages": []map[string]any{{"role": "user", "content": 5}}}, 400, "invalid_request_error", "messages[0].content must be a string"},
		{"bad role", path(id), key, map[string]any{"messages": []map[string]any{{"role": "robot", "content": "x"}}}, 400, "invalid_request_error", `role "robot"`},
		{"not json", path(id), key, "{", 400, "invalid_request_error", "not valid JSON"},
		{"no key", path(id), "", map[string]any{"messages": user}, 401, "authentication_error", "missing API key"},
		{"other account", path(id), other, map[string]any{"messages": user}, 403, "permission_error", "does not own"},
		{"unknown pipeline", path("pl_nope"), key, map[string]any{"messages": user}, 404, "invalid_request_error", "not found"},
		{"unpublished", path(unpublished), key, map[string]any{"messages": user}, 409, "invalid_request_error", "is not published"},
		{"no output node", path(noOutput), key, map[string]any{"messages": user}, 422, "invalid_request_error", "no entry (input) node or no output node"},
		{"extra required input", path(twoInputs), key, map[string]any{"messages": user}, 422, "invalid_request_error", "also requires inputs ctx"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := do(t, "POST", c.path, c.key, c.body)
			body := wantStatus(t, r, c.status)
			e, ok := body["error"].(map[string]any)
			if !ok || e["type"] != c.typ || !strings.Contains(e["message"].(string), c.want) {
				t.Fatalf("want {error:{message~%q, type:%s}}, got %s", c.want, c.typ, r.Body)
			}
			if r.Header.Get("x-svc-run-id") != "" {
				t.Fatal("a refused request reported a run")
			}
		})
	}

	// 502: the run started and a node failed; the node's error is included.
	r := do(t, "POST", path(id), key, map[string]any{"messages": []map[string]string{{"role": "user", "content": strings.Repeat("word ", 9000)}}})
	body := wantStatus(t, r, http.StatusBadGateway)
	if e := body["error"].(map[string]any); e["type"] != "upstream_error" || !strings.Contains(e["message"].(string), "prompt has 9001 tokens") || r.Header.Get("x-svc-run-id") == "" {
		t.Fatalf("%s", r.Body)
	}

	// Streamed, a node that fails before the first token is the same 502:
	// nothing was streamed yet (docs/chat.md).
	r = do(t, "POST", path(id), key, map[string]any{"stream": true, "messages": []map[string]string{{"role": "user", "content": strings.Repeat("word ", 9000)}}})
	body = wantStatus(t, r, http.StatusBadGateway)
	if e := body["error"].(map[string]any); e["type"] != "upstream_error" || !strings.Contains(e["message"].(string), "prompt has 9001 tokens") || r.Header.Get("x-svc-run-id") == "" {
		t.Fatalf("%s", r.Body)
	}

	// 402 carries the code, balance and top-up URL inside the error object.
	if _, err := env.Platform.Store.Hold(context.Background(), acct, 5*money.USD-6, "drain/"+acct); err != nil {
		t.Fatal(err)
	}
	r = do(t, "POST", path(id), key, map[string]any{"messages": user})
	body = wantStatus(t, r, http.StatusPaymentRequired)
	e := body["error"].(map[string]any)
	if e["code"] != "INSUFFICIENT_CREDITS" || e["type"] != "insufficient_quota" || e["balanceUsd"].(float64) != 0.000006 || e["topUpUrl"] != env.URL+"/dashboard/credits" {
		t.Fatalf("%s", r.Body)
	}
}
