-- +goose Up
-- Proof aggregations (internal/zkagg): one row per closed batch of a
-- domain, written by its aggregation workflow when the batch's root is
-- computed (receipt empty) and completed when the root is published on
-- chain. The statements are kept in leaf order: roots and paths are
-- recomputed from them (an aggregation of 1,024 takes a few ms).
CREATE TABLE zk_aggregations (
    domain_id          bigint      NOT NULL,
    aggregation_id     bigint      NOT NULL,
    root               text        NOT NULL,
    statements         text[]      NOT NULL,
    job_ids            text[]      NOT NULL,
    receipt            text        NOT NULL DEFAULT '',
    receipt_block_hash text        NOT NULL DEFAULT '',
    contract           text        NOT NULL DEFAULT '',
    chain_id           bigint      NOT NULL DEFAULT 0,
    aggregated_at      timestamptz NOT NULL,
    published_at       timestamptz,
    PRIMARY KEY (domain_id, aggregation_id),
    CHECK (cardinality(statements) = cardinality(job_ids) AND cardinality(statements) > 0)
);

-- GET /api/zkverify/aggregation/{aggregationId} names no domain.
CREATE INDEX zk_aggregations_by_id ON zk_aggregations (aggregation_id);

-- +goose Down
DROP TABLE zk_aggregations;
