package activities

import (
	"context"
	"errors"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"conduit/internal/graph"
	"conduit/internal/models"
	"conduit/internal/money"
)

// ErrTypeModelRequest marks a model error that retrying cannot fix.
const ErrTypeModelRequest = "ModelRequestError"

// DeltaSink receives a streamed node's tokens as they are produced, for
// readers in other processes (chat completions).
type DeltaSink interface {
	PublishDelta(ctx context.Context, runID string, seq int, text string) error
}

// Models runs text generation.
type Models struct {
	Catalog *models.Catalog
	Deltas  DeltaSink
}

// GenerateInput is one model node's call.
type GenerateInput struct {
	RunID   string
	NodeID  string
	Request graph.ModelRequest
	// Stream publishes tokens through the DeltaSink as they arrive.
	Stream bool
}

// GenerateOutput is the text with its usage and price.
type GenerateOutput struct {
	Text             string
	PromptTokens     int
	CompletionTokens int
	Cost             money.Micros
}

// Generate calls the node's model, heartbeating while it works so a dead
// worker is noticed within the heartbeat timeout and the call retried
// elsewhere.
func (m *Models) Generate(ctx context.Context, in GenerateInput) (GenerateOutput, error) {
	model, ok := m.Catalog.Model(in.Request.Model)
	if !ok {
		return GenerateOutput{}, temporal.NewNonRetryableApplicationError("unknown model "+in.Request.Model, ErrTypeModelRequest, nil)
	}
	stop := heartbeat(ctx)
	defer stop()

	attempt := activity.GetInfo(ctx).Attempt
	seq := 0
	onDelta := func(text string) error {
		if !in.Stream || m.Deltas == nil {
			return nil
		}
		seq++
		return m.Deltas.PublishDelta(ctx, in.RunID, int(attempt)*1_000_000+seq, text)
	}
	resp, err := m.Catalog.Generate(ctx, models.Request{
		Model: in.Request.Model, System: in.Request.System, Prompt: in.Request.Prompt,
		MaxTokens: in.Request.MaxTokens, Temperature: in.Request.Temperature,
	}, onDelta)
	if err != nil {
		if !models.IsRetryable(err) {
			return GenerateOutput{}, temporal.NewNonRetryableApplicationError(err.Error(), ErrTypeModelRequest, nil)
		}
		var pe *models.ProviderError
		if errors.As(err, &pe) {
			return GenerateOutput{}, temporal.NewApplicationError(err.Error(), "ModelProviderError")
		}
		return GenerateOutput{}, err
	}
	return GenerateOutput{
		Text: resp.Text, PromptTokens: resp.Usage.PromptTokens, CompletionTokens: resp.Usage.CompletionTokens,
		Cost: model.Cost(resp.Usage),
	}, nil
}
