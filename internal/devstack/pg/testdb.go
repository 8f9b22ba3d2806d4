package pg

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"

	"github.com/jackc/pgx/v5"
)

// TestDatabase gives a test package its own empty database: a fresh
// database on the server named by CONDUIT_TEST_DATABASE_URL when set,
// otherwise a throwaway cluster in a temporary folder. cleanup removes it.
func TestDatabase(ctx context.Context, log *slog.Logger) (dbURL string, cleanup func(), err error) {
	if shared := os.Getenv("CONDUIT_TEST_DATABASE_URL"); shared != "" {
		return freshDatabase(ctx, shared)
	}
	dir, err := os.MkdirTemp("", "conduit-pg-")
	if err != nil {
		return "", func() {}, err
	}
	c, err := Start(ctx, Options{Dir: filepath.Join(dir, "postgres"), Database: "conduit_test", Log: log})
	if err != nil {
		os.RemoveAll(dir)
		return "", func() {}, err
	}
	return c.URL, func() { _ = c.Stop(); os.RemoveAll(dir) }, nil
}

func freshDatabase(ctx context.Context, serverURL string) (string, func(), error) {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	name := "conduit_test_" + hex.EncodeToString(b)
	c, err := pgx.Connect(ctx, serverURL)
	if err != nil {
		return "", func() {}, fmt.Errorf("CONDUIT_TEST_DATABASE_URL is not reachable: %w", err)
	}
	defer c.Close(ctx)
	if _, err := c.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		return "", func() {}, err
	}
	u, err := url.Parse(serverURL)
	if err != nil {
		return "", func() {}, err
	}
	u.Path = "/" + name
	drop := func() {
		c, err := pgx.Connect(context.Background(), serverURL)
		if err != nil {
			return
		}
		defer c.Close(context.Background())
		_, _ = c.Exec(context.Background(), "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)")
	}
	return u.String(), drop, nil
}
