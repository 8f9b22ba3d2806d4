package workflows

import (
	"errors"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"conduit/activities"
)

// The proof aggregation of one domain (zk-aggregation/<domainId>,
// docs/proofs.md): statements arrive by UpdateZKAggregate (from each
// proof job's ActivityZKEnqueue); a batch closes when it holds BatchSize
// statements or BatchWait after its first; its Merkle tree is computed
// and the aggregation recorded (one activity), the members told
// (Aggregated), the root published on chain and the members told again
// (AggregationPublished). Then the workflow continues as new with what
// arrived meanwhile, so its history holds one batch.
const (
	// ZKAggregationQueue runs the aggregation and its activities
	// (ActivityZKEnqueue among them: a job schedules it there).
	ZKAggregationQueue = "zk-aggregation"
	// ActZKRecordAggregation writes a closed batch (ZKAgg.Record).
	ActZKRecordAggregation = "RecordZKAggregation"
	// ActZKPublishAggregation publishes a batch's root (ZKAgg.Publish).
	ActZKPublishAggregation = "PublishZKAggregation"
	// QueryZKAggregation answers the open batch (ZKAggregationState).
	QueryZKAggregation = "zk-aggregation-state"
)

// ZKAggregationInput is the aggregation's state at the start of a run.
type ZKAggregationInput struct {
	DomainID uint64 `json:"domainId"`
	// AggregationID is the id of the batch that closes next.
	AggregationID uint64        `json:"aggregationId"`
	BatchSize     int           `json:"batchSize"`
	BatchWait     time.Duration `json:"batchWait"`
	// Pending are the statements accepted and not aggregated yet, in
	// order: the first BatchSize are the next batch.
	Pending []ZKAggregateRequest `json:"pending,omitempty"`
	// Recent is the last closed batch: an enqueue retried after it
	// closed gets its first answer again instead of a second leaf.
	Recent []ZKAggregateMember `json:"recent,omitempty"`
}

// ZKAggregateMember is one job's place in an aggregation.
type ZKAggregateMember struct {
	JobID         string `json:"jobId"`
	AggregationID uint64 `json:"aggregationId"`
	LeafIndex     int    `json:"leafIndex"`
}

// ZKAggregationState is QueryZKAggregation's answer.
type ZKAggregationState struct {
	DomainID      uint64 `json:"domainId"`
	AggregationID uint64 `json:"aggregationId"`
	Pending       int    `json:"pending"`
}

// ZKMaxPending bounds the statements a domain holds unaggregated: an
// enqueue beyond it is refused (the job's activity retries, so a burst
// waits instead of growing the history without end).
func ZKMaxPending(batchSize int) int { return 4 * batchSize }

// validStatement: 0x and 64 hex digits.
func validStatement(s string) bool {
	if len(s) != 66 || s[:2] != "0x" {
		return false
	}
	for _, c := range s[2:] {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
			return false
		}
	}
	return true
}

