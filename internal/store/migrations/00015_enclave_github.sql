-- +goose Up
-- github-sourced enclaves (docs/enclaves.md, "Building from github"): the
-- image the build pushed, by digest, and the commit it was built from.
-- The deployment pulls built_image; both stay empty for registry sources.
-- (The github connection and its sealed token have their columns since
-- 00013.)
ALTER TABLE enclaves
    ADD COLUMN built_image  text NOT NULL DEFAULT '',
    ADD COLUMN built_commit text NOT NULL DEFAULT '';

-- +goose Down
ALTER TABLE enclaves DROP COLUMN built_commit, DROP COLUMN built_image;
