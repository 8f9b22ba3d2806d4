package workflows

import (
	"fmt"
	"time"
)

// The contract between a proof job (zk-job/<jobId>, internal/zkverify) and
// its domain's aggregation (zk-aggregation/<domainId>, internal/zkagg). The
// job adds its statement through the ActivityZKEnqueue activity, which
// Update-with-Starts the aggregation; the aggregation signals each member job
// as its batch is aggregated and then published.
const (
	ZKJobWorkflowName         = "ZKProofJob"
	ZKAggregationWorkflowName = "ZKAggregation"
	// UpdateZKAggregate adds one verified statement to the domain's open batch.
	UpdateZKAggregate = "aggregate"
	// SignalZKAggregation tells a member job its batch moved on.
	SignalZKAggregation = "zk-aggregation"
	// ActivityZKEnqueue runs UpdateZKAggregate on the domain's aggregation.
	ActivityZKEnqueue = "EnqueueZKStatement"
)

// ZKJobWorkflowID names a proof job's workflow.
func ZKJobWorkflowID(jobID string) string { return "zk-job/" + jobID }

// ZKAggregationWorkflowID names a domain's aggregation workflow.
func ZKAggregationWorkflowID(domainID uint64) string {
	return fmt.Sprintf("zk-aggregation/%d", domainID)
}

// ZKEnqueueInput is ActivityZKEnqueue's argument.
type ZKEnqueueInput struct {
	DomainID uint64             `json:"domainId"`
	Request  ZKAggregateRequest `json:"request"`
}

// ZKAggregateRequest is UpdateZKAggregate's argument: one statement of one job.
type ZKAggregateRequest struct {
	JobID     string `json:"jobId"`
	Statement string `json:"statement"` // 0x-prefixed 32-byte hex (zkstatement.Statement)
}

// ZKAggregateAccepted is UpdateZKAggregate's answer.
type ZKAggregateAccepted struct {
	AggregationID uint64 `json:"aggregationId"`
	LeafIndex     int    `json:"leafIndex"`
}

// ZKAggregation statuses a job moves through after it is enqueued.
const (
	ZKAggregated           = "Aggregated"
	ZKAggregationPublished = "AggregationPublished"
)

// ZKAggregationNotice is SignalZKAggregation's payload: first with Status
// Aggregated (root and path known), then AggregationPublished (Receipt is the
// publishing transaction on the chain, ReceiptBlockHash its block).
type ZKAggregationNotice struct {
	AggregationID    uint64    `json:"aggregationId"`
	DomainID         uint64    `json:"domainId"`
	Status           string    `json:"status"`
	Root             string    `json:"root"`
	Leaf             string    `json:"leaf"`
	LeafIndex        int       `json:"leafIndex"`
	NumberOfLeaves   int       `json:"numberOfLeaves"`
	MerkleProof      []string  `json:"merkleProof"`
	Receipt          string    `json:"receipt,omitempty"`
	ReceiptBlockHash string    `json:"receiptBlockHash,omitempty"`
	At               time.Time `json:"at"`
}
