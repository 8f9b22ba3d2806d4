-- +goose Up
-- zkPassport verification requests (internal/zkpassport). A row is written
-- by the request's workflow when it is admitted (its account's open
-- requests bounded in the same statement), closed by a verification
-- (verified, unconfirmed: every level but the cryptographic one passed,
-- failed) or by the workflow at its expiry.
CREATE TABLE zkpassport_requests (
    id           text        PRIMARY KEY,
    account_id   text        NOT NULL REFERENCES accounts (id),
    domain       text        NOT NULL,
    scope        text        NOT NULL,
    name         text        NOT NULL,
    logo         text        NOT NULL DEFAULT '',
    purpose      text        NOT NULL,
    mode         text        NOT NULL,
    query        jsonb       NOT NULL,
    status       text        NOT NULL DEFAULT 'open'
                 CHECK (status IN ('open', 'verified', 'unconfirmed', 'failed', 'expired')),
    attempts     integer     NOT NULL DEFAULT 0,
    created_at   timestamptz NOT NULL,
    expires_at   timestamptz NOT NULL,
    closed_at    timestamptz,
    result       jsonb
);

CREATE INDEX zkpassport_requests_open ON zkpassport_requests (account_id) WHERE status = 'open';

-- +goose Down
DROP TABLE zkpassport_requests;
