package store

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
)

// Pipeline is a pipeline record with its draft.
type Pipeline struct {
	ID             string
	AccountID      string
	Name           string
	Draft          json.RawMessage
	ServingVersion *int
	CreatedAt      time.Time
	UpdatedAt      time.Time
}

// PipelineVersion is a published snapshot.
type PipelineVersion struct {
	PipelineID string
	Version    int
	Graph      json.RawMessage
	CreatedAt  time.Time
	// Note is what the publisher said of the version ("" when nothing).
	Note string
}

const pipelineCols = `id, account_id, name, draft, serving_version, created_at, updated_at`

func scanPipeline(row pgx.Row) (Pipeline, error) {
	var p Pipeline
	err := row.Scan(&p.ID, &p.AccountID, &p.Name, &p.Draft, &p.ServingVersion, &p.CreatedAt, &p.UpdatedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return p, ErrNotFound
	}
	return p, err
}

// CreatePipeline stores a new, unpublished pipeline.
func (s *Store) CreatePipeline(ctx context.Context, account, name string, draft json.RawMessage) (Pipeline, error) {
	return insertPipeline(ctx, s.pool, account, name, draft)
}

func insertPipeline(ctx context.Context, q querier, account, name string, draft json.RawMessage) (Pipeline, error) {
	return scanPipeline(q.QueryRow(ctx, `
		INSERT INTO pipelines (id, account_id, name, draft) VALUES ($1, $2, $3, $4)
		RETURNING `+pipelineCols, NewID("pl"), account, name, draft))
}

// Pipeline reads one pipeline (whoever owns it; callers check ownership).
func (s *Store) Pipeline(ctx context.Context, id string) (Pipeline, error) {
	return scanPipeline(s.pool.QueryRow(ctx, `SELECT `+pipelineCols+` FROM pipelines WHERE id = $1`, id))
}

// Pipelines lists the account's pipelines, oldest first.
func (s *Store) Pipelines(ctx context.Context, account string) ([]Pipeline, error) {
	return queryList(ctx, s, scanPipeline, `SELECT `+pipelineCols+` FROM pipelines WHERE account_id = $1 ORDER BY created_at, id`, account)
}

// SaveDraft replaces the draft (and the name, when not empty). What serves
// does not change.
func (s *Store) SaveDraft(ctx context.Context, id, name string, draft json.RawMessage) (Pipeline, error) {
	return scanPipeline(s.pool.QueryRow(ctx, `
		UPDATE pipelines SET draft = coalesce($2, draft), name = coalesce(nullif($3, ''), name), updated_at = now()
		WHERE id = $1 RETURNING `+pipelineCols, id, draft, name))
}

// Publish snapshots graph as the next version, with its note, and makes
// it serve, in one transaction; concurrent publishes get consecutive
// versions.
func (s *Store) Publish(ctx context.Context, id string, graph json.RawMessage, note string) (PipelineVersion, error) {
	var v PipelineVersion
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var one int
		if err := tx.QueryRow(ctx, `SELECT 1 FROM pipelines WHERE id = $1 FOR UPDATE`, id).Scan(&one); err != nil {
			if errors.Is(err, pgx.ErrNoRows) {
				return ErrNotFound
			}
			return err
		}
		err := tx.QueryRow(ctx, `
			INSERT INTO pipeline_versions (pipeline_id, version, graph, note)
			SELECT $1, coalesce(max(version), 0) + 1, $2, $3 FROM pipeline_versions WHERE pipeline_id = $1
			RETURNING pipeline_id, version, graph, created_at, note`, id, graph, note).Scan(&v.PipelineID, &v.Version, &v.Graph, &v.CreatedAt, &v.Note)
		if err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `UPDATE pipelines SET serving_version = $2, updated_at = now() WHERE id = $1`, id, v.Version)
		return err
	})
	return v, err
}

// Rollback makes an earlier published version serve.
func (s *Store) Rollback(ctx context.Context, id string, version int) error {
	tag, err := s.pool.Exec(ctx, `
		UPDATE pipelines SET serving_version = $2, updated_at = now()
		WHERE id = $1 AND EXISTS (SELECT 1 FROM pipeline_versions WHERE pipeline_id = $1 AND version = $2)`, id, version)
	if err != nil {
		return err
	}
	if tag.RowsAffected() == 0 {
		return ErrNotFound
	}
	return nil
}

// Versions lists a pipeline's published versions, newest first, without
// their graphs.
func (s *Store) Versions(ctx context.Context, id string) ([]PipelineVersion, error) {
	return queryList(ctx, s, func(r pgx.Row) (PipelineVersion, error) {
		var v PipelineVersion
		err := r.Scan(&v.PipelineID, &v.Version, &v.CreatedAt, &v.Note)
		return v, err
	}, `SELECT pipeline_id, version, created_at, note FROM pipeline_versions WHERE pipeline_id = $1 ORDER BY version DESC`, id)
}

// Version reads one published snapshot.
func (s *Store) Version(ctx context.Context, id string, version int) (PipelineVersion, error) {
	var v PipelineVersion
	err := s.pool.QueryRow(ctx, `SELECT pipeline_id, version, graph, created_at, note FROM pipeline_versions WHERE pipeline_id = $1 AND version = $2`, id, version).
		Scan(&v.PipelineID, &v.Version, &v.Graph, &v.CreatedAt, &v.Note)
	if errors.Is(err, pgx.ErrNoRows) {
		return v, ErrNotFound
	}
	return v, err
}
