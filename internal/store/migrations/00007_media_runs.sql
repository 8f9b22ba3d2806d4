-- +goose Up
-- A pay-per-call payment is credited to the paying wallet's account and the
-- render holds its price from there: a success captures it, a failure
-- releases it (so the credit stays for the free retry).
ALTER TABLE ledger_entries DROP CONSTRAINT ledger_entries_kind_check;
ALTER TABLE ledger_entries ADD CONSTRAINT ledger_entries_kind_check
    CHECK (kind IN ('free_grant', 'topup', 'pack', 'hold', 'release', 'charge', 'refund', 'grant', 'payment'));

-- Pay-per-call renders (video, speech, music): written when the payment is
-- settled (or a retry is accepted) and when the render workflow finishes,
-- in the same transaction as the capture or release of its hold.
CREATE TABLE media_runs (
    run_id        text PRIMARY KEY,
    kind          text        NOT NULL CHECK (kind IN ('video', 'speech', 'music')),
    status        text        NOT NULL CHECK (status IN ('running', 'success', 'error', 'partial', 'cancelled')),
    -- The request as sold (model, length, prompt, image, voice, ...).
    request       jsonb       NOT NULL,
    -- Hash of the request's buying-relevant fields: "the same request".
    request_hash  text        NOT NULL,
    network       text        NOT NULL,
    payer         text        NOT NULL,
    account_id    text        NOT NULL REFERENCES accounts (id),
    -- The settled payment; NULL on a retry (paid from the balance).
    transaction   text,
    paid_micros   bigint      NOT NULL CHECK (paid_micros >= 0),
    price_micros  bigint      NOT NULL CHECK (price_micros > 0),
    hold_id       text        NOT NULL,
    file_key      text,
    note          text        NOT NULL DEFAULT '',
    reason        text        NOT NULL DEFAULT '',
    error         text        NOT NULL DEFAULT '',
    failed_step   text        NOT NULL DEFAULT '',
    message       text        NOT NULL DEFAULT '',
    retry_of      text REFERENCES media_runs (run_id),
    retried_by    text REFERENCES media_runs (run_id),
    -- When the finished file first reached the caller (a complete answer
    -- carrying its URL, or a download of the file).
    delivered_at  timestamptz,
    started_at    timestamptz NOT NULL,
    finished_at   timestamptz,
    CHECK ((transaction IS NULL) = (retry_of IS NOT NULL))
);
-- One retry per failed run, whatever races.
CREATE UNIQUE INDEX media_runs_retry_of ON media_runs (retry_of) WHERE retry_of IS NOT NULL;
CREATE UNIQUE INDEX media_runs_payment ON media_runs (network, transaction) WHERE transaction IS NOT NULL;
CREATE INDEX media_runs_payer ON media_runs (network, payer, started_at DESC);
CREATE INDEX media_runs_file ON media_runs (file_key) WHERE file_key IS NOT NULL;

-- +goose Down
DROP TABLE media_runs;
DELETE FROM ledger_entries WHERE kind = 'payment';
ALTER TABLE ledger_entries DROP CONSTRAINT ledger_entries_kind_check;
ALTER TABLE ledger_entries ADD CONSTRAINT ledger_entries_kind_check
    CHECK (kind IN ('free_grant', 'topup', 'pack', 'hold', 'release', 'charge', 'refund', 'grant'));
