-- +goose Up
-- The redaction audit log (internal/redactlog): one row per redacting
-- call, counts only, never values. Each account's entries form a hash
-- chain: hash = SHA-256(prev_hash || the entry's canonical bytes), seq
-- counts from 1 without gaps, and redaction_log_heads keeps the last seq
-- and hash, so an edited, removed or truncated entry breaks verification.
CREATE TABLE redaction_log (
    account_id      text        NOT NULL REFERENCES accounts (id),
    seq             bigint      NOT NULL,
    id              text        NOT NULL UNIQUE,
    at              timestamptz NOT NULL,
    key_id          text        NOT NULL DEFAULT '',
    proxy_id        text        NOT NULL DEFAULT '',
    source          text        NOT NULL,
    counts          jsonb       NOT NULL,
    upstream_status integer     NOT NULL,
    latency_ms      bigint      NOT NULL,
    prev_hash       text        NOT NULL,
    hash            text        NOT NULL,
    PRIMARY KEY (account_id, seq)
);
CREATE INDEX redaction_log_proxy ON redaction_log (account_id, proxy_id, seq);

CREATE TABLE redaction_log_heads (
    account_id text   PRIMARY KEY REFERENCES accounts (id),
    seq        bigint NOT NULL,
    hash       text   NOT NULL
);

-- +goose Down
DROP TABLE redaction_log_heads;
DROP TABLE redaction_log;
