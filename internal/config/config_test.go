package config

import (
	"strings"
	"testing"
)

func TestLoadReadsPrefixedAndConventionalEnv(t *testing.T) {
	t.Setenv("CONDUIT_HTTP_ADDR", "0.0.0.0:9999")
	t.Setenv("DATABASE_URL", "postgres://u:p@db:5432/x")
	t.Setenv("CONDUIT_DEV_TEMPORAL_PORT", "17233")
	c, err := Load("")
	if err != nil {
		t.Fatal(err)
	}
	if c.HTTP.Addr != "0.0.0.0:9999" || c.Database.URL != "postgres://u:p@db:5432/x" || c.Dev.TemporalPort != 17233 {
		t.Fatalf("env not applied: %+v", c)
	}
	if err := c.Validate(); err != nil {
		t.Fatalf("valid config refused: %v", err)
	}
}

func TestLoadFileThenEnvOverrides(t *testing.T) {
	path := t.TempDir() + "/c.yaml"
	if err := writeFile(path, "http:\n  addr: 127.0.0.1:7000\nlog:\n  level: debug\n"); err != nil {
		t.Fatal(err)
	}
	t.Setenv("CONDUIT_LOG_LEVEL", "warn")
	c, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if c.HTTP.Addr != "127.0.0.1:7000" || c.Log.Level != "warn" {
		t.Fatalf("file or env precedence wrong: addr=%s level=%s", c.HTTP.Addr, c.Log.Level)
	}
}

func TestLoadMissingFileIsOneSentence(t *testing.T) {
	_, err := Load("/nonexistent/conduit.yaml")
	if err == nil || !strings.Contains(err.Error(), "/nonexistent/conduit.yaml could not be read") {
		t.Fatalf("want a clear sentence, got %v", err)
	}
}

func TestValidateNamesTheBadSetting(t *testing.T) {
	cases := []struct {
		name string
		mut  func(*Config)
		want string
	}{
		{"bad http port", func(c *Config) { c.HTTP.Addr = "127.0.0.1:99999" }, "CONDUIT_HTTP_ADDR"},
		{"no port", func(c *Config) { c.HTTP.Addr = "localhost" }, "CONDUIT_HTTP_ADDR"},
		{"bad db scheme", func(c *Config) { c.Database.URL = "mysql://x" }, "DATABASE_URL"},
		{"bad temporal", func(c *Config) { c.Temporal.Address = "nohost" }, "TEMPORAL_ADDRESS"},
		{"bad public url", func(c *Config) { c.HTTP.PublicURL = "ftp://x" }, "CONDUIT_HTTP_PUBLIC_URL"},
		{"bad dev port", func(c *Config) { c.Dev.PostgresPort = 0 }, "CONDUIT_DEV_POSTGRES_PORT"},
		{"bad level", func(c *Config) { c.Log.Level = "loud" }, "CONDUIT_LOG_LEVEL"},
		{"bad format", func(c *Config) { c.Log.Format = "xml" }, "CONDUIT_LOG_FORMAT"},
		{"empty namespace", func(c *Config) { c.Temporal.Namespace = "" }, "CONDUIT_TEMPORAL_NAMESPACE"},
		{"bad rate limit", func(c *Config) { c.X402.RateLimit = "lots" }, "CONDUIT_X402_RATE_LIMIT"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Load("")
			if err != nil {
				t.Fatal(err)
			}
			tc.mut(c)
			err = c.Validate()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("want an error naming %s, got %v", tc.want, err)
			}
		})
	}
}

func TestProductionNeedsBothAddresses(t *testing.T) {
	c, err := Load("")
	if err != nil {
		t.Fatal(err)
	}
	err = c.ValidateProduction()
	if err == nil || !strings.Contains(err.Error(), "database.url") || !strings.Contains(err.Error(), "temporal.address") {
		t.Fatalf("want both missing addresses named, got %v", err)
	}
	c.Database.URL = "postgres://localhost/x"
	c.Temporal.Address = "localhost:7233"
	if err := c.ValidateProduction(); err != nil {
		t.Fatal(err)
	}
}

func TestBaseURL(t *testing.T) {
	c := &Config{HTTP: HTTP{Addr: "127.0.0.1:8080"}}
	if got := c.BaseURL(); got != "http://127.0.0.1:8080" {
		t.Fatal(got)
	}
	c.HTTP.PublicURL = "https://api.example.test/"
	if got := c.BaseURL(); got != "https://api.example.test" {
		t.Fatal(got)
	}
}

// Every default must pass validation: a fresh checkout runs with no config.
func TestDefaultsAreValid(t *testing.T) {
	c, err := Load("")
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Validate(); err != nil {
		t.Fatalf("defaults refused: %v", err)
	}
}
