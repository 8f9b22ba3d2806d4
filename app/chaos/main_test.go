// Package chaos_test runs the kill -9 campaign (#14): the real API, a real
// PostgreSQL and Temporal server from the test harness, and the worker as a
// separate OS process — the production binary's `conduit worker` — that the
// campaign SIGKILLs at random points while pipeline runs, paid renders and
// top-ups are in flight.
package chaos_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"conduit/app/apptest"
)

var (
	env *apptest.Env
	// bin is the production binary (cmd/conduit), built once.
	bin string
)

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "conduit-chaos-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	bin = filepath.Join(dir, "conduit")
	build := exec.Command("go", "build", "-o", bin, "./cmd/conduit")
	build.Dir = "../.."
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "building the worker binary failed: %v\n%s", err, out)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	// The campaigns run on the production-shaped Temporal store (its
	// PostgreSQL databases beside the platform's), unless the environment
	// names one: the scale-out test is the deployment's shape.
	if os.Getenv(apptest.TemporalStoreEnv) == "" {
		os.Setenv(apptest.TemporalStoreEnv, "postgres")
	}
	code := apptest.Run(m, &env)
	os.RemoveAll(dir)
	os.Exit(code)
}
