-- +goose Up
-- Every settled x402 payment, once: unique per settled transaction and per
-- authorization (payer + nonce), so a payment can never be counted twice
-- even after Temporal's retention has forgotten its workflow.
CREATE TABLE payments (
    id             bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    network        text        NOT NULL,
    transaction    text        NOT NULL,
    payer          text        NOT NULL,
    nonce          text        NOT NULL,
    amount_micros  bigint      NOT NULL CHECK (amount_micros > 0),
    resource       text        NOT NULL,
    account_id     text REFERENCES accounts (id),
    settled_at     timestamptz NOT NULL DEFAULT now(),
    UNIQUE (network, transaction),
    UNIQUE (network, payer, nonce)
);

-- +goose Down
DROP TABLE payments;
