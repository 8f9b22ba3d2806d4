package models

import (
	"context"
	"fmt"
	"strings"
	"time"
)

// Local is the built-in deterministic model the embedded stack uses: it
// answers with its prompt, token by token (cl100k_base tokens, counted for
// real), up to maxTokens, and streams each token as it goes. It is named as
// what it is — an echo — so nobody mistakes it for a language model; what
// it proves is the plumbing: templating, streaming, usage, pricing.
type Local struct{}

// Generate echoes r.Prompt.
func (Local) Generate(ctx context.Context, _ string, m Model, r Request, onDelta DeltaFunc) (Response, error) {
	promptTokens := CountTokens(r.System) + CountTokens(r.Prompt)
	if promptTokens > m.ContextTokens {
		return Response{}, &RequestError{Msg: fmt.Sprintf("prompt has %d tokens; %s accepts at most %d", promptTokens, m.ID, m.ContextTokens)}
	}
	toks := splitTokens(r.Prompt)
	if len(toks) > r.MaxTokens {
		toks = toks[:r.MaxTokens]
	}
	var out strings.Builder
	for _, t := range toks {
		if m.TokenDelay > 0 {
			select {
			case <-ctx.Done():
				return Response{}, ctx.Err()
			case <-time.After(m.TokenDelay):
			}
		} else if err := ctx.Err(); err != nil {
			return Response{}, err
		}
		if err := onDelta(t); err != nil {
			return Response{}, err
		}
		out.WriteString(t)
	}
	return Response{Text: out.String(), Usage: Usage{PromptTokens: promptTokens, CompletionTokens: len(toks)}}, nil
}
