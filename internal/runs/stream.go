package runs

import (
	"context"

	"conduit/internal/store"
	"conduit/workflows"
)

// Run is a pipeline run as it is recorded.
type Run = store.Run

// Delta is a piece of a model node's streamed text, numbered in order
// (Seq / 1 000 000 is the model call's attempt).
type Delta = store.Delta

// Await waits for the run's workflow to end and returns its state. If
// the caller goes away the run goes on regardless.
func (s *Service) Await(ctx context.Context, workflowID string) (workflows.RunState, error) {
	var st workflows.RunState
	err := s.Temporal.GetWorkflow(ctx, workflowID, "").Get(ctx, &st)
	return st, err
}

// Subscribe wakes the returned channel whenever the run has new deltas
// (the worker may be another process: PostgreSQL's NOTIFY carries it);
// call the returned func to stop.
func (s *Service) Subscribe(runID string) (<-chan struct{}, func()) {
	return s.Deltas.Subscribe(runID)
}

// DeltasAfter are the run's deltas after seq, in order.
func (s *Service) DeltasAfter(ctx context.Context, runID string, after int64) ([]Delta, error) {
	return s.Store.DeltasAfter(ctx, runID, after)
}

// ForgetDeltas drops the run's deltas once its stream is over.
func (s *Service) ForgetDeltas(ctx context.Context, runID string) error {
	return s.Store.DeleteDeltas(ctx, runID)
}
