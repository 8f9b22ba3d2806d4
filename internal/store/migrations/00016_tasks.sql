-- +goose Up
-- Scheduled tasks (internal/tasks, docs/tasks.md): one row per task; each
-- is the Temporal Schedule task/<id>, whose paused state follows status
-- (running: active; stopped, failed, pending: paused). enclave_id is not a
-- foreign key: a task outlives its enclave's record (it stays pending with
-- a reason until deleted). A deleted task keeps its row (deleted_at) so its
-- runs stay readable.
CREATE TABLE tasks (
    id                    text PRIMARY KEY,
    account_id            text        NOT NULL REFERENCES accounts (id),
    enclave_id            text        NOT NULL,
    name                  text        NOT NULL,
    description           text        NOT NULL DEFAULT '',
    schedule              text        NOT NULL,
    timezone              text        NOT NULL DEFAULT 'UTC',
    request               jsonb       NOT NULL,
    overlap               text        NOT NULL DEFAULT 'skip',
    catchup_seconds       integer     NOT NULL,
    jitter_seconds        integer     NOT NULL DEFAULT 0,
    failure_threshold     integer     NOT NULL,
    status                text        NOT NULL CHECK (status IN ('running', 'stopped', 'failed', 'pending')),
    status_reason         text        NOT NULL DEFAULT '',
    consecutive_failures  integer     NOT NULL DEFAULT 0,
    last_run_id           text,
    created_at            timestamptz NOT NULL DEFAULT now(),
    updated_at            timestamptz NOT NULL DEFAULT now(),
    deleted_at            timestamptz
);
CREATE INDEX tasks_account ON tasks (account_id, created_at) WHERE deleted_at IS NULL;
CREATE INDEX tasks_enclave ON tasks (enclave_id) WHERE deleted_at IS NULL;

-- One row per firing (the TaskRun workflow task-run/<task>-<time>); its id
-- is the workflow id, so a retried record step writes it once.
CREATE TABLE task_runs (
    id            text PRIMARY KEY,
    task_id       text        NOT NULL REFERENCES tasks (id),
    scheduled_at  timestamptz NOT NULL,
    started_at    timestamptz NOT NULL,
    duration_ms   bigint      NOT NULL,
    outcome       text        NOT NULL CHECK (outcome IN ('success', 'failure', 'timeout', 'skipped')),
    http_status   integer     NOT NULL DEFAULT 0,
    result        text        NOT NULL DEFAULT '',
    truncated     boolean     NOT NULL DEFAULT false,
    recorded_at   timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX task_runs_task ON task_runs (task_id, started_at DESC);

-- +goose Down
DROP TABLE task_runs;
DROP TABLE tasks;
