-- +goose Up
-- The bytes a running media job may add to its account's library
-- (media.library.max_output_bytes, or the import limit): the quota check at
-- admission counts them beside the stored items, so jobs admitted together
-- cannot overrun it. Zero once the job has finished (or for jobs admitted
-- before the quota).
ALTER TABLE media_jobs ADD COLUMN reserve_bytes bigint NOT NULL DEFAULT 0 CHECK (reserve_bytes >= 0);
-- The quota check and the per-account share count an account's running jobs.
CREATE INDEX media_jobs_running ON media_jobs (account_id) WHERE status = 'running';

-- +goose Down
DROP INDEX media_jobs_running;
ALTER TABLE media_jobs DROP COLUMN reserve_bytes;
