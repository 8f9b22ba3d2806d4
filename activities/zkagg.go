package activities

import (
	"context"
	"encoding/hex"
	"errors"
	"strings"
	"time"

	"go.temporal.io/sdk/temporal"

	"conduit/internal/store"
	"conduit/internal/zkagg"
)

// ZKAgg runs proof aggregation's side effects (workflows/zkaggregation.go).
type ZKAgg struct {
	Store    *store.Store
	Contract *zkagg.Contract
	// Admission adds a statement to its domain's aggregation workflow
	// (internal/zkagg/admission: it names the workflow, which this
	// package cannot import).
	Admission interface {
		Enqueue(ctx context.Context, domainID uint64, jobID, statement string) (aggregationID uint64, leafIndex int, err error)
	}
}

// ZKEnqueueInput is workflows.ZKEnqueueInput's wire shape (the contract
// type lives there; a test pins the two together).
type ZKEnqueueInput struct {
	DomainID uint64 `json:"domainId"`
	Request  struct {
		JobID     string `json:"jobId"`
		Statement string `json:"statement"`
	} `json:"request"`
}

// ZKEnqueued is workflows.ZKAggregateAccepted's wire shape.
type ZKEnqueued struct {
	AggregationID uint64 `json:"aggregationId"`
	LeafIndex     int    `json:"leafIndex"`
}

// ZKBatch is a closed batch (ActZKRecordAggregation's input), in leaf order.
type ZKBatch struct {
	DomainID      uint64    `json:"domainId"`
	AggregationID uint64    `json:"aggregationId"`
	Statements    []string  `json:"statements"`
	JobIDs        []string  `json:"jobIds"`
	At            time.Time `json:"at"`
}

// ZKTree is a batch's root and every leaf's path (bottom up), as 0x hex.
type ZKTree struct {
	Root   string     `json:"root"`
	Proofs [][]string `json:"proofs"`
}

// ZKPublishInput is ActZKPublishAggregation's input.
type ZKPublishInput struct {
	DomainID      uint64 `json:"domainId"`
	AggregationID uint64 `json:"aggregationId"`
	Root          string `json:"root"`
}

// ZKPublished is the root's publishing transaction.
type ZKPublished struct {
	TxHash    string    `json:"txHash"`
	BlockHash string    `json:"blockHash"`
	At        time.Time `json:"at"`
}

// ParseZKHash reads a 0x-prefixed 32-byte hex value.
func ParseZKHash(s string) (zkagg.Hash, error) {
	var h zkagg.Hash
	b, err := hex.DecodeString(strings.TrimPrefix(s, "0x"))
	if err != nil || len(b) != 32 || !strings.HasPrefix(s, "0x") {
		return h, errors.New("must be 0x and 64 hex digits")
	}
	copy(h[:], b)
	return h, nil
}

func zkHex(h zkagg.Hash) string { return "0x" + hex.EncodeToString(h[:]) }

// Enqueue (workflows.ActivityZKEnqueue) adds one job's statement to its
// domain's aggregation, starting it if none runs (Update-with-Start), and
// answers the job's aggregation and leaf. A retry gets the same answer.
func (a *ZKAgg) Enqueue(ctx context.Context, in ZKEnqueueInput) (ZKEnqueued, error) {
	if in.Request.JobID == "" {
		return ZKEnqueued{}, temporal.NewNonRetryableApplicationError("jobId is empty", ErrPermanent, nil)
	}
	if _, err := ParseZKHash(in.Request.Statement); err != nil {
		return ZKEnqueued{}, temporal.NewNonRetryableApplicationError("statement "+err.Error(), ErrPermanent, nil)
	}
	if a.Admission == nil {
		return ZKEnqueued{}, errors.New("proof aggregation is not wired in this worker")
	}
	id, leaf, err := a.Admission.Enqueue(ctx, in.DomainID, in.Request.JobID, in.Request.Statement)
	return ZKEnqueued{AggregationID: id, LeafIndex: leaf}, err
}

// Record (ActZKRecordAggregation) computes a closed batch's Merkle tree
// (zkVerify's rule, internal/zkagg), writes the aggregation and answers
// the root and every path. A retry changes nothing.
func (a *ZKAgg) Record(ctx context.Context, b ZKBatch) (ZKTree, error) {
	stmts := make([]zkagg.Hash, len(b.Statements))
	for i, s := range b.Statements {
		h, err := ParseZKHash(s)
		if err != nil {
			return ZKTree{}, temporal.NewNonRetryableApplicationError("statement "+err.Error(), ErrPermanent, nil)
		}
		stmts[i] = h
	}
	if len(stmts) == 0 || len(stmts) != len(b.JobIDs) {
		return ZKTree{}, temporal.NewNonRetryableApplicationError("a batch needs one job per statement, at least one", ErrPermanent, nil)
	}
	tree := zkagg.FromStatements(stmts)
	out := ZKTree{Root: zkHex(tree.Root()), Proofs: make([][]string, len(stmts))}
	for i := range stmts {
		path := tree.Proof(i)
		out.Proofs[i] = make([]string, len(path))
		for k, h := range path {
			out.Proofs[i][k] = zkHex(h)
		}
	}
	err := a.Store.RecordZKAggregation(ctx, store.ZKAggregation{DomainID: b.DomainID, AggregationID: b.AggregationID,
		Root: out.Root, Statements: b.Statements, JobIDs: b.JobIDs, AggregatedAt: b.At})
	return out, err
}

// Publish (ActZKPublishAggregation) sends the root to the aggregation
// contract and records the transaction. Publishing the same root again (a
// retry) succeeds with a transaction that changes nothing.
func (a *ZKAgg) Publish(ctx context.Context, in ZKPublishInput) (ZKPublished, error) {
	root, err := ParseZKHash(in.Root)
	if err != nil {
		return ZKPublished{}, temporal.NewNonRetryableApplicationError("root "+err.Error(), ErrPermanent, nil)
	}
	if a.Contract == nil || a.Contract.Chain == nil {
		// Retried: the batch waits for a network to be configured.
		return ZKPublished{}, errors.New("no EVM network to publish aggregations on (the embedded one runs with x402.facilitator=local)")
	}
	pub, err := a.Contract.Publish(ctx, in.DomainID, in.AggregationID, root)
	if err != nil {
		return ZKPublished{}, err
	}
	out := ZKPublished{TxHash: pub.TxHash.Hex(), BlockHash: pub.BlockHash.Hex(), At: time.Now().UTC()}
	err = a.Store.PublishZKAggregation(ctx, in.DomainID, in.AggregationID, out.TxHash, out.BlockHash, pub.Contract.Hex(),
		a.Contract.Chain.ChainID.Uint64(), out.At)
	return out, err
}
