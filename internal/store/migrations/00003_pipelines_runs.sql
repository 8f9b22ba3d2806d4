-- +goose Up
CREATE TABLE pipelines (
    id              text PRIMARY KEY,
    account_id      text        NOT NULL REFERENCES accounts (id),
    name            text        NOT NULL,
    -- The editable draft; never served.
    draft           jsonb       NOT NULL,
    -- The published version that serves API traffic (NULL: never published).
    serving_version integer,
    created_at      timestamptz NOT NULL DEFAULT now(),
    updated_at      timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX pipelines_account ON pipelines (account_id, created_at);

-- Published snapshots, immutable once written.
CREATE TABLE pipeline_versions (
    pipeline_id text        NOT NULL REFERENCES pipelines (id),
    version     integer     NOT NULL CHECK (version > 0),
    graph       jsonb       NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (pipeline_id, version)
);

-- The run history projection: written when a run is accepted and when its
-- workflow finishes (in the same transaction as its charge or release).
CREATE TABLE runs (
    run_id            text PRIMARY KEY,
    pipeline_id       text        NOT NULL REFERENCES pipelines (id),
    version           integer     NOT NULL,
    account_id        text        NOT NULL REFERENCES accounts (id),
    kind              text        NOT NULL CHECK (kind IN ('invoke', 'chat')),
    status            text        NOT NULL CHECK (status IN ('running', 'success', 'error', 'partial')),
    idempotency_key   text,
    hold_id           text        NOT NULL,
    inputs            jsonb       NOT NULL,
    outputs           jsonb,
    nodes             jsonb,
    prompt_tokens     integer     NOT NULL DEFAULT 0,
    completion_tokens integer     NOT NULL DEFAULT 0,
    cost_micros       bigint      NOT NULL DEFAULT 0,
    error             text        NOT NULL DEFAULT '',
    started_at        timestamptz NOT NULL,
    finished_at       timestamptz,
    duration_ms       bigint
);
CREATE UNIQUE INDEX runs_idempotency ON runs (account_id, idempotency_key) WHERE idempotency_key IS NOT NULL;
CREATE INDEX runs_pipeline ON runs (pipeline_id, started_at DESC, run_id DESC);

-- +goose Down
DROP TABLE runs;
DROP TABLE pipeline_versions;
DROP TABLE pipelines;
