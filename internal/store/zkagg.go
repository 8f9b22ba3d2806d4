package store

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"conduit/internal/errs"
)

// ZKAggregation is one closed batch of a domain's statements (internal/zkagg).
type ZKAggregation struct {
	DomainID         uint64
	AggregationID    uint64
	Root             string
	Statements       []string
	JobIDs           []string
	Receipt          string
	ReceiptBlockHash string
	Contract         string
	ChainID          uint64
	AggregatedAt     time.Time
	PublishedAt      *time.Time
}

// RecordZKAggregation writes a closed batch once; a retry with the same
// root changes nothing, another root for the same id is a Conflict.
func (s *Store) RecordZKAggregation(ctx context.Context, a ZKAggregation) error {
	tag, err := s.pool.Exec(ctx, `
		INSERT INTO zk_aggregations (domain_id, aggregation_id, root, statements, job_ids, aggregated_at)
		VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (domain_id, aggregation_id) DO NOTHING`,
		int64(a.DomainID), int64(a.AggregationID), a.Root, a.Statements, a.JobIDs, a.AggregatedAt)
	if err != nil || tag.RowsAffected() == 1 {
		return err
	}
	var root string
	if err := s.pool.QueryRow(ctx, `SELECT root FROM zk_aggregations WHERE domain_id = $1 AND aggregation_id = $2`,
		int64(a.DomainID), int64(a.AggregationID)).Scan(&root); err != nil {
		return err
	}
	if root != a.Root {
		return errs.Conflictf("aggregation %d of domain %d is recorded with root %s, not %s", a.AggregationID, a.DomainID, root, a.Root)
	}
	return nil
}

// PublishZKAggregation records an aggregation's publishing transaction.
func (s *Store) PublishZKAggregation(ctx context.Context, domainID, aggregationID uint64, receipt, blockHash, contract string, chainID uint64, at time.Time) error {
	tag, err := s.pool.Exec(ctx, `
		UPDATE zk_aggregations SET receipt = $3, receipt_block_hash = $4, contract = $5, chain_id = $6, published_at = $7
		WHERE domain_id = $1 AND aggregation_id = $2`,
		int64(domainID), int64(aggregationID), receipt, blockHash, contract, int64(chainID), at)
	if err == nil && tag.RowsAffected() == 0 {
		return ErrNotFound
	}
	return err
}

// ZKAggregations reads the aggregations with this id, of one domain or of
// every domain (domainID nil), by domain.
func (s *Store) ZKAggregations(ctx context.Context, aggregationID uint64, domainID *uint64) ([]ZKAggregation, error) {
	var dom *int64
	if domainID != nil {
		d := int64(*domainID)
		dom = &d
	}
	rows, err := s.pool.Query(ctx, `
		SELECT domain_id, aggregation_id, root, statements, job_ids, receipt, receipt_block_hash, contract, chain_id, aggregated_at, published_at
		FROM zk_aggregations WHERE aggregation_id = $1 AND ($2::bigint IS NULL OR domain_id = $2) ORDER BY domain_id LIMIT 100`,
		int64(aggregationID), dom)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (ZKAggregation, error) {
		var a ZKAggregation
		var d, id, chain int64
		err := r.Scan(&d, &id, &a.Root, &a.Statements, &a.JobIDs, &a.Receipt, &a.ReceiptBlockHash, &a.Contract, &chain, &a.AggregatedAt, &a.PublishedAt)
		a.DomainID, a.AggregationID, a.ChainID = uint64(d), uint64(id), uint64(chain)
		return a, err
	})
}

// NextZKAggregationID is one past the domain's last recorded aggregation
// (1 for a new domain): a domain's aggregation workflow started afresh
// never reuses an id.
func (s *Store) NextZKAggregationID(ctx context.Context, domainID uint64) (uint64, error) {
	var last int64
	err := s.pool.QueryRow(ctx, `SELECT coalesce(max(aggregation_id), 0) FROM zk_aggregations WHERE domain_id = $1`, int64(domainID)).Scan(&last)
	if errors.Is(err, pgx.ErrNoRows) {
		return 1, nil
	}
	return uint64(last) + 1, err
}
