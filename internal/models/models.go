// Package models puts every text-generation model behind one interface: a
// catalog maps a model id to its provider (the built-in local model or an
// OpenAI-compatible HTTP API) and its price. Activities call it; workflows
// never do.
package models

import (
	"context"
	"errors"
	"fmt"
	"time"

	"conduit/internal/config"
	"conduit/internal/money"
)

// Request is one generation.
type Request struct {
	Model       string
	System      string
	Prompt      string
	MaxTokens   int
	Temperature float64
}

// Usage counts tokens the way the provider (or our tokenizer) did.
type Usage struct {
	PromptTokens     int
	CompletionTokens int
}

// Response is a finished generation.
type Response struct {
	Text  string
	Usage Usage
}

// DeltaFunc receives generated text as it is produced; an error stops the
// generation.
type DeltaFunc func(text string) error

// Provider generates text with one backend. upstream is the backend's own
// model name.
type Provider interface {
	Generate(ctx context.Context, upstream string, m Model, r Request, onDelta DeltaFunc) (Response, error)
}

// Model is a catalog entry.
type Model struct {
	ID              string
	Provider        string
	Upstream        string
	PromptPer1K     money.Micros
	CompletionPer1K money.Micros
	ContextTokens   int
	TokenDelay      time.Duration
}

// Catalog knows every model a pipeline may use.
type Catalog struct {
	models    map[string]Model
	order     []string
	providers map[string]Provider
}

// DefaultMaxTokens is used when a model node sets no maxTokens.
const DefaultMaxTokens = 512

// NewCatalog builds the catalog from configuration (already validated).
func NewCatalog(cfg config.Models) (*Catalog, error) {
	c := &Catalog{models: map[string]Model{}, providers: map[string]Provider{"local": Local{}}}
	if cfg.OpenAI.BaseURL != "" {
		c.providers["openai"] = NewOpenAI(cfg.OpenAI)
	}
	for _, e := range cfg.Catalog {
		pp, err := money.ParseUSD(e.PromptPer1KUSD)
		if err != nil {
			return nil, fmt.Errorf("model %s: %w", e.ID, err)
		}
		cp, err := money.ParseUSD(e.CompletionPer1KUSD)
		if err != nil {
			return nil, fmt.Errorf("model %s: %w", e.ID, err)
		}
		up := e.Upstream
		if up == "" {
			up = e.ID
		}
		if _, ok := c.providers[e.Provider]; !ok {
			return nil, fmt.Errorf("model %s: provider %q is not configured", e.ID, e.Provider)
		}
		c.models[e.ID] = Model{ID: e.ID, Provider: e.Provider, Upstream: up, PromptPer1K: pp, CompletionPer1K: cp, ContextTokens: e.ContextTokens, TokenDelay: e.TokenDelay}
		c.order = append(c.order, e.ID)
	}
	return c, nil
}

// Known reports whether id is in the catalog.
func (c *Catalog) Known(id string) bool { _, ok := c.models[id]; return ok }

// Model returns the entry for id.
func (c *Catalog) Model(id string) (Model, bool) { m, ok := c.models[id]; return m, ok }

// IDs lists the catalog's model ids in configuration order.
func (c *Catalog) IDs() []string { return append([]string(nil), c.order...) }

// Cost prices usage, rounding each part up to the next micro-USD.
func (m Model) Cost(u Usage) money.Micros {
	return perThousand(m.PromptPer1K, u.PromptTokens) + perThousand(m.CompletionPer1K, u.CompletionTokens)
}

// MaxCost is the most one call can cost: a full context window of prompt
// and maxTokens of completion. Runs hold this much before they start.
func (m Model) MaxCost(maxTokens int) money.Micros {
	if maxTokens <= 0 {
		maxTokens = DefaultMaxTokens
	}
	return m.Cost(Usage{PromptTokens: m.ContextTokens, CompletionTokens: maxTokens})
}

// InlineBudget is the longest a model call may take at worst and still be
// run inline (a local activity inside the workflow task).
const InlineBudget = time.Second

// Inline says whether a call of up to maxTokens is short enough to run
// inline: an in-process model whose worst case fits InlineBudget. Calls
// to providers over the network never are: they are activities with
// heartbeats and their own retries.
func (m Model) Inline(maxTokens int) bool {
	if maxTokens <= 0 {
		maxTokens = DefaultMaxTokens
	}
	return m.Provider == "local" && m.TokenDelay*time.Duration(maxTokens) <= InlineBudget
}

func perThousand(price money.Micros, tokens int) money.Micros {
	return (price*money.Micros(tokens) + 999) / 1000
}

// ErrUnknownModel: the id is not in the catalog.
var ErrUnknownModel = errors.New("unknown model")

// RequestError is a request the model refused and that retrying cannot fix
// (prompt too long, bad parameters, 4xx from the provider).
type RequestError struct{ Msg string }

func (e *RequestError) Error() string { return e.Msg }

// Generate runs r on its model's provider.
func (c *Catalog) Generate(ctx context.Context, r Request, onDelta DeltaFunc) (Response, error) {
	m, ok := c.models[r.Model]
	if !ok {
		return Response{}, fmt.Errorf("%w %q", ErrUnknownModel, r.Model)
	}
	if r.MaxTokens <= 0 {
		r.MaxTokens = DefaultMaxTokens
	}
	if onDelta == nil {
		onDelta = func(string) error { return nil }
	}
	return c.providers[m.Provider].Generate(ctx, m.Upstream, m, r, onDelta)
}
