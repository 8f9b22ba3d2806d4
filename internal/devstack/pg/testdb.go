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
	"sync"

	"github.com/jackc/pgx/v5"
)

// TestDB is a test package's own empty database: a fresh database on the
// server named by CONDUIT_TEST_DATABASE_URL when set, otherwise a
// throwaway cluster in a temporary folder. Stop and Start play a database
// outage for tests of what depends on it.
type TestDB struct {
	URL string

	mu      sync.Mutex
	cluster *Cluster // the throwaway cluster (nil on a shared server)
	opts    Options
	// On a shared server an outage is the database refusing connections.
	serverURL, name string
	cleanup         func()
}

// TestDatabase gives a test package its own empty database (see TestDB);
// cleanup removes it.
func TestDatabase(ctx context.Context, log *slog.Logger) (dbURL string, cleanup func(), err error) {
	db, err := NewTestDB(ctx, log)
	if err != nil {
		return "", func() {}, err
	}
	return db.URL, db.Close, nil
}

// NewTestDB starts a test package's database.
func NewTestDB(ctx context.Context, log *slog.Logger) (*TestDB, error) {
	if shared := os.Getenv("CONDUIT_TEST_DATABASE_URL"); shared != "" {
		return freshDatabase(ctx, shared)
	}
	dir, err := os.MkdirTemp("", "conduit-pg-")
	if err != nil {
		return nil, err
	}
	opts := Options{Dir: filepath.Join(dir, "postgres"), Database: "conduit_test", Log: log}
	c, err := Start(ctx, opts)
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	opts.Port = c.Port // a restart comes back where clients expect it
	db := &TestDB{URL: c.URL, cluster: c, opts: opts}
	db.cleanup = func() {
		db.mu.Lock()
		defer db.mu.Unlock()
		_ = db.cluster.Stop()
		os.RemoveAll(dir)
	}
	return db, nil
}

// Stop makes the database unreachable, as an outage would: the throwaway
// cluster shuts down (fast: sessions are ended), or on a shared server the
// database stops accepting connections and its sessions are ended.
func (d *TestDB) Stop() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.cluster != nil {
		return d.cluster.Stop()
	}
	return d.admin(context.Background(),
		"ALTER DATABASE "+pgx.Identifier{d.name}.Sanitize()+" ALLOW_CONNECTIONS false",
		"SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '"+d.name+"' AND pid <> pg_backend_pid()")
}

// Start ends the outage: the cluster starts again on the same folder and
// port (waiting until it accepts connections), or the shared database
// accepts connections again.
func (d *TestDB) Start(ctx context.Context) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.cluster != nil {
		c, err := Start(ctx, d.opts)
		if err != nil {
			return err
		}
		d.cluster = c
		return nil
	}
	return d.admin(ctx, "ALTER DATABASE "+pgx.Identifier{d.name}.Sanitize()+" ALLOW_CONNECTIONS true")
}

// Close removes the database.
func (d *TestDB) Close() { d.cleanup() }

func (d *TestDB) admin(ctx context.Context, statements ...string) error {
	c, err := pgx.Connect(ctx, d.serverURL)
	if err != nil {
		return err
	}
	defer c.Close(ctx)
	for _, s := range statements {
		if _, err := c.Exec(ctx, s); err != nil {
			return err
		}
	}
	return nil
}

func freshDatabase(ctx context.Context, serverURL string) (*TestDB, error) {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	name := "conduit_test_" + hex.EncodeToString(b)
	c, err := pgx.Connect(ctx, serverURL)
	if err != nil {
		return nil, fmt.Errorf("CONDUIT_TEST_DATABASE_URL is not reachable: %w", err)
	}
	defer c.Close(ctx)
	if _, err := c.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		return nil, err
	}
	u, err := url.Parse(serverURL)
	if err != nil {
		return nil, err
	}
	u.Path = "/" + name
	db := &TestDB{URL: u.String(), serverURL: serverURL, name: name}
	db.cleanup = func() {
		c, err := pgx.Connect(context.Background(), serverURL)
		if err != nil {
			return
		}
		defer c.Close(context.Background())
		_, _ = c.Exec(context.Background(), "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)")
	}
	return db, nil
}
