-- +goose Up
-- The bytes an enclave's unpacked image takes on its provider's disk
-- (set when it is prepared, 0 once terminated): an account's enclave data
-- usage, readable where the provider's disk is not (the frontend).
ALTER TABLE enclaves ADD COLUMN disk_bytes bigint NOT NULL DEFAULT 0;

-- +goose Down
ALTER TABLE enclaves DROP COLUMN disk_bytes;
