-- +goose Up
-- The last failed attempt of a provisioning step that is being retried
-- (a registry or git host that is down): the enclave stays BUILDING or
-- DEPLOYING and says why. Cleared by the workflow's next projection.
ALTER TABLE enclaves
    ADD COLUMN last_failure         text        NOT NULL DEFAULT '',
    ADD COLUMN last_failure_attempt integer     NOT NULL DEFAULT 0,
    ADD COLUMN last_failure_at      timestamptz;

-- +goose Down
ALTER TABLE enclaves
    DROP COLUMN last_failure,
    DROP COLUMN last_failure_attempt,
    DROP COLUMN last_failure_at;
