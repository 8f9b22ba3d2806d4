// Package enqueue adds a verified statement to its domain's aggregation
// workflow (zk-aggregation/<domainId>) by Update-with-Start: it names the
// workflow, so it sits apart from internal/zkagg, which the activities
// (and through them the workflows) import.
package enqueue

import (
	"context"
	"fmt"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"

	"conduit/internal/config"
	"conduit/internal/store"
	"conduit/internal/temporalx"
	"conduit/workflows"
)

// Enqueuer is activities.ZKAgg's Admission.
type Enqueuer struct {
	Store    *store.Store
	Temporal client.Client
	Config   config.ZKAgg
}

// Enqueue answers the job's aggregation id and leaf index. The update is
// keyed by the job, and the workflow answers a job it holds with its first
// place, so a retry never adds a second leaf.
func (e *Enqueuer) Enqueue(ctx context.Context, domainID uint64, jobID, statement string) (uint64, int, error) {
	// A domain's aggregation started afresh (the first, or after one was
	// terminated) never reuses a recorded aggregation id.
	next, err := e.Store.NextZKAggregationID(ctx, domainID)
	if err != nil {
		return 0, 0, err
	}
	start := e.Temporal.NewWithStartWorkflowOperation(client.StartWorkflowOptions{
		ID: workflows.ZKAggregationWorkflowID(domainID), TaskQueue: workflows.ZKAggregationQueue,
		WorkflowIDConflictPolicy: enumspb.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING,
	}, workflows.ZKAggregationWorkflowName, workflows.ZKAggregationInput{
		DomainID: domainID, AggregationID: next, BatchSize: e.Config.BatchSize, BatchWait: e.Config.BatchWait,
	})
	out, err := temporalx.Admit[workflows.ZKAggregateAccepted](ctx, e.Temporal, start, client.UpdateWorkflowOptions{UpdateID: "enqueue/" + jobID,
		UpdateName: workflows.UpdateZKAggregate, Args: []any{workflows.ZKAggregateRequest{JobID: jobID, Statement: statement}}})
	if err != nil {
		return 0, 0, fmt.Errorf("enqueueing job %s in domain %d: %w", jobID, domainID, err)
	}
	return out.AggregationID, out.LeafIndex, nil
}
