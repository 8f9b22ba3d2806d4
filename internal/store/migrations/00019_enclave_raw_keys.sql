-- +goose Up
-- The deprecated raw-key signer of an enclave (internal/signer.RawKey):
-- keys configured from outside the enclave, sealed with AES-256-GCM
-- (enclaves.secret_keys; the key id and the enclave id bound as additional
-- data), never returned. While a row exists the enclave's signer is
-- "deprecated": these keys sign instead of the enclave, with a warning.
CREATE TABLE enclave_raw_keys (
    enclave_id        text PRIMARY KEY REFERENCES enclaves (id) ON DELETE CASCADE,
    sealed            bytea       NOT NULL,
    evm_address       text        NOT NULL DEFAULT '',
    solana_public_key text        NOT NULL DEFAULT '',
    created_at        timestamptz NOT NULL DEFAULT now()
);

-- +goose Down
DROP TABLE enclave_raw_keys;
