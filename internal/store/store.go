// Package store owns every SQL statement of the service: the pgx pool, the
// embedded migrations and the typed queries the activities and the frontend
// call.
package store

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/lock"

	"conduit/internal/errs"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// Store is the service's handle on PostgreSQL.
type Store struct {
	pool *pgxpool.Pool
}

// Open connects, checks the server answers and applies pending migrations.
// Every process that opens the store migrates; a Postgres advisory lock makes
// concurrent starts (frontend and worker together) safe.
// configure adjusts the pool's configuration first (telemetry's query
// tracer).
func Open(ctx context.Context, url string, maxConns int32, log *slog.Logger, configure ...func(*pgxpool.Config)) (*Store, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("database URL is malformed: %w", err)
	}
	if maxConns > 0 {
		cfg.MaxConns = maxConns
	}
	for _, f := range configure {
		f(cfg)
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("database pool could not be created: %w", err)
	}
	pingCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := pool.Ping(pingCtx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("PostgreSQL at %s:%d is not reachable: %w", cfg.ConnConfig.Host, cfg.ConnConfig.Port, rootCause(err))
	}
	s := &Store{pool: pool}
	if err := s.migrate(ctx, log); err != nil {
		pool.Close()
		return nil, err
	}
	return s, nil
}

func (s *Store) migrate(ctx context.Context, log *slog.Logger) error {
	db := stdlib.OpenDBFromPool(s.pool)
	defer db.Close()
	locker, err := lock.NewPostgresSessionLocker()
	if err != nil {
		return err
	}
	sub, err := fs.Sub(migrationFiles, "migrations")
	if err != nil {
		return err
	}
	p, err := goose.NewProvider(goose.DialectPostgres, db, sub, goose.WithSessionLocker(locker))
	if err != nil {
		return fmt.Errorf("migrations could not be loaded: %w", err)
	}
	results, err := p.Up(ctx)
	if err != nil {
		return fmt.Errorf("database migration failed: %w", err)
	}
	for _, r := range results {
		log.Info("migration applied", "version", r.Source.Version, "file", r.Source.Path, "took", r.Duration)
	}
	return nil
}

// Close releases the pool.
func (s *Store) Close() { s.pool.Close() }

// Stat is the pool's statistics (telemetry reports them).
func (s *Store) Stat() *pgxpool.Stat { return s.pool.Stat() }

// Ping reports whether the database answers.
func (s *Store) Ping(ctx context.Context) error { return s.pool.Ping(ctx) }

// RecordPing stores the wiring probe's row once per workflow id and returns
// when it was first recorded (idempotent under activity retries).
func (s *Store) RecordPing(ctx context.Context, workflowID, message string) (time.Time, error) {
	var at time.Time
	err := s.pool.QueryRow(ctx, `
		INSERT INTO pings (workflow_id, message) VALUES ($1, $2)
		ON CONFLICT (workflow_id) DO UPDATE SET workflow_id = EXCLUDED.workflow_id
		RETURNING created_at`, workflowID, message).Scan(&at)
	return at, err
}

// PingMessage reads back the probe's row.
func (s *Store) PingMessage(ctx context.Context, workflowID string) (string, error) {
	var msg string
	err := s.pool.QueryRow(ctx, `SELECT message FROM pings WHERE workflow_id = $1`, workflowID).Scan(&msg)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", ErrNotFound
	}
	return msg, err
}

// ErrNotFound is returned when a looked-up row does not exist. Like the
// store's other refusals a caller may pass on, it is an errs value, so the
// HTTP layer maps it without knowing the store (unavailable.go classifies
// outages).
var ErrNotFound error = errs.NotFoundf("not found")

// rootCause strips pgx's wrapping so start-up errors read as one sentence.
func rootCause(err error) error {
	for {
		u := errors.Unwrap(err)
		if u == nil {
			return err
		}
		err = u
	}
}

func isForeignKeyViolation(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "23503"
}

// queryList runs a query and scans every row with scan; an empty result is
// an empty, non-nil slice (it marshals as []).
func queryList[T any](ctx context.Context, s *Store, scan func(pgx.Row) (T, error), sql string, args ...any) ([]T, error) {
	rows, err := s.pool.Query(ctx, sql, args...)
	if err != nil {
		return nil, err
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (T, error) { return scan(r) })
	if out == nil && err == nil {
		out = []T{}
	}
	return out, err
}
