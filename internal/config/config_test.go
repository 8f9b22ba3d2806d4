package config

import (
	"strings"
	"testing"
	"time"
)

func TestLoadReadsPrefixedAndConventionalEnv(t *testing.T) {
	t.Setenv("CONDUIT_HTTP_ADDR", "0.0.0.0:9999")
	t.Setenv("DATABASE_URL", "postgres://u:p@db:5432/x")
	t.Setenv("CONDUIT_DEV_TEMPORAL_PORT", "17233")
	t.Setenv("CONDUIT_DEV_TEMPORAL_STORE", "postgres")
	t.Setenv("CONDUIT_DEV_TEMPORAL_SHARDS", "16")
	c, err := Load("")
	if err != nil {
		t.Fatal(err)
	}
	if c.HTTP.Addr != "0.0.0.0:9999" || c.Database.URL != "postgres://u:p@db:5432/x" || c.Dev.TemporalPort != 17233 || c.Dev.TemporalStore != "postgres" || c.Dev.TemporalShards != 16 {
		t.Fatalf("env not applied: %+v", c)
	}
	if err := c.Validate(); err != nil {
		t.Fatalf("valid config refused: %v", err)
	}
}

func TestTrustedProxiesFromEnvAndFile(t *testing.T) {
	c, err := Load("")
	if err != nil {
		t.Fatal(err)
	}
	if got := c.HTTP.Proxies(); got != nil {
		t.Fatalf("default trusted proxies %v, want none", got)
	}
	t.Setenv("CONDUIT_HTTP_TRUSTED_PROXIES", "10.0.0.0/8, 192.168.1.2,fd00::/8")
	if c, err = Load(""); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(c.HTTP.Proxies(), " "); got != "10.0.0.0/8 192.168.1.2 fd00::/8" {
		t.Fatalf("from the environment: %q", got)
	}
	if err := c.Validate(); err != nil {
		t.Fatalf("valid proxies refused: %v", err)
	}
	t.Setenv("CONDUIT_HTTP_TRUSTED_PROXIES", "")
	path := t.TempDir() + "/c.yaml"
	if err := writeFile(path, "http:\n  trusted_proxies: [172.16.0.0/12, \"2001:db8::1\"]\n"); err != nil {
		t.Fatal(err)
	}
	if c, err = Load(path); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(c.HTTP.Proxies(), " "); got != "172.16.0.0/12 2001:db8::1" {
		t.Fatalf("from the file: %q", got)
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
		{"bad temporal store", func(c *Config) { c.Dev.TemporalStore = "cassandra" }, "CONDUIT_DEV_TEMPORAL_STORE"},
		{"negative shards", func(c *Config) { c.Dev.TemporalShards = -1 }, "CONDUIT_DEV_TEMPORAL_SHARDS"},
		{"too many shards", func(c *Config) { c.Dev.TemporalShards = 4096 }, "CONDUIT_DEV_TEMPORAL_SHARDS"},
		{"bad level", func(c *Config) { c.Log.Level = "loud" }, "CONDUIT_LOG_LEVEL"},
		{"bad format", func(c *Config) { c.Log.Format = "xml" }, "CONDUIT_LOG_FORMAT"},
		{"empty namespace", func(c *Config) { c.Temporal.Namespace = "" }, "CONDUIT_TEMPORAL_NAMESPACE"},
		{"bad rate limit", func(c *Config) { c.X402.RateLimit = "lots" }, "CONDUIT_X402_RATE_LIMIT"},
		{"bad trusted proxy", func(c *Config) { c.HTTP.TrustedProxies = []string{"10.0.0.1", "proxy.internal"} }, "CONDUIT_HTTP_TRUSTED_PROXIES"},
		{"bad trusted cidr", func(c *Config) { c.HTTP.TrustedProxies = []string{"10.0.0.0/33"} }, "CONDUIT_HTTP_TRUSTED_PROXIES"},
		{"everyone trusted v4", func(c *Config) { c.HTTP.TrustedProxies = []string{"0.0.0.0/0"} }, "would trust every address"},
		{"everyone trusted v6", func(c *Config) { c.HTTP.TrustedProxies = []string{"::/0"} }, "would trust every address"},
		{"no read timeout", func(c *Config) { c.HTTP.ReadTimeout = 0 }, "CONDUIT_HTTP_READ_TIMEOUT"},
		{"read shorter than headers", func(c *Config) { c.HTTP.ReadTimeout = time.Second }, "shorter than http.read_header_timeout"},
		{"no write timeout", func(c *Config) { c.HTTP.WriteTimeout = -time.Second }, "CONDUIT_HTTP_WRITE_TIMEOUT"},
		{"no idle timeout", func(c *Config) { c.HTTP.IdleTimeout = 0 }, "CONDUIT_HTTP_IDLE_TIMEOUT"},
		{"no header timeout", func(c *Config) { c.HTTP.ReadHeaderTimeout = 0 }, "CONDUIT_HTTP_READ_HEADER_TIMEOUT"},
		{"tiny headers", func(c *Config) { c.HTTP.MaxHeaderBytes = 1024 }, "CONDUIT_HTTP_MAX_HEADER_BYTES"},
		{"short signup secret", func(c *Config) { c.SignUp.Secret = "short" }, "CONDUIT_SIGNUP_SECRET"},
		{"no verify ttl", func(c *Config) { c.SignUp.VerifyTTL = 0 }, "CONDUIT_SIGNUP_VERIFY_TTL"},
		{"bad mail sender", func(c *Config) { c.Mail.Sender = "pigeon" }, "CONDUIT_MAIL_SENDER"},
		{"smtp without host", func(c *Config) { c.Mail.Sender, c.Mail.From = "smtp", "a@example.com" }, "CONDUIT_MAIL_SMTP_HOST"},
		{"smtp without from", func(c *Config) { c.Mail.Sender, c.Mail.SMTPHost = "smtp", "mail.example.com" }, "CONDUIT_MAIL_FROM"},
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

// The local facilitator mints its tokens for nothing: under a main
// network's id it would sell real credit, so it is refused in one sentence
// naming the dev-only override, unless that override is set.
func TestLocalFacilitatorRefusesMainNetworks(t *testing.T) {
	local := func(t *testing.T) *Config {
		c, err := Load("")
		if err != nil {
			t.Fatal(err)
		}
		c.X402.Enabled, c.X402.Facilitator, c.X402.LocalKey = true, "local", "0x01"
		return c
	}
	c := local(t)
	err := c.Validate()
	if err == nil {
		t.Fatal("the local facilitator started on the main networks")
	}
	msg := err.Error()
	for _, want := range []string{"x402.network eip155:8453", "x402.solana_network solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp",
		"x402.allow_local_on_main_network (CONDUIT_X402_ALLOW_LOCAL_ON_MAIN_NETWORK)"} {
		if !strings.Contains(msg, want) {
			t.Errorf("the refusal does not name %q: %s", want, msg)
		}
	}
	if strings.Contains(msg, "\n") {
		t.Errorf("want one sentence, got %q", msg)
	}

	c = local(t)
	c.X402.SolanaNetwork = ""
	if err := c.Validate(); err == nil || strings.Contains(err.Error(), "solana_network") {
		t.Fatalf("EVM alone on the main network: %v", err)
	}
	c = local(t)
	c.X402.Network = "eip155:84532"
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "x402.solana_network solana:5eykt") {
		t.Fatalf("Solana alone on the main network: %v", err)
	}

	c = local(t)
	c.X402.Network, c.X402.SolanaNetwork = PlayNetwork, PlaySolanaNetwork
	if err := c.Validate(); err != nil {
		t.Fatalf("the play networks refused: %v", err)
	}
	c = local(t)
	c.X402.Facilitator = "https://facilitator.example.test"
	if err := c.Validate(); err != nil {
		t.Fatalf("a hosted facilitator on the main networks refused: %v", err)
	}
	c = local(t)
	c.X402.Enabled = false
	if err := c.Validate(); err != nil {
		t.Fatalf("payments off, yet refused: %v", err)
	}

	t.Setenv("CONDUIT_X402_ALLOW_LOCAL_ON_MAIN_NETWORK", "true")
	c = local(t)
	if !c.X402.AllowLocalOnMainNetwork {
		t.Fatal("CONDUIT_X402_ALLOW_LOCAL_ON_MAIN_NETWORK not read")
	}
	if err := c.Validate(); err != nil {
		t.Fatalf("the dev-only override did not apply: %v", err)
	}
}

// A command's own defaults replace the built-in ones but never what the
// file or the environment says.
func TestCommandDefaultsYieldToFileAndEnv(t *testing.T) {
	play := map[string]any{"x402.network": PlayNetwork, "x402.solana_network": PlaySolanaNetwork}
	c, err := Load("", play)
	if err != nil {
		t.Fatal(err)
	}
	if c.X402.Network != PlayNetwork || c.X402.SolanaNetwork != PlaySolanaNetwork {
		t.Fatalf("command defaults not applied: %s %s", c.X402.Network, c.X402.SolanaNetwork)
	}
	if c, _ := Load(""); c.X402.Network != "eip155:8453" {
		t.Fatalf("the built-in default changed: %s", c.X402.Network)
	}
	path := t.TempDir() + "/c.yaml"
	if err := writeFile(path, "x402:\n  solana_network: \"\"\n"); err != nil {
		t.Fatal(err)
	}
	t.Setenv("CONDUIT_X402_NETWORK", "eip155:84532")
	c, err = Load(path, play)
	if err != nil {
		t.Fatal(err)
	}
	if c.X402.Network != "eip155:84532" || c.X402.SolanaNetwork != "" {
		t.Fatalf("file or env lost to command defaults: %q %q", c.X402.Network, c.X402.SolanaNetwork)
	}
}

// Sign-up needs its secret and a sender; the production roles refuse the
// dev mailbox, where no message would leave.
func TestSignUpReadyAndTheMailboxIsDevOnly(t *testing.T) {
	c, err := Load("")
	if err != nil {
		t.Fatal(err)
	}
	if err := c.SignUpReady(); err == nil || !strings.Contains(err.Error(), "signup.secret") {
		t.Fatalf("no secret: %v", err)
	}
	c.SignUp.Secret = strings.Repeat("s", 32)
	if err := c.SignUpReady(); err == nil || !strings.Contains(err.Error(), "mail.sender") {
		t.Fatalf("no sender: %v", err)
	}
	c.Mail.Sender = "mailbox"
	if err := c.SignUpReady(); err != nil {
		t.Fatal(err)
	}
	if err := c.RefuseDevOnly(); err == nil || !strings.Contains(err.Error(), "CONDUIT_MAIL_SENDER") {
		t.Fatalf("mailbox in production: %v", err)
	}
	c.Mail.Sender, c.Mail.SMTPHost, c.Mail.From = "smtp", "mail.example.com", "no-reply@example.com"
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	if err := c.RefuseDevOnly(); err != nil {
		t.Fatal(err)
	}
}

// temporal.tls.* and temporal.api_key load from the environment, and a
// half-set client pair or a key without an address is refused by Validate.
func TestTemporalTLSSettings(t *testing.T) {
	t.Setenv("CONDUIT_TEMPORAL_TLS_SERVER_NAME", "temporal.example")
	t.Setenv("CONDUIT_TEMPORAL_API_KEY", "k")
	t.Setenv("CONDUIT_TEMPORAL_ADDRESS", "temporal.example:7233")
	c, err := Load("")
	if err != nil {
		t.Fatal(err)
	}
	if c.Temporal.TLS.ServerName != "temporal.example" || c.Temporal.APIKey != "k" || !c.Temporal.TLS.On() {
		t.Fatalf("%+v", c.Temporal)
	}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	c.Temporal.TLS.CertFile = "/nonexistent/client.pem"
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "temporal.tls.cert_file") {
		t.Fatalf("a cert without its key: %v", err)
	}
	c.Temporal.TLS.CertFile, c.Temporal.Address = "", ""
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "temporal.api_key") {
		t.Fatalf("a key without an address: %v", err)
	}
}
