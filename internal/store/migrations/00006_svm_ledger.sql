-- +goose Up
-- The embedded Solana network's token ledger: balances per (mint, owner)
-- and every settled transfer once, by its transaction signature. It lives
-- in PostgreSQL, so it persists across restarts of the dev command.
CREATE TABLE svm_balances (
    mint   text   NOT NULL,
    owner  text   NOT NULL,
    amount bigint NOT NULL CHECK (amount >= 0),
    PRIMARY KEY (mint, owner)
);

CREATE TABLE svm_transfers (
    signature  text PRIMARY KEY,
    mint       text        NOT NULL,
    from_owner text        NOT NULL,
    to_owner   text        NOT NULL,
    amount     bigint      NOT NULL CHECK (amount > 0),
    created_at timestamptz NOT NULL DEFAULT now()
);

-- +goose Down
DROP TABLE svm_transfers;
DROP TABLE svm_balances;