// ZKAggregation is the domain's aggregation workflow.
func ZKAggregation(ctx workflow.Context, in ZKAggregationInput) error {
	if in.BatchSize < 1 || in.BatchWait <= 0 {
		return temporal.NewNonRetryableApplicationError("batch size and wait must be positive", "invalid_input", nil)
	}
	pending := in.Pending
	if err := workflow.SetQueryHandler(ctx, QueryZKAggregation, func() (ZKAggregationState, error) {
		return ZKAggregationState{DomainID: in.DomainID, AggregationID: in.AggregationID, Pending: len(pending)}, nil
	}); err != nil {
		return err
	}
	// place answers a job's aggregation and leaf from its position among
	// the pending statements: batches are cut from the front, BatchSize
	// at a time, and a batch that closes on time takes everything
	// pending (fewer than BatchSize), so the answer given at acceptance
	// is the place the statement ends up in.
	place := func(pos int) ZKAggregateAccepted {
		return ZKAggregateAccepted{AggregationID: in.AggregationID + uint64(pos/in.BatchSize), LeafIndex: pos % in.BatchSize}
	}
	closed := 0                    // batches closed in this run (0 or 1: the run continues as new after one)
	var recent []ZKAggregateMember // the batch closed in this run
	find := func(jobID string) (ZKAggregateAccepted, bool) {
		for i, p := range pending {
			if p.JobID == jobID {
				return place(i + closed*in.BatchSize), true
			}
		}
		for _, m := range append(recent, in.Recent...) {
			if m.JobID == jobID {
				return ZKAggregateAccepted{AggregationID: m.AggregationID, LeafIndex: m.LeafIndex}, true
			}
		}
		return ZKAggregateAccepted{}, false
	}
	err := workflow.SetUpdateHandlerWithOptions(ctx, UpdateZKAggregate,
		func(ctx workflow.Context, req ZKAggregateRequest) (ZKAggregateAccepted, error) {
			if a, ok := find(req.JobID); ok {
				return a, nil
			}
			pending = append(pending, req)
			return place(len(pending) - 1 + closed*in.BatchSize), nil
		},
		workflow.UpdateHandlerOptions{Validator: func(ctx workflow.Context, req ZKAggregateRequest) error {
			if req.JobID == "" || len(req.JobID) > 200 {
				return errors.New("jobId must be 1 to 200 characters")
			}
			if !validStatement(req.Statement) {
				return errors.New("statement must be 0x and 64 hex digits")
			}
			if _, ok := find(req.JobID); !ok && len(pending) >= ZKMaxPending(in.BatchSize) {
				return errors.New("the domain's aggregation is full; retry later")
			}
			return nil
		}})
	if err != nil {
		return err
	}

	// Wait for a first statement, then for a full batch or the wait.
	if err := workflow.Await(ctx, func() bool { return len(pending) > 0 }); err != nil {
		return err
	}
	if _, err := workflow.AwaitWithTimeout(ctx, in.BatchWait, func() bool { return len(pending) >= in.BatchSize }); err != nil {
		return err
	}
	n := min(len(pending), in.BatchSize)
	batch := append([]ZKAggregateRequest(nil), pending[:n]...)
	pending = pending[n:]
	closed = 1
	id := in.AggregationID

	b := activities.ZKBatch{DomainID: in.DomainID, AggregationID: id, At: workflow.Now(ctx)}
	recent = make([]ZKAggregateMember, n)
	for i, m := range batch {
		b.Statements = append(b.Statements, m.Statement)
		b.JobIDs = append(b.JobIDs, m.JobID)
		recent[i] = ZKAggregateMember{JobID: m.JobID, AggregationID: id, LeafIndex: i}
	}
	short := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: 30 * time.Second,
		RetryPolicy:         &temporal.RetryPolicy{InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: time.Minute},
	})
	var tree activities.ZKTree
	if err := workflow.ExecuteActivity(short, ActZKRecordAggregation, b).Get(ctx, &tree); err != nil {
		return err
	}
	notice := func(i int, status string, pub activities.ZKPublished) ZKAggregationNotice {
		at := b.At
		if status == ZKAggregationPublished {
			at = pub.At
		}
		// Leaf is the statement, as zkVerify's aggregationDetails names
		// it (its Merkle leaf is keccak256 of it).
		return ZKAggregationNotice{AggregationID: id, DomainID: in.DomainID, Status: status, Root: tree.Root, Leaf: batch[i].Statement,
			LeafIndex: i, NumberOfLeaves: n, MerkleProof: tree.Proofs[i], Receipt: pub.TxHash, ReceiptBlockHash: pub.BlockHash, At: at}
	}
	tell := func(status string, pub activities.ZKPublished) {
		futures := make([]workflow.Future, n)
		for i, m := range batch {
			futures[i] = workflow.SignalExternalWorkflow(ctx, ZKJobWorkflowID(m.JobID), "", SignalZKAggregation, notice(i, status, pub))
		}
		for i, f := range futures {
			// A member that is gone (failed, terminated) has nobody to
			// tell; the aggregation stands for the others.
			if err := f.Get(ctx, nil); err != nil {
				workflow.GetLogger(ctx).Warn("a member job could not be told", "job", batch[i].JobID, "status", status, "err", err)
			}
		}
	}
	if len(tree.Proofs) != n {
		return temporal.NewNonRetryableApplicationError("the recorded tree has another size than the batch", "invalid_tree", nil)
	}
	tell(ZKAggregated, activities.ZKPublished{})
	var pub activities.ZKPublished
	if err := workflow.ExecuteActivity(short, ActZKPublishAggregation, activities.ZKPublishInput{DomainID: in.DomainID, AggregationID: id, Root: tree.Root}).Get(ctx, &pub); err != nil {
		return err
	}
	tell(ZKAggregationPublished, pub)

	// Statements accepted while this batch closed go to the next run,
	// after every update handler has answered.
	if err := workflow.Await(ctx, func() bool { return workflow.AllHandlersFinished(ctx) }); err != nil {
		return err
	}
	next := in
	next.AggregationID, next.Pending, next.Recent = id+1, pending, recent
	return workflow.NewContinueAsNewError(ctx, ZKAggregationWorkflowName, next)
}
