-- +goose Up
-- A published version's note: what its publisher said changed (empty when
-- none was given).
ALTER TABLE pipeline_versions ADD COLUMN note text NOT NULL DEFAULT '';

-- +goose Down
ALTER TABLE pipeline_versions DROP COLUMN note;
