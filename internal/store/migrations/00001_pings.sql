-- +goose Up
-- Wiring probe: the Ping workflow records one row per workflow id, so the
-- end-to-end test proves frontend → Temporal → worker → Postgres.
CREATE TABLE pings (
    workflow_id text PRIMARY KEY,
    message     text        NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now()
);

-- +goose Down
DROP TABLE pings;
