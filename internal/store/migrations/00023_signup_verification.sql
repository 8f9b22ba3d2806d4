-- +goose Up
-- Sign-up grants its free credit only once the email is verified
-- (docs/accounts.md). Logins made before this migration were opened with
-- their credit already granted: they count as verified.
ALTER TABLE logins ADD COLUMN email_verified_at timestamptz;
UPDATE logins SET email_verified_at = created_at;

-- The outbox: every message the platform mails, written in the same
-- transaction as what it tells (a sign-up), then delivered by the
-- workflow mail/<id> (or, with the dev command, shown on its mailbox page).
CREATE TABLE outbox (
    id         text        PRIMARY KEY,
    kind       text        NOT NULL,
    recipient  text        NOT NULL,
    subject    text        NOT NULL,
    body       text        NOT NULL,
    link       text        NOT NULL DEFAULT '',
    created_at timestamptz NOT NULL DEFAULT now(),
    sent_at    timestamptz,
    attempts   integer     NOT NULL DEFAULT 0,
    last_error text        NOT NULL DEFAULT ''
);
CREATE INDEX outbox_unsent ON outbox (created_at) WHERE sent_at IS NULL;
CREATE INDEX outbox_recent ON outbox (created_at DESC);

-- +goose Down
DROP TABLE outbox;
ALTER TABLE logins DROP COLUMN email_verified_at;
