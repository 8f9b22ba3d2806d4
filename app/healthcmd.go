package app

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"conduit/internal/config"
	"conduit/internal/temporalx"
)

// healthCommand is a process's readiness from the inside, for a role that
// serves no HTTP (the worker's Kubernetes readiness probe): PostgreSQL and
// Temporal, as configured, both answer. It never migrates.
func healthCommand() Command {
	return Command{
		Summary: "check that PostgreSQL and Temporal answer (a readiness probe); exit 0 or 1",
		Help:    "Reads the same settings as the frontend and worker (database.url, temporal.*)\nand exits 0 when both answer within ten seconds, 1 otherwise, saying which is down.",
		Run: func(ctx context.Context, env *Env, _ []string) error {
			if err := env.Config.ValidateProduction(); err != nil {
				return err
			}
			ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			defer cancel()
			conn, err := pgx.Connect(ctx, env.Config.Database.URL)
			if err == nil {
				err = conn.Ping(ctx)
				conn.Close(context.Background())
			}
			if err != nil {
				return fmt.Errorf("PostgreSQL is unreachable (%s_DATABASE_URL): %w", config.EnvPrefix, err)
			}
			tc, err := temporalx.Connect(ctx, env.Config.Temporal, env.Log)
			if err != nil {
				return err
			}
			tc.Close()
			fmt.Fprintln(env.Stdout, "ok: PostgreSQL and Temporal answer")
			return nil
		},
	}
}
