-- +goose Up
-- Redaction proxies (internal/redactproxy, docs/redaction-proxies.md): one
-- row per proxy an account configures. upstream_key is the provider key
-- sealed with the vault's master key (AEAD bound to the proxy id); it is
-- never returned. A deleted proxy keeps its row (deleted_at) so the audit
-- log's entries still name it.
CREATE TABLE redaction_proxies (
    id            text PRIMARY KEY,
    account_id    text        NOT NULL REFERENCES accounts (id),
    name          text        NOT NULL,
    style         text        NOT NULL CHECK (style IN ('openai', 'azure', 'anthropic', 'custom')),
    base_url      text        NOT NULL DEFAULT '',
    api_version   text        NOT NULL DEFAULT '',
    models        jsonb       NOT NULL DEFAULT '{}',
    default_model text        NOT NULL DEFAULT '',
    upstream_key  bytea,
    policy        jsonb       NOT NULL,
    output        text        NOT NULL CHECK (output IN ('restore', 'redact')),
    audit         boolean     NOT NULL DEFAULT true,
    created_at    timestamptz NOT NULL DEFAULT now(),
    updated_at    timestamptz NOT NULL DEFAULT now(),
    deleted_at    timestamptz
);
CREATE INDEX redaction_proxies_account ON redaction_proxies (account_id, created_at) WHERE deleted_at IS NULL;
CREATE UNIQUE INDEX redaction_proxies_name ON redaction_proxies (account_id, name) WHERE deleted_at IS NULL;

-- +goose Down
DROP TABLE redaction_proxies;
