-- +goose Up
-- Sign-In-With-X challenges: every nonce we hand out, so a proof is only
-- accepted for a nonce we issued, once, before it expires.
CREATE TABLE siwx_nonces (
    nonce      text PRIMARY KEY,
    issued_at  timestamptz NOT NULL DEFAULT now(),
    expires_at timestamptz NOT NULL,
    used_at    timestamptz
);
CREATE INDEX siwx_nonces_expires ON siwx_nonces (expires_at);
-- Listing a wallet's top-ups.
CREATE INDEX payments_payer ON payments (network, lower(payer), settled_at DESC);

-- +goose Down
DROP INDEX payments_payer;
DROP TABLE siwx_nonces;
