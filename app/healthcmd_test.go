package app_test

import (
	"log/slog"
	"strconv"
	"testing"

	"conduit/app"
	"conduit/internal/devstack/pg"
)

// `conduit health`, the worker's readiness probe in deploy/helm: it
// passes while PostgreSQL and Temporal answer and fails, exit 1, when
// either does not.
func TestHealthCommand(t *testing.T) {
	defer slog.SetDefault(slog.Default()) // Main installs its own logger
	port, err := pg.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	closed := "127.0.0.1:" + strconv.Itoa(port)
	for _, c := range []struct {
		name, db, temporal string
		want               int
	}{
		{"both answer", env.Config.Database.URL, env.Config.Temporal.Address, 0},
		{"PostgreSQL is down", "postgres://conduit@" + closed + "/conduit?sslmode=disable&connect_timeout=2", env.Config.Temporal.Address, 1},
		{"Temporal is down", env.Config.Database.URL, closed, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Setenv("CONDUIT_DATABASE_URL", c.db)
			t.Setenv("CONDUIT_TEMPORAL_ADDRESS", c.temporal)
			t.Setenv("CONDUIT_TEMPORAL_NAMESPACE", env.Config.Temporal.Namespace)
			t.Setenv("CONDUIT_LOG_LEVEL", "error")
			if got := app.Main("conduit", []string{"health"}, app.ProductionCommands()); got != c.want {
				t.Fatalf("exit %d, want %d", got, c.want)
			}
		})
	}
}
