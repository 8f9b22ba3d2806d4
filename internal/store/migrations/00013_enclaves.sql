-- +goose Up
-- Enclaves (internal/enclaves): one row per enclave, a projection of its
-- lifecycle workflow (enclave/<id>), which is the only writer of status,
-- error_message, wallet_address and pcrs. Registry passwords and github
-- tokens are kept sealed with AES-256-GCM (internal/codec keys, the key id
-- bound as additional data); they are never returned.
CREATE TABLE enclaves (
    id                   text PRIMARY KEY,
    account_id           text        NOT NULL REFERENCES accounts (id),
    name                 text        NOT NULL,
    description          text        NOT NULL DEFAULT '',
    provider_id          text        NOT NULL,
    region               text        NOT NULL,
    provider_config      jsonb       NOT NULL,
    source_type          text        NOT NULL CHECK (source_type IN ('registry', 'private-registry', 'github')),
    registry_username    text        NOT NULL DEFAULT '',
    registry_secret      bytea,
    github_connected     boolean     NOT NULL DEFAULT false,
    github_username      text        NOT NULL DEFAULT '',
    github_repo          text        NOT NULL DEFAULT '',
    github_branch        text        NOT NULL DEFAULT '',
    github_token         bytea,
    status               text        NOT NULL,
    error_message        text        NOT NULL DEFAULT '',
    wallet_address       text        NOT NULL DEFAULT '',
    pcrs                 jsonb       NOT NULL DEFAULT '{}',
    endpoint             text        NOT NULL DEFAULT '',
    created_at           timestamptz NOT NULL DEFAULT now(),
    updated_at           timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX enclaves_account ON enclaves (account_id, created_at);

-- Log entries of an enclave: application (its stdout/stderr), ecs
-- (provisioning steps), stepfunctions (lifecycle transitions), lambda
-- (scheduled tasks), build, errors. seq orders entries of one enclave;
-- app_seq is the provider's sequence number of an application line, so
-- copying them again is harmless. Old entries are dropped after
-- enclaves.log_retention.
CREATE TABLE enclave_logs (
    enclave_id text        NOT NULL REFERENCES enclaves (id) ON DELETE CASCADE,
    seq        bigserial,
    at         timestamptz NOT NULL DEFAULT now(),
    type       text        NOT NULL CHECK (type IN ('application', 'ecs', 'stepfunctions', 'lambda', 'build', 'errors')),
    source     text        NOT NULL,
    stream     text        NOT NULL DEFAULT '',
    log_group  text        NOT NULL,
    message    text        NOT NULL,
    app_seq    bigint,
    PRIMARY KEY (enclave_id, seq)
);
CREATE INDEX enclave_logs_type ON enclave_logs (enclave_id, type, seq);
CREATE UNIQUE INDEX enclave_logs_app_seq ON enclave_logs (enclave_id, app_seq) WHERE app_seq IS NOT NULL;
CREATE INDEX enclave_logs_at ON enclave_logs (at);

-- +goose Down
DROP TABLE enclave_logs;
DROP TABLE enclaves;
