package models

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"conduit/internal/config"

	"conduit/internal/telemetry"
)

// OpenAI talks to an OpenAI-compatible chat-completions API (OpenAI, vLLM,
// Ollama, LiteLLM, …), always streaming so callers see tokens as they come.
type OpenAI struct {
	baseURL string
	apiKey  string
	http    *http.Client
}

// NewOpenAI builds the provider from configuration.
func NewOpenAI(c config.OpenAI) *OpenAI {
	return &OpenAI{baseURL: strings.TrimRight(c.BaseURL, "/"), apiKey: c.APIKey, http: &http.Client{Timeout: c.Timeout, Transport: telemetry.Transport(nil)}}
}

// ProviderError is a failed call the provider may answer differently next
// time (5xx, 429, network); activities retry these.
type ProviderError struct {
	Status int
	Msg    string
}

func (e *ProviderError) Error() string {
	if e.Status == 0 {
		return "model provider unreachable: " + e.Msg
	}
	return fmt.Sprintf("model provider answered %d: %s", e.Status, e.Msg)
}

type chatMessage struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

type chatRequest struct {
	Model         string         `json:"model"`
	Messages      []chatMessage  `json:"messages"`
	MaxTokens     int            `json:"max_tokens,omitempty"`
	Temperature   float64        `json:"temperature"`
	Stream        bool           `json:"stream"`
	StreamOptions map[string]any `json:"stream_options,omitempty"`
}

type chatChunk struct {
	Choices []struct {
		Delta struct {
			Content string `json:"content"`
		} `json:"delta"`
	} `json:"choices"`
	Usage *struct {
		PromptTokens     int `json:"prompt_tokens"`
		CompletionTokens int `json:"completion_tokens"`
	} `json:"usage"`
}

// Generate streams one chat completion. Usage comes from the provider's
// final chunk; providers that send none are counted with our tokenizer.
func (o *OpenAI) Generate(ctx context.Context, upstream string, m Model, r Request, onDelta DeltaFunc) (Response, error) {
	msgs := []chatMessage{}
	if r.System != "" {
		msgs = append(msgs, chatMessage{Role: "system", Content: r.System})
	}
	msgs = append(msgs, chatMessage{Role: "user", Content: r.Prompt})
	body, err := json.Marshal(chatRequest{
		Model: upstream, Messages: msgs, MaxTokens: r.MaxTokens, Temperature: r.Temperature,
		Stream: true, StreamOptions: map[string]any{"include_usage": true},
	})
	if err != nil {
		return Response{}, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, o.baseURL+"/chat/completions", bytes.NewReader(body))
	if err != nil {
		return Response{}, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	if o.apiKey != "" {
		req.Header.Set("Authorization", "Bearer "+o.apiKey)
	}
	resp, err := o.http.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return Response{}, ctx.Err()
		}
		return Response{}, &ProviderError{Msg: err.Error()}
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		msg := providerMessage(resp.Body)
		if resp.StatusCode >= 500 || resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode == http.StatusRequestTimeout {
			return Response{}, &ProviderError{Status: resp.StatusCode, Msg: msg}
		}
		return Response{}, &RequestError{Msg: fmt.Sprintf("model provider refused the request (%d): %s", resp.StatusCode, msg)}
	}

	var out strings.Builder
	var usage *Usage
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64*1024), 4*1024*1024)
	done := false
	for sc.Scan() {
		line := sc.Text()
		data, ok := strings.CutPrefix(line, "data:")
		if !ok {
			continue // comments, event names, blank separators
		}
		data = strings.TrimSpace(data)
		if data == "[DONE]" {
			done = true
			break
		}
		var ch chatChunk
		if err := json.Unmarshal([]byte(data), &ch); err != nil {
			return Response{}, &ProviderError{Status: resp.StatusCode, Msg: "malformed stream chunk: " + err.Error()}
		}
		if len(ch.Choices) > 0 && ch.Choices[0].Delta.Content != "" {
			t := ch.Choices[0].Delta.Content
			if err := onDelta(t); err != nil {
				return Response{}, err
			}
			out.WriteString(t)
		}
		if ch.Usage != nil {
			usage = &Usage{PromptTokens: ch.Usage.PromptTokens, CompletionTokens: ch.Usage.CompletionTokens}
		}
	}
	if err := sc.Err(); err != nil {
		if ctx.Err() != nil {
			return Response{}, ctx.Err()
		}
		return Response{}, &ProviderError{Status: resp.StatusCode, Msg: "stream broke: " + err.Error()}
	}
	if !done {
		return Response{}, &ProviderError{Status: resp.StatusCode, Msg: "stream ended without [DONE]"}
	}
	if usage == nil {
		usage = &Usage{PromptTokens: CountTokens(r.System) + CountTokens(r.Prompt), CompletionTokens: CountTokens(out.String())}
	}
	return Response{Text: out.String(), Usage: *usage}, nil
}

// providerMessage extracts {"error":{"message"}} or the start of the body.
func providerMessage(r io.Reader) string {
	b, _ := io.ReadAll(io.LimitReader(r, 4096))
	var e struct {
		Error struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal(b, &e) == nil && e.Error.Message != "" {
		return e.Error.Message
	}
	s := strings.TrimSpace(string(b))
	if s == "" {
		return "empty body"
	}
	return s
}

// IsRetryable says whether err may succeed on another attempt.
func IsRetryable(err error) bool {
	var re *RequestError
	return !errors.As(err, &re) && !errors.Is(err, ErrUnknownModel)
}
