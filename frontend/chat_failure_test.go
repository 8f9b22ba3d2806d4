package frontend_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/ssestream"
)

// A streamed chat whose node fails before the first token answers 502 in
// OpenAI's error shape: the official client reports an API error with
// the status, not a 200 stream with an error in it.
func TestStreamedChatFailingBeforeTheFirstTokenIs502(t *testing.T) {
	_, key := env.NewAccount(t)
	_, base := chatPipeline(t, key, "local-echo")
	client := openai.NewClient(option.WithBaseURL(base), option.WithAPIKey(key), option.WithMaxRetries(0))
	stream := client.Chat.Completions.NewStreaming(context.Background(), openai.ChatCompletionNewParams{
		Model:    "m",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage(strings.Repeat("word ", 9000))},
	})
	if stream.Next() {
		t.Fatalf("a chunk arrived: %+v", stream.Current())
	}
	var apiErr *openai.Error
	if err := stream.Err(); !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusBadGateway ||
		apiErr.Type != "upstream_error" || !strings.Contains(apiErr.Message, "prompt has 9001 tokens") {
		t.Fatalf("want a 502 API error naming the node's failure, got %T %v", err, err)
	}
}

// A node that fails after tokens were streamed ends the stream with an
// error event, which the official client raises as an error after the
// chunks it already delivered; [DONE] (success) is not sent.
func TestStreamedChatFailingMidStreamEndsWithAnErrorEvent(t *testing.T) {
	// A deployment whose model calls time out after one second, once: the
	// slow echo model (25 ms a token) gets about 40 tokens out first.
	cfg := *env.Config
	cfg.Runs.ModelTimeout, cfg.Runs.ModelAttempts = time.Second, 1
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	deps := env.Platform.FrontendDeps()
	deps.Config = &cfg
	deps.Deltas = env.Platform.Store.NewDeltaHub(ctx, env.Platform.Log)
	srv := serve(t, deps)

	_, key := env.NewAccount(t)
	id, _ := chatPipeline(t, key, "local-echo-slow")
	client := openai.NewClient(option.WithBaseURL(srv+"/api/pipelines/"+id+"/"), option.WithAPIKey(key), option.WithMaxRetries(0))
	var raw *http.Response
	stream := client.Chat.Completions.NewStreaming(ctx, openai.ChatCompletionNewParams{
		Model:    "m",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage(strings.Repeat("tick ", 200))},
	}, option.WithResponseInto(&raw))
	var text strings.Builder
	chunks := 0
	for stream.Next() {
		chunks++
		if ch := stream.Current(); len(ch.Choices) > 0 {
			text.WriteString(ch.Choices[0].Delta.Content)
		}
	}
	var streamErr *ssestream.StreamError
	if err := stream.Err(); !errors.As(err, &streamErr) || !strings.Contains(err.Error(), "the pipeline ran but a node failed") {
		t.Fatalf("want the stream's error event raised, got %T %v", err, err)
	}
	if raw.StatusCode != http.StatusOK || chunks < 2 || !strings.HasPrefix(strings.Repeat("tick ", 200), text.String()) || text.Len() == 0 {
		t.Fatalf("status %d, %d chunks, text %q: the failure was not mid-stream", raw.StatusCode, chunks, text.String())
	}
	if data := string(streamErr.Event.Data); !strings.Contains(data, `"type":"upstream_error"`) {
		t.Fatalf("error event %s", data)
	}

	// On the wire: chunks, then the error event last, no [DONE].
	req, _ := http.NewRequest("POST", srv+"/api/pipelines/"+id+"/chat/completions",
		strings.NewReader(`{"stream":true,"messages":[{"role":"user","content":"`+strings.Repeat("tock ", 200)+`"}]}`))
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	events := strings.Split(strings.TrimSuffix(string(b), "\n\n"), "\n\n")
	last := events[len(events)-1]
	if resp.StatusCode != http.StatusOK || len(events) < 3 || !strings.HasPrefix(last, `data: {"error":{"message":"the pipeline ran but a node failed`) ||
		strings.Contains(string(b), "[DONE]") {
		t.Fatalf("%d, last event %q of %d", resp.StatusCode, last, len(events))
	}
}

// The chat route answers other methods in OpenAI's error shape.
func TestChatRouteOtherMethodsAre405OpenAIShaped(t *testing.T) {
	_, key := env.NewAccount(t)
	id, _ := chatPipeline(t, key, "local-echo")
	for _, m := range []string{"GET", "PUT", "PATCH", "DELETE"} {
		r := do(t, m, "/api/pipelines/"+id+"/chat/completions", key, nil)
		body := wantStatus(t, r, http.StatusMethodNotAllowed)
		e, ok := body["error"].(map[string]any)
		if !ok || e["type"] != "invalid_request_error" || !strings.Contains(e["message"].(string), "POST") || r.Header.Get("Allow") != "POST" {
			t.Fatalf("%s: %s %v", m, r.Body, r.Header)
		}
	}
}
