package devstack

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"path"
	"strings"

	"conduit/internal/devstack/pg"
	"go.temporal.io/server/common/config"
	tlog "go.temporal.io/server/common/log"
	"go.temporal.io/server/common/metrics"
	"go.temporal.io/server/common/persistence"
	tsql "go.temporal.io/server/common/persistence/sql"
	"go.temporal.io/server/common/persistence/sql/sqlplugin"
	pgplugin "go.temporal.io/server/common/persistence/sql/sqlplugin/postgresql"
	"go.temporal.io/server/common/resolver"
	dbschemas "go.temporal.io/server/schema"
	pgschema "go.temporal.io/server/schema/postgresql/v12"
)

// The PostgreSQL store's two databases, as suffixes of the database
// PostgresURL names.
const (
	historySchema      = "postgresql/v12/temporal"
	temporalDBSuffix   = "_temporal"
	visibilityDBSuffix = "_temporal_visibility"
)

// postgresPersistence keeps the server's state in two databases on
// PostgresURL's server (history and visibility, as a production cluster
// does), created with the server's own schema on first use.
func postgresPersistence(ctx context.Context, o TemporalOptions) (config.Persistence, error) {
	if o.PostgresURL == "" {
		return config.Persistence{}, fmt.Errorf("the PostgreSQL Temporal store needs a database URL")
	}
	u, err := url.Parse(o.PostgresURL)
	if err != nil {
		return config.Persistence{}, fmt.Errorf("the PostgreSQL Temporal store: %w", err)
	}
	base := strings.TrimPrefix(u.Path, "/")
	if base == "" {
		return config.Persistence{}, fmt.Errorf("the PostgreSQL Temporal store: %s names no database", u.Redacted())
	}
	password, _ := u.User.Password()
	sqlConf := func(db string, conns int) *config.SQL {
		return &config.SQL{
			PluginName:      pgplugin.PluginNamePGX,
			DatabaseName:    db,
			ConnectAddr:     u.Host,
			ConnectProtocol: "tcp",
			User:            u.User.Username(),
			Password:        password,
			// Four services each open a pool per store.
			MaxConns:     conns,
			MaxIdleConns: conns,
		}
	}
	history := sqlConf(base+temporalDBSuffix, 10)
	visibility := sqlConf(base+visibilityDBSuffix, 4)
	for _, s := range []struct {
		conf    *config.SQL
		schema  string
		version string
	}{
		{history, historySchema, pgschema.Version},
		{visibility, "postgresql/v12/visibility", pgschema.VisibilityVersion},
	} {
		if err := pg.EnsureDatabase(ctx, o.PostgresURL, s.conf.DatabaseName); err != nil {
			return config.Persistence{}, fmt.Errorf("Temporal database %s could not be created: %w", s.conf.DatabaseName, err)
		}
		if err := setupPostgresSchema(s.conf, s.schema, s.version); err != nil {
			return config.Persistence{}, fmt.Errorf("Temporal schema could not be created in %s: %w", s.conf.DatabaseName, err)
		}
	}
	return config.Persistence{
		DefaultStore:    "postgres",
		VisibilityStore: "postgres-visibility",
		DataStores: map[string]config.DataStore{
			"postgres":            {SQL: history},
			"postgres-visibility": {SQL: visibility},
		},
	}, nil
}

// setupPostgresSchema applies the server's embedded schema (its latest
// version, recorded as such, as the server's SQL tool does) to an empty
// database; a database that has a schema version is left as it is.
func setupPostgresSchema(conf *config.SQL, schema, version string) error {
	db, err := tsql.NewSQLAdminDB(sqlplugin.DbKindUnknown, conf, resolver.NewNoopResolver(), tlog.NewNoopLogger(), metrics.NoopMetricsHandler)
	if err != nil {
		return err
	}
	defer db.Close()
	if v, err := db.ReadSchemaVersion(conf.DatabaseName); err == nil && v != "" {
		if schema == historySchema {
			// As forgetMembers does for the SQLite file: every member an
			// earlier process recorded is a dead address.
			return db.Exec(`DELETE FROM cluster_membership`)
		}
		return nil
	}
	if err := db.CreateSchemaVersionTables(); err != nil {
		return err
	}
	text, err := fs.ReadFile(dbschemas.Assets(), path.Join(schema, "schema.sql"))
	if err != nil {
		return err
	}
	stmts, err := persistence.LoadAndSplitQueryFromReaders([]io.Reader{bytes.NewReader(text)})
	if err != nil {
		return err
	}
	for _, stmt := range stmts {
		if err := db.Exec(stmt); err != nil {
			return fmt.Errorf("%s: %w", stmt, err)
		}
	}
	if err := db.UpdateSchemaVersion(conf.DatabaseName, version, version); err != nil {
		return err
	}
	return db.WriteSchemaUpdateLog("0", version, "", "initial version")
}

// DropPostgresStore removes the PostgreSQL store's databases beside
// dbURL's (a test platform's, once its server has stopped).
func DropPostgresStore(ctx context.Context, dbURL string) error {
	u, err := url.Parse(dbURL)
	if err != nil {
		return err
	}
	base := strings.TrimPrefix(u.Path, "/")
	for _, suffix := range []string{temporalDBSuffix, visibilityDBSuffix} {
		if err := pg.DropDatabase(ctx, dbURL, base+suffix); err != nil {
			return err
		}
	}
	return nil
}
