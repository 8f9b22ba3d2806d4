-- +goose Up
-- The zkVerify relay (internal/zkverify, docs/proofs.md). Verification keys
-- are registered once per circuit: the hash is the key's identity, whoever
-- registered it first is its registrant (the bound on keys counts those).
CREATE TABLE zk_verification_keys (
    vk_hash     text PRIMARY KEY,
    proof_type  text        NOT NULL,
    vk          jsonb       NOT NULL,
    account_id  text        NOT NULL REFERENCES accounts (id),
    created_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX zk_verification_keys_account ON zk_verification_keys (account_id);

-- A proof job: its row is written by the job's workflow (zk-job/<id>) as
-- its first step and closed with its final state; while it is open its
-- state is the workflow's (a query).
CREATE TABLE zk_jobs (
    id          text PRIMARY KEY,
    account_id  text        NOT NULL REFERENCES accounts (id),
    proof_type  text        NOT NULL,
    chain_id    bigint,
    vk_hash     text        NOT NULL,
    status      text        NOT NULL,
    reason      text        NOT NULL DEFAULT '',
    state       jsonb,
    created_at  timestamptz NOT NULL DEFAULT now(),
    updated_at  timestamptz NOT NULL DEFAULT now(),
    closed_at   timestamptz
);
CREATE INDEX zk_jobs_open ON zk_jobs (account_id) WHERE closed_at IS NULL;

-- +goose Down
DROP TABLE zk_jobs;
DROP TABLE zk_verification_keys;
