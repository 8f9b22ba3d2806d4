package store_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"testing"

	"conduit/internal/devstack/pg"
	"conduit/internal/store"
)

var (
	st *store.Store
	db *pg.TestDB
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	ctx := context.Background()
	log := slog.New(slog.DiscardHandler)
	var err error
	db, err = pg.NewTestDB(ctx, log)
	if err != nil {
		fmt.Fprintln(os.Stderr, "store tests: PostgreSQL could not start:", err)
		return 1
	}
	defer db.Close()
	st, err = store.Open(ctx, db.URL, 40, log)
	if err != nil {
		fmt.Fprintln(os.Stderr, "store tests:", err)
		return 1
	}
	defer st.Close()
	return m.Run()
}
