-- +goose Up
-- Accounts are human (dashboard) or wallet accounts (created by x402
-- payments without a bearer, keyed by network + wallet address).
CREATE TABLE accounts (
    id             text PRIMARY KEY,
    kind           text        NOT NULL CHECK (kind IN ('human', 'wallet')),
    name           text        NOT NULL DEFAULT '',
    network        text,
    wallet_address text,
    -- Spendable credit in micro-USD: the sum of this account's ledger
    -- entries, kept here in the same transaction as each entry so reads are
    -- one row and the CHECK makes a negative balance impossible.
    balance_micros bigint      NOT NULL DEFAULT 0 CHECK (balance_micros >= 0),
    created_at     timestamptz NOT NULL DEFAULT now(),
    CHECK ((kind = 'wallet') = (network IS NOT NULL AND wallet_address IS NOT NULL))
);
CREATE UNIQUE INDEX accounts_wallet ON accounts (network, wallet_address) WHERE kind = 'wallet';

-- One row per movement of credit. The idempotency key makes every movement
-- happen at most once whatever retries.
CREATE TABLE ledger_entries (
    id              bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    account_id      text        NOT NULL REFERENCES accounts (id),
    kind            text        NOT NULL CHECK (kind IN ('free_grant', 'topup', 'pack', 'hold', 'release', 'charge', 'refund', 'grant')),
    amount_micros   bigint      NOT NULL,
    idempotency_key text        NOT NULL UNIQUE,
    hold_id         text,
    reference       text        NOT NULL DEFAULT '',
    created_at      timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX ledger_entries_account ON ledger_entries (account_id, id);

-- A hold reserves credit for work in flight; it ends captured (charged the
-- actual amount, the rest released) or released (nothing charged).
CREATE TABLE holds (
    id              text PRIMARY KEY,
    account_id      text        NOT NULL REFERENCES accounts (id),
    amount_micros   bigint      NOT NULL CHECK (amount_micros > 0),
    charged_micros  bigint      NOT NULL DEFAULT 0 CHECK (charged_micros >= 0),
    status          text        NOT NULL CHECK (status IN ('held', 'captured', 'released')),
    idempotency_key text        NOT NULL UNIQUE,
    created_at      timestamptz NOT NULL DEFAULT now(),
    settled_at      timestamptz
);

-- API keys: the secret is never stored, only its SHA-256; keys are found by
-- their non-secret prefix.
CREATE TABLE api_keys (
    id             text PRIMARY KEY,
    account_id     text        NOT NULL REFERENCES accounts (id),
    name           text        NOT NULL,
    prefix         text        NOT NULL UNIQUE,
    secret_hash    bytea       NOT NULL,
    permissions    text[]      NOT NULL,
    status         text        NOT NULL CHECK (status IN ('active', 'inactive')),
    wallet_address text,
    created_at     timestamptz NOT NULL DEFAULT now(),
    updated_at     timestamptz NOT NULL DEFAULT now(),
    last_used_at   timestamptz,
    deleted_at     timestamptz
);
CREATE INDEX api_keys_account ON api_keys (account_id) WHERE deleted_at IS NULL;

-- +goose Down
DROP TABLE api_keys;
DROP TABLE holds;
DROP TABLE ledger_entries;
DROP TABLE accounts;
