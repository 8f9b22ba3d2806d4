-- +goose Up
-- Runs are admitted by their own workflow (its first step writes the row
-- and the hold), so the row names that workflow. An Idempotency-Key is
-- scoped to one pipeline and bound to a hash of the request it first
-- came with: the same key with another body is refused, and the same key
-- on another pipeline is another request.
ALTER TABLE runs ADD COLUMN workflow_id text;
UPDATE runs SET workflow_id = 'pipeline-run/' || run_id;
ALTER TABLE runs ALTER COLUMN workflow_id SET NOT NULL;
ALTER TABLE runs ADD COLUMN request_hash text NOT NULL DEFAULT '';
DROP INDEX runs_idempotency;
CREATE UNIQUE INDEX runs_idempotency ON runs (account_id, pipeline_id, idempotency_key) WHERE idempotency_key IS NOT NULL;

-- +goose Down
DROP INDEX runs_idempotency;
CREATE UNIQUE INDEX runs_idempotency ON runs (account_id, idempotency_key) WHERE idempotency_key IS NOT NULL;
ALTER TABLE runs DROP COLUMN request_hash;
ALTER TABLE runs DROP COLUMN workflow_id;
