-- +goose Up
-- Tokens of a streamed run, written by the worker as the model produces
-- them and read by whichever frontend holds the client's stream (woken by
-- NOTIFY run_deltas). Rows are only needed while a stream is open.
CREATE TABLE run_deltas (
    run_id     text        NOT NULL,
    seq        bigint      NOT NULL,
    text       text        NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (run_id, seq)
);

-- +goose Down
DROP TABLE run_deltas;
