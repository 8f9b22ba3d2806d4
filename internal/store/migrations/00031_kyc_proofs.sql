-- +goose Up
-- KYC proofs (internal/kyc, docs/proofs.md). Each proof's life is its
-- workflow (kyc-proof/<id>): the row is written by its first step, moved
-- to verified once its record on the embedded chain is in a block, and to
-- expired seven days after submission.
CREATE TABLE kyc_proofs (
    id               text PRIMARY KEY,
    account_id       text        NOT NULL REFERENCES accounts (id),
    user_id          text        NOT NULL DEFAULT '',
    commitment       text        NOT NULL,
    proof            text        NOT NULL,
    public_inputs    jsonb       NOT NULL,
    algorithm        text        NOT NULL,
    vk_hash          text        NOT NULL DEFAULT '',
    proof_timestamp  timestamptz NOT NULL,
    status           text        NOT NULL,
    crypto_verified  boolean     NOT NULL,
    note             text        NOT NULL DEFAULT '',
    digest           text        NOT NULL,
    chain_tx_hash    text        NOT NULL DEFAULT '',
    chain_block_hash text        NOT NULL DEFAULT '',
    device_platform  text        NOT NULL DEFAULT '',
    device_version   text        NOT NULL DEFAULT '',
    verified_at      timestamptz,
    expires_at       timestamptz NOT NULL,
    created_at       timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX kyc_proofs_live ON kyc_proofs (account_id, expires_at);

-- +goose Down
DROP TABLE kyc_proofs;
