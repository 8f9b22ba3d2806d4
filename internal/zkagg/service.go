package zkagg

import (
	"context"
	"encoding/hex"
	"strconv"
	"strings"
	"time"

	"conduit/internal/errs"
	"conduit/internal/store"
)

// Service answers GET /api/zkverify/aggregation/{aggregationId} from the
// aggregations PostgreSQL records (the workflow writes them).
type Service struct {
	Store    *store.Store
	Contract *Contract
}

// AggregationArgs name an aggregation and, optionally, one leaf of it.
// Aggregation ids are per domain (as zkVerify's): DomainID may be left
// out while only one domain has the id. A leaf is named by the job that
// submitted it (JobID) or by its statement (Statement, zkVerify's
// "leaf"), not both.
type AggregationArgs struct {
	AggregationID string
	DomainID      string
	JobID         string
	Statement     string
}

// Aggregation is the answer: zkVerify's aggregationDetails field names
// (receipt, receiptBlockHash, root, leaf, leafIndex, numberOfLeaves,
// merkleProof) plus ours (domainId, status, the contract that holds the
// root). Leaf is the statement, as in zkVerify's job status; its Merkle
// leaf is keccak256(leaf). The leaf fields are present when a leaf was
// named.
type Aggregation struct {
	AggregationID    uint64     `json:"aggregationId"`
	DomainID         uint64     `json:"domainId"`
	Status           string     `json:"status"`
	Root             string     `json:"root"`
	Receipt          string     `json:"receipt,omitempty"`
	ReceiptBlockHash string     `json:"receiptBlockHash,omitempty"`
	NumberOfLeaves   int        `json:"numberOfLeaves"`
	Leaf             string     `json:"leaf,omitempty"`
	LeafIndex        *int       `json:"leafIndex,omitempty"`
	MerkleProof      []string   `json:"merkleProof,omitempty"`
	JobID            string     `json:"jobId,omitempty"`
	Contract         string     `json:"contract,omitempty"`
	ChainID          uint64     `json:"chainId,omitempty"`
	AggregatedAt     time.Time  `json:"aggregatedAt"`
	PublishedAt      *time.Time `json:"publishedAt,omitempty"`
}

// Get reads an aggregation, with one leaf's path when a leaf is named.
func (s *Service) Get(ctx context.Context, in AggregationArgs) (Aggregation, error) {
	id, err := strconv.ParseUint(in.AggregationID, 10, 63)
	if err != nil {
		return Aggregation{}, errs.Invalidf("aggregationId must be a non-negative integer")
	}
	var domain *uint64
	if in.DomainID != "" {
		d, err := strconv.ParseUint(in.DomainID, 10, 63)
		if err != nil {
			return Aggregation{}, errs.Invalidf("domainId must be a non-negative integer")
		}
		domain = &d
	}
	if in.JobID != "" && in.Statement != "" {
		return Aggregation{}, errs.Invalidf("name the leaf by jobId or by statement, not both")
	}
	var stmt Hash
	if in.Statement != "" {
		b, err := hex.DecodeString(strings.TrimPrefix(in.Statement, "0x"))
		if err != nil || len(b) != 32 || !strings.HasPrefix(in.Statement, "0x") {
			return Aggregation{}, errs.Invalidf("statement must be 0x and 64 hex digits")
		}
		copy(stmt[:], b)
	}
	if len(in.JobID) > 200 {
		return Aggregation{}, errs.Invalidf("jobId is longer than 200 characters")
	}
	found, err := s.Store.ZKAggregations(ctx, id, domain)
	if err != nil {
		return Aggregation{}, err
	}
	switch {
	case len(found) == 0:
		return Aggregation{}, errs.NotFoundf("aggregation %d not found", id)
	case len(found) > 1:
		doms := make([]string, len(found))
		for i, a := range found {
			doms[i] = strconv.FormatUint(a.DomainID, 10)
		}
		return Aggregation{}, errs.Invalidf("aggregation %d exists in domains %s: name one with domainId", id, strings.Join(doms, ", "))
	}
	a := found[0]
	out := Aggregation{AggregationID: a.AggregationID, DomainID: a.DomainID, Status: "Aggregated", Root: a.Root,
		Receipt: a.Receipt, ReceiptBlockHash: a.ReceiptBlockHash, NumberOfLeaves: len(a.Statements),
		Contract: a.Contract, ChainID: a.ChainID, AggregatedAt: a.AggregatedAt, PublishedAt: a.PublishedAt}
	if a.Receipt != "" {
		out.Status = "AggregationPublished"
	}
	if in.JobID == "" && in.Statement == "" {
		return out, nil
	}
	index := -1
	for i := range a.Statements {
		if (in.JobID != "" && a.JobIDs[i] == in.JobID) || (in.Statement != "" && strings.EqualFold(a.Statements[i], in.Statement)) {
			index = i
			break
		}
	}
	if index < 0 {
		return Aggregation{}, errs.NotFoundf("aggregation %d of domain %d has no such leaf", id, a.DomainID)
	}
	stmts := make([]Hash, len(a.Statements))
	for i, h := range a.Statements {
		b, err := hex.DecodeString(strings.TrimPrefix(h, "0x"))
		if err != nil || len(b) != 32 {
			return Aggregation{}, errs.New(errs.Internal, "a recorded statement is malformed")
		}
		copy(stmts[i][:], b)
	}
	tree := FromStatements(stmts)
	out.Leaf, out.LeafIndex, out.JobID = a.Statements[index], &index, a.JobIDs[index]
	for _, h := range tree.Proof(index) {
		out.MerkleProof = append(out.MerkleProof, "0x"+hex.EncodeToString(h[:]))
	}
	out.MerkleProof = append([]string{}, out.MerkleProof...) // [] not null for a one-leaf tree
	return out, nil
}
