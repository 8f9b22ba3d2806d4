package store_test

import (
	"context"
	"errors"
	"io"
	"testing"
	"time"

	"conduit/app/apptest/wait"
	"conduit/internal/store"
)

// Unavailable tells an outage from a failed statement, on the errors a
// real server gives: the pool's idle connections after the server went
// away, new connections refused, and a statement PostgreSQL rejects.
func TestUnavailableTellsAnOutageFromAFailedStatement(t *testing.T) {
	ctx := context.Background()
	if _, err := st.Version(ctx, "pl_x", 1<<40); err == nil || store.Unavailable(err) {
		t.Fatalf("an out-of-range parameter is a failed statement, not an outage: %v", err)
	}
	for _, err := range []error{store.ErrNotFound, io.EOF, context.Canceled, errors.New("conn closed")} {
		if store.Unavailable(err) {
			t.Fatalf("%v is not an outage", err)
		}
	}
	// Warm the pool, so the outage also meets connections it already holds.
	for range 5 {
		if err := st.Ping(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Stop(); err != nil {
		t.Fatal(err)
	}
	restarted := false
	t.Cleanup(func() {
		if !restarted {
			_ = db.Start(context.Background())
		}
	})
	for i := range 5 {
		_, err := st.Balance(ctx, "acct_nobody")
		t.Logf("call %d: %T %v", i, err, err)
		if !store.Unavailable(err) {
			t.Fatalf("call %d during the outage: %T %v is not classified as unavailable", i, err, err)
		}
	}
	if err := db.Start(ctx); err != nil {
		t.Fatal(err)
	}
	restarted = true
	// The pool reconnects by itself.
	wait.Eventually(t, 30*time.Second, "the store to recover", func() error {
		if _, err := st.Balance(ctx, "acct_nobody"); !errors.Is(err, store.ErrNotFound) {
			return err
		}
		return nil
	})
}
