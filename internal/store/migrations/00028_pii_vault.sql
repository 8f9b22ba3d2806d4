-- +goose Up
-- The PII vault (internal/vault): envelope encryption. Each subject has its
-- own Tink AEAD keyset, wrapped by the master key from configuration;
-- deleting a subject destroys that keyset (crypto-shredding), after which
-- every token of the subject stays in pii_tokens but cannot be read. Each
-- account has one deterministic (AES-SIV) keyset that makes join tokens.
CREATE TABLE pii_account_keys (
    account_id text PRIMARY KEY REFERENCES accounts (id),
    det_keyset bytea NOT NULL
);

CREATE TABLE pii_subjects (
    account_id text        NOT NULL REFERENCES accounts (id),
    subject_id text        NOT NULL,
    keyset     bytea,
    created_at timestamptz NOT NULL DEFAULT now(),
    shredded_at timestamptz,
    PRIMARY KEY (account_id, subject_id)
);

CREATE TABLE pii_tokens (
    account_id    text        NOT NULL,
    token         text        NOT NULL,
    subject_id    text        NOT NULL,
    type          text        NOT NULL,
    deterministic boolean     NOT NULL,
    ciphertext    bytea       NOT NULL,
    created_at    timestamptz NOT NULL DEFAULT now(),
    updated_at    timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (account_id, token, subject_id),
    FOREIGN KEY (account_id, subject_id) REFERENCES pii_subjects (account_id, subject_id)
);
CREATE INDEX pii_tokens_subject ON pii_tokens (account_id, subject_id);

CREATE TABLE pii_consents (
    id          text PRIMARY KEY,
    account_id  text        NOT NULL REFERENCES accounts (id),
    subject_id  text        NOT NULL,
    purpose     text        NOT NULL,
    granted     boolean     NOT NULL,
    note        text        NOT NULL DEFAULT '',
    recorded_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX pii_consents_subject ON pii_consents (account_id, subject_id, purpose, recorded_at);

-- Every vault access: who, what, which subject and token, the outcome —
-- never a value.
CREATE TABLE pii_audit (
    seq        bigserial PRIMARY KEY,
    account_id text        NOT NULL REFERENCES accounts (id),
    at         timestamptz NOT NULL DEFAULT now(),
    key_id     text        NOT NULL DEFAULT '',
    action     text        NOT NULL,
    subject_id text        NOT NULL DEFAULT '',
    tokens     integer     NOT NULL DEFAULT 0,
    outcome    text        NOT NULL
);
CREATE INDEX pii_audit_account ON pii_audit (account_id, seq);

-- +goose Down
DROP TABLE pii_audit;
DROP TABLE pii_consents;
DROP TABLE pii_tokens;
DROP TABLE pii_subjects;
DROP TABLE pii_account_keys;
