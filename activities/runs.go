package activities

import (
	"context"
	"encoding/json"
	"time"

	"conduit/internal/money"
	"conduit/internal/store"
)

// Runs writes the run history projection.
type Runs struct {
	Store *store.Store
}

// FinishInput is a finished run's record and what to charge.
type FinishInput struct {
	RunID            string
	Status           string
	Outputs          map[string]string
	Nodes            json.RawMessage
	PromptTokens     int
	CompletionTokens int
	// Charge is taken from the run's hold on success; any other status
	// releases the hold and charges nothing.
	Charge     money.Micros
	Error      string
	FinishedAt time.Time
}

// Finish records the result and settles the credit in one transaction;
// retries are harmless.
func (r *Runs) Finish(ctx context.Context, in FinishInput) error {
	return r.Store.FinishRun(ctx, store.RunResult{
		RunID: in.RunID, Status: in.Status, Outputs: in.Outputs, Nodes: in.Nodes,
		PromptTokens: in.PromptTokens, CompletionTokens: in.CompletionTokens,
		Cost: in.Charge, Error: in.Error, FinishedAt: in.FinishedAt,
	})
}
