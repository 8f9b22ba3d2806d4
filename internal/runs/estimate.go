package runs

import (
	"conduit/internal/errs"
	"conduit/internal/graph"
	"conduit/internal/models"
	"conduit/internal/money"
)

// NodeEstimate is one model node's share of an estimate.
type NodeEstimate struct {
	ID    string `json:"id"`
	Model string `json:"model"`
	// PromptTokens are the real tokens of the node's rendered system and
	// prompt text, with every upstream model's answer taken as empty.
	PromptTokens int          `json:"promptTokens" jsonschema:"tokens of the rendered prompt and system text (upstream model answers counted as empty)"`
	MaxTokens    int          `json:"maxTokens" jsonschema:"the most completion tokens the node may produce"`
	MinUSD       money.Micros `json:"minUsd" jsonschema:"the rendered prompt's tokens only, in USD"`
	MaxUSD       money.Micros `json:"maxUsd" jsonschema:"a full context window plus maxTokens, in USD: what the run holds for this node"`
}

// Estimate is the price range of a run before it starts.
type Estimate struct {
	// MinUSD: what a successful run costs at least, the prompt tokens of
	// every model node with nothing completed, and every generation
	// node's price for the text it renders.
	MinUSD money.Micros `json:"minUsd" jsonschema:"the least a successful run costs: the rendered prompts' tokens, nothing completed, plus every speech, music and video node's price (USD)"`
	// MaxUSD: the hold the run takes, which it is never charged more than.
	MaxUSD money.Micros   `json:"maxUsd" jsonschema:"the most a run can cost, which is also the credit it holds while it runs (USD)"`
	Nodes  []NodeEstimate `json:"nodes" jsonschema:"one entry per model node"`
}

// Estimate prices a run of g on inputs without running it. It renders the
// graph the way a run does, up to the model calls: inputs, templates and
// transforms get their real values, guardrails pass their input on, and a
// model node's answer, unknown before it runs, is taken as empty text
// downstream. Prompt tokens are counted with the models' tokenizer and
// priced from the catalog; failed runs are never charged, so the range is
// that of a successful run.
func (s *Service) Estimate(g *graph.Graph, inputs map[string]string) (Estimate, error) {
	est := Estimate{Nodes: []NodeEstimate{}, MaxUSD: s.HoldFor(g)}
	values := map[string]string{}
	err := g.Walk(func(n *graph.Node) {
		if n.Type == graph.KindGuardrail {
			// Estimated as passing its input on: what it would block or
			// replace depends on answers not known yet.
			values[n.ID] = values[n.Input]
			return
		}
		// A failed template or transform counts as empty text, and so
		// does the answer of a model or the URL of a file, unknown before
		// the run.
		step := n.Evaluate(inputs, values)
		values[n.ID] = step.Value
		switch {
		case step.Generation != nil:
			// A successful run pays its price for the text it renders.
			if p, ok := s.Library.Price(n, step.Generation.Text); ok {
				est.MinUSD += p
			}
		case step.Model != nil:
			m, ok := s.Catalog.Model(n.Model)
			if !ok {
				return
			}
			req := step.Model
			tokens := min(models.CountTokens(req.System)+models.CountTokens(req.Prompt), m.ContextTokens)
			maxTokens := n.MaxTokens
			if maxTokens <= 0 {
				maxTokens = models.DefaultMaxTokens
			}
			ne := NodeEstimate{ID: n.ID, Model: m.ID, PromptTokens: tokens, MaxTokens: maxTokens,
				MinUSD: m.Cost(models.Usage{PromptTokens: tokens}), MaxUSD: m.MaxCost(n.MaxTokens)}
			est.MinUSD += ne.MinUSD
			est.Nodes = append(est.Nodes, ne)
		}
	}, nil)
	if err != nil {
		return Estimate{}, errs.Invalidf("the pipeline cannot run: %v", err)
	}
	return est, nil
}
