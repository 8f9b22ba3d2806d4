-- +goose Up
-- An account's media library (docs/media.md): files its pipeline runs
-- generated, files it imported from a URL, and files it assembled or
-- edited from other items. The file itself is in the blob store under
-- blob_key; the row says what it is and where it came from.
CREATE TABLE media_items (
    id            text PRIMARY KEY,
    account_id    text        NOT NULL REFERENCES accounts (id),
    kind          text        NOT NULL CHECK (kind IN ('video', 'audio', 'image')),
    content_type  text        NOT NULL,
    size_bytes    bigint      NOT NULL CHECK (size_bytes >= 0),
    -- NULL for images.
    duration_ms   bigint      CHECK (duration_ms >= 0),
    -- NULL for audio.
    width         integer     CHECK (width > 0),
    height        integer     CHECK (height > 0),
    -- Whether the file has a sound track (always for audio).
    has_audio     boolean     NOT NULL,
    blob_key      text        NOT NULL UNIQUE,
    -- Provenance. generated: by run_id's node node_id (operation is the
    -- node kind: speech, music, video); imported: from source_url;
    -- assembled or edited: from source_items by operation with params.
    -- Source items are named, not referenced: they may be deleted later.
    origin        text        NOT NULL CHECK (origin IN ('generated', 'imported', 'assembled', 'edited')),
    run_id        text,
    pipeline_id   text,
    node_id       text,
    source_url    text,
    source_items  text[]      NOT NULL DEFAULT '{}',
    operation     text        NOT NULL,
    params        jsonb       NOT NULL DEFAULT '{}',
    -- The job (media-edit workflow) that made it; NULL for generated items.
    job_id        text UNIQUE,
    -- What making it was charged.
    price_micros  bigint      NOT NULL DEFAULT 0 CHECK (price_micros >= 0),
    created_at    timestamptz NOT NULL DEFAULT now(),
    CHECK ((origin = 'generated') = (run_id IS NOT NULL AND node_id IS NOT NULL AND job_id IS NULL)),
    CHECK ((origin = 'imported') = (source_url IS NOT NULL))
);
-- A run's node makes one item, whatever retries.
CREATE UNIQUE INDEX media_items_node ON media_items (run_id, node_id) WHERE run_id IS NOT NULL;
-- Listing pages, newest first.
CREATE INDEX media_items_account ON media_items (account_id, created_at DESC, id DESC);

-- Imports, assemblies and edits: one row per media-edit/<id> workflow,
-- written by its first step (with the hold of its price) and finished by
-- its last, in the same transaction as the item it made and the capture
-- (or release) of the hold.
CREATE TABLE media_jobs (
    id              text PRIMARY KEY,
    account_id      text        NOT NULL REFERENCES accounts (id),
    kind            text        NOT NULL CHECK (kind IN ('import', 'assemble', 'edit')),
    operation       text        NOT NULL,
    source_items    text[]      NOT NULL DEFAULT '{}',
    source_url      text,
    params          jsonb       NOT NULL DEFAULT '{}',
    status          text        NOT NULL CHECK (status IN ('running', 'success', 'error')),
    item_id         text REFERENCES media_items (id) ON DELETE SET NULL,
    error           text        NOT NULL DEFAULT '',
    price_micros    bigint      NOT NULL DEFAULT 0 CHECK (price_micros >= 0),
    hold_id         text        NOT NULL DEFAULT '',
    idempotency_key text,
    request_hash    text        NOT NULL DEFAULT '',
    created_at      timestamptz NOT NULL,
    finished_at     timestamptz
);
CREATE UNIQUE INDEX media_jobs_idempotency ON media_jobs (account_id, idempotency_key) WHERE idempotency_key IS NOT NULL;
CREATE INDEX media_jobs_account ON media_jobs (account_id, created_at DESC);

-- +goose Down
DROP TABLE media_jobs;
DROP TABLE media_items;
