package models

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"conduit/internal/config"
	"conduit/internal/money"
)

func catalog(t *testing.T, openaiURL string) *Catalog {
	t.Helper()
	cfg := config.Models{
		OpenAI: config.OpenAI{BaseURL: openaiURL, APIKey: "sk-test", Timeout: 5 * time.Second},
		Catalog: []config.ModelEntry{
			{ID: "local-echo", Provider: "local", PromptPer1KUSD: "0.0001", CompletionPer1KUSD: "0.0002", ContextTokens: 64},
		},
	}
	if openaiURL != "" {
		cfg.Catalog = append(cfg.Catalog, config.ModelEntry{ID: "gpt-small", Provider: "openai", Upstream: "gpt-4o-mini", PromptPer1KUSD: "0.15", CompletionPer1KUSD: "0.6", ContextTokens: 128000})
	}
	c, err := NewCatalog(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestLocalEchoStreamsAndCountsTokens(t *testing.T) {
	c := catalog(t, "")
	var deltas []string
	resp, err := c.Generate(context.Background(), Request{Model: "local-echo", Prompt: "Hello, streaming world!", MaxTokens: 100}, func(s string) error {
		deltas = append(deltas, s)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if resp.Text != "Hello, streaming world!" || strings.Join(deltas, "") != resp.Text {
		t.Fatalf("text %q deltas %q", resp.Text, deltas)
	}
	// cl100k_base: "Hello", ",", " streaming", " world", "!"
	if len(deltas) != 5 || resp.Usage.CompletionTokens != 5 || resp.Usage.PromptTokens != 5 {
		t.Fatalf("tokens: %q usage %+v", deltas, resp.Usage)
	}
	// maxTokens truncates.
	resp, err = c.Generate(context.Background(), Request{Model: "local-echo", Prompt: "Hello, streaming world!", MaxTokens: 2}, nil)
	if err != nil || resp.Text != "Hello," || resp.Usage.CompletionTokens != 2 {
		t.Fatalf("%+v %v", resp, err)
	}
}

func TestLocalRefusesPromptsBeyondItsContext(t *testing.T) {
	c := catalog(t, "")
	_, err := c.Generate(context.Background(), Request{Model: "local-echo", Prompt: strings.Repeat("word ", 100)}, nil)
	var re *RequestError
	if !errors.As(err, &re) || !strings.Contains(err.Error(), "prompt has 101 tokens; local-echo accepts at most 64") || IsRetryable(err) {
		t.Fatalf("%v", err)
	}
	if _, err := c.Generate(context.Background(), Request{Model: "nope"}, nil); !errors.Is(err, ErrUnknownModel) || IsRetryable(err) {
		t.Fatalf("%v", err)
	}
}

func TestCostRoundsUpPerPart(t *testing.T) {
	m := Model{PromptPer1K: 100, CompletionPer1K: 200, ContextTokens: 8192}
	if got := m.Cost(Usage{PromptTokens: 5, CompletionTokens: 5}); got != 1+1 {
		t.Fatalf("tiny usage costs %d micros", got)
	}
	if got := m.Cost(Usage{PromptTokens: 1000, CompletionTokens: 2000}); got != 100+400 {
		t.Fatalf("%d", got)
	}
	if got := m.MaxCost(0); got != m.Cost(Usage{PromptTokens: 8192, CompletionTokens: DefaultMaxTokens}) {
		t.Fatalf("%d", got)
	}
	big := Model{PromptPer1K: 150_000, CompletionPer1K: 600_000}
	if got := big.Cost(Usage{PromptTokens: 1234, CompletionTokens: 567}); got != money.Micros(185_100+340_200) {
		t.Fatalf("%d", got)
	}
}

// fakeOpenAI plays the chat-completions streaming API as OpenAI documents it.
func fakeOpenAI(t *testing.T, withUsage bool) *httptest.Server {
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/chat/completions" || r.Header.Get("Authorization") != "Bearer sk-test" {
			w.WriteHeader(http.StatusUnauthorized)
			fmt.Fprint(w, `{"error":{"message":"Incorrect API key provided","type":"invalid_request_error"}}`)
			return
		}
		var req chatRequest
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil || !req.Stream {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		if req.Model == "overloaded" {
			w.WriteHeader(http.StatusServiceUnavailable)
			fmt.Fprint(w, `{"error":{"message":"The server is overloaded","type":"server_error"}}`)
			return
		}
		if req.MaxTokens > 4096 {
			w.WriteHeader(http.StatusBadRequest)
			fmt.Fprint(w, `{"error":{"message":"max_tokens is too large","type":"invalid_request_error"}}`)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		last := req.Messages[len(req.Messages)-1].Content
		chunks := []string{`{"id":"c1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"role":"assistant","content":""}}]}`}
		for _, word := range strings.Fields("You asked: " + last) {
			b, _ := json.Marshal(word + " ")
			chunks = append(chunks, `{"id":"c1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":`+string(b)+`}}]}`)
		}
		chunks = append(chunks, `{"id":"c1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`)
		if withUsage {
			chunks = append(chunks, `{"id":"c1","object":"chat.completion.chunk","choices":[],"usage":{"prompt_tokens":11,"completion_tokens":7,"total_tokens":18}}`)
		}
		for _, c := range chunks {
			fmt.Fprintf(w, "data: %s\n\n", c)
			w.(http.Flusher).Flush()
		}
		fmt.Fprint(w, "data: [DONE]\n\n")
	}))
}

func TestOpenAIProviderStreamsAndReadsUsage(t *testing.T) {
	srv := fakeOpenAI(t, true)
	defer srv.Close()
	c := catalog(t, srv.URL+"/v1")
	var got strings.Builder
	resp, err := c.Generate(context.Background(), Request{Model: "gpt-small", System: "be brief", Prompt: "two words", MaxTokens: 50}, func(s string) error {
		got.WriteString(s)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if resp.Text != "You asked: two words " || got.String() != resp.Text || resp.Usage != (Usage{11, 7}) {
		t.Fatalf("%+v / %q", resp, got.String())
	}
}

func TestOpenAIProviderWithoutUsageCountsTokens(t *testing.T) {
	srv := fakeOpenAI(t, false)
	defer srv.Close()
	resp, err := catalog(t, srv.URL+"/v1").Generate(context.Background(), Request{Model: "gpt-small", Prompt: "hi"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Usage.PromptTokens != 1 || resp.Usage.CompletionTokens != CountTokens("You asked: hi ") {
		t.Fatalf("%+v", resp.Usage)
	}
}

func TestOpenAIProviderErrors(t *testing.T) {
	srv := fakeOpenAI(t, true)
	defer srv.Close()
	c := catalog(t, srv.URL+"/v1")
	_, err := c.Generate(context.Background(), Request{Model: "gpt-small", Prompt: "x", MaxTokens: 10000}, nil)
	if err == nil || IsRetryable(err) || !strings.Contains(err.Error(), "max_tokens is too large") {
		t.Fatalf("400: %v", err)
	}
	// An overloaded upstream is worth retrying.
	o := NewOpenAI(config.OpenAI{BaseURL: srv.URL + "/v1", APIKey: "sk-test", Timeout: time.Second})
	_, err = o.Generate(context.Background(), "overloaded", Model{ID: "m"}, Request{Prompt: "x", MaxTokens: 5}, func(string) error { return nil })
	var pe *ProviderError
	if !errors.As(err, &pe) || pe.Status != 503 || !IsRetryable(err) || !strings.Contains(err.Error(), "The server is overloaded") {
		t.Fatalf("503: %v", err)
	}
	bad := NewOpenAI(config.OpenAI{BaseURL: srv.URL + "/v1", APIKey: "wrong", Timeout: time.Second})
	_, err = bad.Generate(context.Background(), "gpt-4o-mini", Model{ID: "m"}, Request{Prompt: "x", MaxTokens: 5}, func(string) error { return nil })
	if err == nil || IsRetryable(err) || !strings.Contains(err.Error(), "Incorrect API key") {
		t.Fatalf("401: %v", err)
	}
	srv.Close()
	_, err = o.Generate(context.Background(), "gpt-4o-mini", Model{ID: "m"}, Request{Prompt: "x", MaxTokens: 5}, func(string) error { return nil })
	if !errors.As(err, &pe) || !IsRetryable(err) {
		t.Fatalf("unreachable: %v", err)
	}
}
