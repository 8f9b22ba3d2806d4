-- +goose Up
-- Card checkouts of credit packs (docs/accounts.md, "Card payments"). A row
-- is written when the buyer is sent to pay (the local checkout page or the
-- provider's hosted page); the pack is granted from this row, never from
-- what a webhook claims: its account and price are ours.
CREATE TABLE checkout_sessions (
    -- The provider's session id (cs_test_… for the local checkout).
    id             text PRIMARY KEY,
    provider       text        NOT NULL CHECK (provider IN ('local', 'stripe')),
    account_id     text        NOT NULL REFERENCES accounts (id),
    -- The pack bought, by its price in whole USD ("10", "25", "50").
    pack           text        NOT NULL,
    price_micros   bigint      NOT NULL CHECK (price_micros > 0),
    credit_micros  bigint      NOT NULL CHECK (credit_micros > 0),
    currency       text        NOT NULL DEFAULT 'usd',
    status         text        NOT NULL CHECK (status IN ('open', 'complete', 'expired')),
    payment_status text        NOT NULL DEFAULT 'unpaid' CHECK (payment_status IN ('unpaid', 'paid')),
    -- Where the buyer pays, and where the checkout sends them back.
    url            text        NOT NULL,
    success_url    text        NOT NULL,
    cancel_url     text        NOT NULL,
    created_at     timestamptz NOT NULL DEFAULT now(),
    expires_at     timestamptz NOT NULL,
    completed_at   timestamptz
);
CREATE INDEX checkout_sessions_account ON checkout_sessions (account_id, created_at DESC);

-- Every verified webhook event, once per event id, as it arrived (body and
-- Stripe-Signature header): what the provider told us, for audit and for
-- replaying an event in development.
CREATE TABLE checkout_events (
    id          text PRIMARY KEY,
    session_id  text        NOT NULL,
    type        text        NOT NULL,
    payload     bytea       NOT NULL,
    signature   text        NOT NULL,
    received_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX checkout_events_session ON checkout_events (session_id, received_at);

-- The dashboard's run history lists an account's runs over all its
-- pipelines, newest first.
CREATE INDEX runs_account ON runs (account_id, started_at DESC, run_id DESC);

-- +goose Down
DROP INDEX runs_account;
DROP TABLE checkout_events;
DROP TABLE checkout_sessions;
