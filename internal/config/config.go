// Package config loads the service's one typed configuration with viper:
// defaults, then an optional YAML file, then environment variables prefixed
// CONDUIT_ (dots become underscores: http.addr → CONDUIT_HTTP_ADDR).
package config

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/viper"
	"github.com/ulule/limiter/v3"

	"conduit/internal/codec"
	"conduit/internal/money"
)

// EnvPrefix is the prefix of every environment variable the service reads.
const EnvPrefix = "CONDUIT"

// Config is everything the frontend, the worker and the dev command read.
type Config struct {
	HTTP     HTTP     `mapstructure:"http"`
	Database Database `mapstructure:"database"`
	Temporal Temporal `mapstructure:"temporal"`
	Dev      Dev      `mapstructure:"dev"`
	Log      Log      `mapstructure:"log"`
	Models   Models   `mapstructure:"models"`
	Runs     Runs     `mapstructure:"runs"`
	X402     X402     `mapstructure:"x402"`
	Media    Media    `mapstructure:"media"`
	OAuth    OAuth    `mapstructure:"oauth"`
	SignIn   SignIn   `mapstructure:"signin"`
	SignUp   SignUp   `mapstructure:"signup"`
	Mail     Mail     `mapstructure:"mail"`
	Enclaves Enclaves `mapstructure:"enclaves"`
	Admin    Admin    `mapstructure:"admin"`
	Checkout Checkout `mapstructure:"checkout"`
	Quota    Quota    `mapstructure:"quota"`
	Metering Metering `mapstructure:"metering"`
	// Redaction is the redacting chat proxy and the PII vault.
	Redaction RedactionProxies `mapstructure:"redaction"`
	// Proofs is the zkVerify relay and KYC proofs.
	Proofs Proofs `mapstructure:"proofs"`
	// ZKAgg and ZKPassport are the proof aggregation and zkPassport
	// requests (config/zk.go).
	ZKAgg      ZKAgg      `mapstructure:"zkagg"`
	ZKPassport ZKPassport `mapstructure:"zkpassport"`
	// Metrics and Tracing are the operator's telemetry (telemetry.go).
	Metrics Metrics `mapstructure:"metrics"`
	Tracing Tracing `mapstructure:"tracing"`
}

// Admin configures the operator routes under /admin (docs/operations.md).
type Admin struct {
	// Token is the bearer secret of the operator routes; empty turns them
	// off (404).
	Token string `mapstructure:"token"`
}

// Enclaves configures the enclave lifecycle (docs/enclaves.md). Off by
// default: the local provider needs bubblewrap on the worker's host.
type Enclaves struct {
	Enabled bool `mapstructure:"enabled"`
	// DataDir keeps every enclave's files (the local provider's Dir).
	DataDir string `mapstructure:"data_dir"`
	// AttestationDir keeps the local attestation root CA the platform
	// generates on first use.
	AttestationDir string `mapstructure:"attestation_dir"`
	// SecretKeys seal registry credentials at rest, written like
	// temporal.codec_keys ("id:base64(32 bytes)", the first sealing); empty
	// means temporal.codec_keys. With neither, private registries are refused.
	SecretKeys string `mapstructure:"secret_keys"`
	// LogEvery is how often application output is copied into the
	// enclave's log; LogRetention how long log entries are kept.
	LogEvery     time.Duration `mapstructure:"log_every"`
	LogRetention time.Duration `mapstructure:"log_retention"`
	// HeartbeatTimeout bounds the provider's long steps between heartbeats.
	HeartbeatTimeout time.Duration `mapstructure:"heartbeat_timeout"`
	// GitBaseURL is the git host github sources are cloned from
	// (GitBaseURL/owner/name.git); BuildRegistry the repository prefix
	// built images are pushed under ("host[:port]/path"; empty: github
	// sources are refused), with optional basic credentials that push and
	// pull them (docs/enclaves.md, "Building from github").
	GitBaseURL            string `mapstructure:"git_base_url"`
	BuildRegistry         string `mapstructure:"build_registry"`
	BuildRegistryUsername string `mapstructure:"build_registry_username"`
	BuildRegistryPassword string `mapstructure:"build_registry_password"`
	// RetryMax is the longest wait between attempts of a build or
	// deployment step that failed transiently (a registry down);
	// GiveUpAfter is how long such a step is retried before the enclave
	// fails. `conduit enclave resume` retries at once.
	RetryMax    time.Duration `mapstructure:"retry_max"`
	GiveUpAfter time.Duration `mapstructure:"give_up_after"`
	// AWS is the AWS Nitro provider (enclaves_aws.go).
	AWS EnclavesAWS `mapstructure:"aws"`
	// Limits bound images, accounts and instances (enclaves_limits.go).
	Limits EnclavesLimits `mapstructure:"limits"`
}

// X402 configures agent payments (spec §8). A misconfigured deployment
// still starts: the paid endpoints answer 503 and stop advertising
// themselves (see Ready).
type X402 struct {
	Enabled bool `mapstructure:"enabled"`
	// Network is the first (EVM) network offered, CAIP-2.
	Network string `mapstructure:"network"`
	// TopUpUSD is what one top-up call costs and grants.
	TopUpUSD string `mapstructure:"topup_usd"`
	// PayTo is the receiving wallet on the EVM network.
	PayTo string `mapstructure:"pay_to"`
	// Asset is the token contract on the EVM network (USDC); the local
	// facilitator uses the token it deploys.
	Asset string `mapstructure:"asset"`
	// Facilitator is "local" (the embedded facilitator and networks) or
	// the base URL of a facilitator's HTTP API.
	Facilitator       string `mapstructure:"facilitator"`
	FacilitatorAPIKey string `mapstructure:"facilitator_api_key"`
	// LocalKey is the hex private key the local facilitator settles with
	// (the dev command generates and keeps one).
	LocalKey string `mapstructure:"local_key"`
	// SolanaNetwork is the second network offered (CAIP-2). Empty: none.
	SolanaNetwork string `mapstructure:"solana_network"`
	// SolanaPayTo and SolanaAsset describe the Solana offer with a hosted
	// facilitator, whose fee payer is read from its /supported (and
	// refreshed); SolanaFeePayer stands in only until /supported answers.
	// The local facilitator derives all three from local_key.
	SolanaPayTo    string `mapstructure:"solana_pay_to"`
	SolanaAsset    string `mapstructure:"solana_asset"`
	SolanaFeePayer string `mapstructure:"solana_fee_payer"`
	// SolanaRPCAddr is where the local facilitator's embedded Solana
	// network serves the Solana JSON-RPC (host:port, loopback advised).
	// Empty: no RPC. The dev command serves it on 127.0.0.1:8899, the
	// port solana-test-validator uses.
	SolanaRPCAddr string `mapstructure:"solana_rpc_addr"`
	// RateLimit bounds paid-endpoint calls per client address, as
	// "<count>-<S|M|H>" (60-M: sixty a minute); beyond it calls get 429.
	RateLimit string `mapstructure:"rate_limit"`
	// WalletRateLimit bounds paid calls per paying wallet, counted only
	// once the payment's signature verified; empty means RateLimit.
	WalletRateLimit string `mapstructure:"wallet_rate_limit"`
	// AllowLocalOnMainNetwork lets the local facilitator run under a main
	// network's id (dev-only: see localOnMainNetwork). Off by default.
	AllowLocalOnMainNetwork bool `mapstructure:"allow_local_on_main_network"`
}

// WalletRate is the per-wallet budget: WalletRateLimit, else RateLimit.
func (x X402) WalletRate() string {
	if x.WalletRateLimit != "" {
		return x.WalletRateLimit
	}
	return x.RateLimit
}

// mainNetworks carry real money: they need facilitator credentials, and
// the local facilitator refuses them.
var mainNetworks = map[string]bool{"eip155:8453": true, "solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp": true}

// The play networks are the ids the dev command gives its embedded
// networks, so nothing signed for them can pass for a main-network payment.
const (
	// PlayNetwork is chain 31337, the id local development nodes (Hardhat
	// Network, Foundry's Anvil) run under: not a payment network, and the
	// official clients sign for any eip155 chain.
	PlayNetwork = "eip155:31337"
	// PlaySolanaNetwork is Solana devnet, whose tokens are free by design;
	// the official Solana client accepts only the three cluster ids.
	PlaySolanaNetwork = "solana:EtWTRABZaYq6iMfeYKouRu166VU2xqa1"
)

// localOnMainNetwork refuses the local facilitator under a main network's
// id: its tokens are minted for nothing, so on a main network they would
// buy real credit. Only a dev setup may say otherwise.
func (x X402) localOnMainNetwork() error {
	if !x.Enabled || x.Facilitator != "local" || x.AllowLocalOnMainNetwork {
		return nil
	}
	var main []string
	if mainNetworks[x.Network] {
		main = append(main, "x402.network "+x.Network)
	}
	if mainNetworks[x.SolanaNetwork] {
		main = append(main, "x402.solana_network "+x.SolanaNetwork)
	}
	if len(main) == 0 {
		return nil
	}
	return fmt.Errorf("x402.facilitator (%[1]s_X402_FACILITATOR) is local on a main network (%[2]s), where its free play tokens would buy real credit: "+
		"use test networks (the dev command's are %[3]s and %[4]s) or a hosted facilitator, or in a dev-only setup set x402.allow_local_on_main_network (%[1]s_X402_ALLOW_LOCAL_ON_MAIN_NETWORK)",
		EnvPrefix, strings.Join(main, ", "), PlayNetwork, PlaySolanaNetwork)
}

// Ready says why agent payments cannot be offered, or nil when they can.
func (x X402) Ready() error {
	switch {
	case !x.Enabled:
		return errors.New("x402 is disabled")
	case !strings.HasPrefix(x.Network, "eip155:"):
		return fmt.Errorf("x402.network %q is not an eip155 network", x.Network)
	case x.Facilitator == "":
		return errors.New("x402.facilitator is not set")
	case x.Facilitator == "local" && x.LocalKey == "":
		return errors.New("the local facilitator needs x402.local_key")
	case x.Facilitator != "local" && (x.PayTo == "" || x.Asset == ""):
		return errors.New("x402.pay_to and x402.asset are required")
	case x.Facilitator != "local" && mainNetworks[x.Network] && x.FacilitatorAPIKey == "":
		return errors.New("a main network needs x402.facilitator_api_key")
	}
	if v, err := money.ParseUSD(x.TopUpUSD); err != nil || v <= 0 {
		return fmt.Errorf("x402.topup_usd %q is not a positive USD amount", x.TopUpUSD)
	}
	return nil
}

// Models configures text-generation providers and the model catalog.
type Models struct {
	OpenAI OpenAI `mapstructure:"openai"`
	// Catalog lists every model id a pipeline may name, with its provider
	// and price. Prices are decimal USD strings (exact, never floats).
	Catalog []ModelEntry `mapstructure:"catalog"`
}

// OpenAI is an OpenAI-compatible chat-completions provider (OpenAI, vLLM,
// Ollama, LiteLLM, …).
type OpenAI struct {
	BaseURL string        `mapstructure:"base_url"`
	APIKey  string        `mapstructure:"api_key"`
	Timeout time.Duration `mapstructure:"timeout"`
}

// ModelEntry is one catalog row.
type ModelEntry struct {
	ID string `mapstructure:"id"`
	// Provider is "local" (the built-in deterministic model) or "openai".
	Provider string `mapstructure:"provider"`
	// Upstream is the provider's own model name (defaults to ID).
	Upstream           string `mapstructure:"upstream"`
	PromptPer1KUSD     string `mapstructure:"prompt_per_1k_usd"`
	CompletionPer1KUSD string `mapstructure:"completion_per_1k_usd"`
	ContextTokens      int    `mapstructure:"context_tokens"`
	// TokenDelay slows the local model down per token (demos, tests).
	TokenDelay time.Duration `mapstructure:"token_delay"`
}

// Runs configures pipeline runs.
type Runs struct {
	// TruncateOutputChars bounds text outputs in polled results.
	TruncateOutputChars int `mapstructure:"truncate_output_chars"`
	// ModelAttempts is how often a failing model call is tried.
	ModelAttempts int `mapstructure:"model_attempts"`
	// ModelTimeout bounds one model call attempt.
	ModelTimeout time.Duration `mapstructure:"model_timeout"`
}

// HTTP configures the public API server.
type HTTP struct {
	// Addr is the listen address of the API, host:port.
	Addr string `mapstructure:"addr"`
	// PublicURL is the base address clients reach the API at; it prefixes
	// every URL the API hands out (statusUrl, topUpUrl, …). Empty means
	// http://<Addr>.
	PublicURL       string        `mapstructure:"public_url"`
	ShutdownTimeout time.Duration `mapstructure:"shutdown_timeout"`
	// ReadHeaderTimeout bounds how long a request's headers may take to
	// arrive; ReadTimeout the whole request, headers and body.
	ReadHeaderTimeout time.Duration `mapstructure:"read_header_timeout"`
	ReadTimeout       time.Duration `mapstructure:"read_timeout"`
	// WriteTimeout bounds each write of an answer: a client that stops
	// reading is cut off after it. A stream that keeps writing (chat
	// completions, pay-per-call keep-alives, long polls) runs as long as
	// its handler, so there is no deadline on a whole answer.
	WriteTimeout time.Duration `mapstructure:"write_timeout"`
	// IdleTimeout closes a kept-alive connection that sends no request.
	IdleTimeout time.Duration `mapstructure:"idle_timeout"`
	// MaxHeaderBytes bounds the request line and headers (431 beyond).
	MaxHeaderBytes int `mapstructure:"max_header_bytes"`
	// TrustedProxies lists the reverse proxies (IPs or CIDRs) whose
	// X-Forwarded-For and X-Real-IP headers name the client. Empty (the
	// default): the client is the TCP peer, and those headers are ignored.
	TrustedProxies []string `mapstructure:"trusted_proxies"`
}

// Proxies is TrustedProxies without surrounding spaces ("a, b" in an
// environment variable), nil when none.
func (h HTTP) Proxies() []string {
	var out []string
	for _, p := range h.TrustedProxies {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// checkLimits checks the connection timeouts and the header size.
func (h HTTP) checkLimits() []error {
	var errs []error
	for _, d := range []struct {
		key string
		v   time.Duration
	}{{"read_header_timeout", h.ReadHeaderTimeout}, {"read_timeout", h.ReadTimeout}, {"write_timeout", h.WriteTimeout}, {"idle_timeout", h.IdleTimeout}} {
		if d.v <= 0 {
			errs = append(errs, fmt.Errorf("http.%s (%s_HTTP_%s) must be positive", d.key, EnvPrefix, strings.ToUpper(d.key)))
		}
	}
	if h.ReadHeaderTimeout > 0 && h.ReadTimeout > 0 && h.ReadTimeout < h.ReadHeaderTimeout {
		errs = append(errs, fmt.Errorf("http.read_timeout (%s_HTTP_READ_TIMEOUT) %s is shorter than http.read_header_timeout %s: it covers the headers too", EnvPrefix, h.ReadTimeout, h.ReadHeaderTimeout))
	}
	if h.MaxHeaderBytes < 8<<10 || h.MaxHeaderBytes > 1<<20 {
		errs = append(errs, fmt.Errorf("http.max_header_bytes (%s_HTTP_MAX_HEADER_BYTES) %d must be from 8192 to 1048576", EnvPrefix, h.MaxHeaderBytes))
	}
	return errs
}

// checkProxies accepts IPv4 and IPv6 addresses and CIDRs, but no prefix
// that covers every address: that would trust anyone's headers.
func (h HTTP) checkProxies() error {
	for _, p := range h.Proxies() {
		if strings.Contains(p, "/") {
			pfx, err := netip.ParsePrefix(p)
			if err != nil {
				return fmt.Errorf("http.trusted_proxies (%s_HTTP_TRUSTED_PROXIES) entry %q is neither an IP address nor a CIDR", EnvPrefix, p)
			}
			if pfx.Bits() == 0 {
				return fmt.Errorf("http.trusted_proxies (%s_HTTP_TRUSTED_PROXIES) entry %q would trust every address's forwarding headers: name your proxies", EnvPrefix, p)
			}
			continue
		}
		if _, err := netip.ParseAddr(p); err != nil {
			return fmt.Errorf("http.trusted_proxies (%s_HTTP_TRUSTED_PROXIES) entry %q is neither an IP address nor a CIDR", EnvPrefix, p)
		}
	}
	return nil
}

// Database points at PostgreSQL. An empty URL means "the dev command starts
// its own cluster"; the frontend and worker binaries require it.
type Database struct {
	URL      string `mapstructure:"url"`
	MaxConns int32  `mapstructure:"max_conns"`
}

// Temporal points at a Temporal frontend. An empty Address means "the dev
// command starts its own server".
type Temporal struct {
	Address   string `mapstructure:"address"`
	Namespace string `mapstructure:"namespace"`
	// Pollers is how many task pollers each worker runs per kind
	// (workflow tasks, activity tasks).
	Pollers int `mapstructure:"pollers"`
	// RenderConcurrency bounds the renders (ffmpeg, the synthesizer, a
	// hosted provider's long poll) one worker process runs at once.
	RenderConcurrency int `mapstructure:"render_concurrency"`
	// StopTimeout is how long a stopping worker lets running activities
	// finish (a deploy drains renders instead of cancelling them).
	StopTimeout time.Duration `mapstructure:"stop_timeout"`
	// CodecKeys encrypt workflow payloads: "id:base64(32 bytes)", comma
	// separated, the first sealing new payloads (internal/codec). Empty:
	// payloads are stored in the clear.
	CodecKeys string `mapstructure:"codec_keys"`
	// UIURL is the Temporal Web UI's address (http://host:8233); run
	// pages link each run's workflow there. Empty: no link. The dev
	// command sets it to its embedded UI.
	UIURL string `mapstructure:"ui_url"`
	// TLS and APIKey authenticate to a secured cluster or Temporal Cloud
	// (temporal_tls.go). The API key is sent as a bearer token over TLS.
	TLS    TemporalTLS `mapstructure:"tls"`
	APIKey string      `mapstructure:"api_key"`
}

// Dev configures the embedded stack the dev command starts.
type Dev struct {
	// DataDir keeps the PostgreSQL cluster, the Temporal SQLite file and the
	// bootstrap files between runs.
	DataDir        string `mapstructure:"data_dir"`
	PostgresPort   int    `mapstructure:"postgres_port"`
	TemporalPort   int    `mapstructure:"temporal_port"`
	TemporalUIPort int    `mapstructure:"temporal_ui_port"`
	// RegistryPort is the embedded OCI registry's loopback port, served
	// when enclaves.enabled (docs/enclaves.md).
	RegistryPort int `mapstructure:"registry_port"`
	// InstallPostgres lets the dev command apt-get install PostgreSQL (and
	// the renderers' ffmpeg, espeak-ng and fonts) when missing and it runs
	// as root on Debian/Ubuntu.
	InstallPostgres bool `mapstructure:"install_postgres"`
	// TemporalLog is the in-process Temporal server's own log level (off,
	// error, warn, info, debug); off by default because it is noisy.
	TemporalLog string `mapstructure:"temporal_log"`
	// TemporalStore is where the embedded Temporal server keeps its state:
	// sqlite (a file in DataDir) or postgres (two databases on the embedded
	// PostgreSQL, shaped like a production cluster's).
	TemporalStore string `mapstructure:"temporal_store"`
	// TemporalShards is the embedded server's history shard count; 0 is
	// the store's default (1 on sqlite, 8 on postgres). A store keeps the
	// count it was created with.
	TemporalShards int `mapstructure:"temporal_shards"`
}

// Log configures the structured logger.
type Log struct {
	Level  string `mapstructure:"level"`
	Format string `mapstructure:"format"`
}

// defaults lists every key with its default; viper only maps environment
// variables onto keys it knows, so every key must appear here.
var defaults = map[string]any{
	"http.addr":                        "127.0.0.1:8080",
	"http.public_url":                  "",
	"http.shutdown_timeout":            "15s",
	"database.url":                     "",
	"database.max_conns":               20,
	"temporal.address":                 "",
	"temporal.namespace":               "default",
	"temporal.pollers":                 2,
	"temporal.render_concurrency":      2,
	"temporal.stop_timeout":            "10m",
	"temporal.codec_keys":              "",
	"temporal.ui_url":                  "",
	"enclaves.enabled":                 false,
	"enclaves.data_dir":                ".data/enclaves",
	"enclaves.attestation_dir":         ".data/attestation",
	"enclaves.secret_keys":             "",
	"enclaves.log_every":               "5s",
	"enclaves.log_retention":           "720h",
	"enclaves.heartbeat_timeout":       "1m",
	"enclaves.retry_max":               "5m",
	"enclaves.give_up_after":           "24h",
	"enclaves.git_base_url":            "https://github.com",
	"enclaves.build_registry":          "",
	"enclaves.build_registry_username": "",
	"enclaves.build_registry_password": "",
	"admin.token":                      "",
	"dev.data_dir":                     ".data",
	"dev.postgres_port":                54329,
	"dev.temporal_port":                7233,
	"dev.temporal_ui_port":             8233,
	"dev.registry_port":                5050,
	"dev.install_postgres":             true,
	"dev.temporal_log":                 "off",
	"dev.temporal_store":               "sqlite",
	"dev.temporal_shards":              0,
	"log.level":                        "info",
	"log.format":                       "text",
	"models.openai.base_url":           "",
	"models.openai.api_key":            "",
	"models.openai.timeout":            "120s",
	"models.catalog": []map[string]any{
		{"id": "local-echo", "provider": "local", "prompt_per_1k_usd": "0.0001", "completion_per_1k_usd": "0.0002", "context_tokens": 8192},
		{"id": "local-echo-slow", "provider": "local", "prompt_per_1k_usd": "0.0001", "completion_per_1k_usd": "0.0002", "context_tokens": 8192, "token_delay": "25ms"},
	},
	"x402.enabled":               false,
	"x402.network":               "eip155:8453",
	"x402.topup_usd":             "5",
	"x402.pay_to":                "",
	"x402.asset":                 "",
	"x402.facilitator":           "",
	"x402.facilitator_api_key":   "",
	"x402.local_key":             "",
	"x402.rate_limit":            "60-M",
	"x402.wallet_rate_limit":     "",
	"x402.solana_network":        "solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp",
	"x402.solana_pay_to":         "",
	"x402.solana_asset":          "",
	"x402.solana_fee_payer":      "",
	"x402.solana_rpc_addr":       "",
	"runs.truncate_output_chars": 8000,
	"runs.model_attempts":        3,
	"runs.model_timeout":         "120s",

	// The API server's edge (docs/security.md).
	"http.trusted_proxies":     []string{},
	"http.read_header_timeout": "10s",
	"http.read_timeout":        "30s",
	"http.write_timeout":       "30s",
	"http.idle_timeout":        "60s",
	"http.max_header_bytes":    64 << 10,

	// Dev-only (docs/payments.md): leave it unset in every real deployment.
	"x402.allow_local_on_main_network": false,
}

// Load reads defaults, the file named by path (optional; CONDUIT_CONFIG when
// path is empty) and the environment. A command's own defaults (the dev
// command's play networks) replace the built-in ones, never the file's or
// the environment's values. It does not validate: callers validate for
// their role (see Validate and ValidateProduction).
func Load(path string, commandDefaults ...map[string]any) (*Config, error) {
	v := viper.New()
	for _, m := range append([]map[string]any{defaults, mediaDefaults, audioDefaults, oauthDefaults, signupDefaults, checkoutDefaults, enclavesAWSDefaults, quotaDefaults, enclavesLimitsDefaults, redactionDefaults, temporalTLSDefaults, proofsDefaults, zkDefaults, telemetryDefaults}, commandDefaults...) {
		for k, val := range m {
			v.SetDefault(k, val)
		}
	}
	v.SetEnvPrefix(EnvPrefix)
	v.SetEnvKeyReplacer(strings.NewReplacer(".", "_"))
	v.AutomaticEnv()
	// The conventional unprefixed names work too.
	_ = v.BindEnv("database.url", EnvPrefix+"_DATABASE_URL", "DATABASE_URL")
	_ = v.BindEnv("temporal.address", EnvPrefix+"_TEMPORAL_ADDRESS", "TEMPORAL_ADDRESS")

	if path == "" {
		path = os.Getenv(EnvPrefix + "_CONFIG")
	}
	if path != "" {
		v.SetConfigFile(path)
		if err := v.ReadInConfig(); err != nil {
			return nil, fmt.Errorf("config file %s could not be read: %w", path, err)
		}
	}
	var c Config
	if err := v.Unmarshal(&c); err != nil {
		return nil, fmt.Errorf("configuration is malformed: %w", err)
	}
	return &c, nil
}

// Validate checks what every role needs. Each problem is one sentence that
// names the setting and its environment variable.
func (c *Config) Validate() error {
	var errs []error
	if err := checkHostPort(c.HTTP.Addr); err != nil {
		errs = append(errs, fmt.Errorf("http.addr (%s_HTTP_ADDR) %q is not a valid listen address: %v", EnvPrefix, c.HTTP.Addr, err))
	}
	if c.HTTP.PublicURL != "" {
		if u, err := url.Parse(c.HTTP.PublicURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			errs = append(errs, fmt.Errorf("http.public_url (%s_HTTP_PUBLIC_URL) %q must be an absolute http(s) URL", EnvPrefix, c.HTTP.PublicURL))
		}
	}
	if c.HTTP.ShutdownTimeout <= 0 {
		errs = append(errs, fmt.Errorf("http.shutdown_timeout (%s_HTTP_SHUTDOWN_TIMEOUT) must be positive", EnvPrefix))
	}
	if err := c.HTTP.checkProxies(); err != nil {
		errs = append(errs, err)
	}
	errs = append(errs, c.HTTP.checkLimits()...)
	errs = append(errs, c.checkQuota()...)
	errs = append(errs, c.checkZK()...)
	errs = append(errs, c.checkTelemetry()...)
	if c.Database.URL != "" {
		if u, err := url.Parse(c.Database.URL); err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
			errs = append(errs, fmt.Errorf("database.url (%s_DATABASE_URL or DATABASE_URL) must be a postgres:// URL", EnvPrefix))
		}
	}
	if c.Database.MaxConns < 2 {
		errs = append(errs, fmt.Errorf("database.max_conns (%s_DATABASE_MAX_CONNS) must be at least 2", EnvPrefix))
	}
	if c.Temporal.Address != "" {
		if err := checkHostPort(c.Temporal.Address); err != nil {
			errs = append(errs, fmt.Errorf("temporal.address (%s_TEMPORAL_ADDRESS or TEMPORAL_ADDRESS) %q is not host:port: %v", EnvPrefix, c.Temporal.Address, err))
		}
	}
	if c.Temporal.UIURL != "" {
		if u, err := url.Parse(c.Temporal.UIURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			errs = append(errs, fmt.Errorf("temporal.ui_url (%s_TEMPORAL_UI_URL) %q must be an absolute http(s) URL", EnvPrefix, c.Temporal.UIURL))
		}
	}
	if c.Temporal.Namespace == "" {
		errs = append(errs, fmt.Errorf("temporal.namespace (%s_TEMPORAL_NAMESPACE) must not be empty", EnvPrefix))
	}
	if c.Temporal.Pollers < 1 || c.Temporal.Pollers > 64 {
		errs = append(errs, fmt.Errorf("temporal.pollers (%s_TEMPORAL_POLLERS) must be 1 to 64", EnvPrefix))
	}
	if c.Temporal.RenderConcurrency < 1 || c.Temporal.RenderConcurrency > 256 {
		errs = append(errs, fmt.Errorf("temporal.render_concurrency (%s_TEMPORAL_RENDER_CONCURRENCY) must be 1 to 256", EnvPrefix))
	}
	if c.Enclaves.SecretKeys != "" {
		if _, err := codec.Parse(c.Enclaves.SecretKeys); err != nil {
			errs = append(errs, fmt.Errorf("enclaves.secret_keys (%s_ENCLAVES_SECRET_KEYS): %v", EnvPrefix, err))
		}
	}
	if u := c.Enclaves.GitBaseURL; u != "" && !strings.HasPrefix(u, "https://") && !strings.HasPrefix(u, "http://") {
		errs = append(errs, fmt.Errorf("enclaves.git_base_url (%s_ENCLAVES_GIT_BASE_URL) must be an http(s) URL", EnvPrefix))
	}
	if c.Temporal.CodecKeys != "" {
		if _, err := codec.Parse(c.Temporal.CodecKeys); err != nil {
			errs = append(errs, fmt.Errorf("temporal.codec_keys (%s_TEMPORAL_CODEC_KEYS): %v", EnvPrefix, err))
		}
	}
	errs = append(errs, c.Temporal.checkTLS()...)
	if c.Temporal.StopTimeout < 0 {
		errs = append(errs, fmt.Errorf("temporal.stop_timeout (%s_TEMPORAL_STOP_TIMEOUT) must not be negative", EnvPrefix))
	}
	for name, p := range map[string]int{"dev.postgres_port": c.Dev.PostgresPort, "dev.temporal_port": c.Dev.TemporalPort, "dev.temporal_ui_port": c.Dev.TemporalUIPort} {
		if p < 1 || p > 65535 {
			errs = append(errs, fmt.Errorf("%s (%s_%s) %d is not a port number (1-65535)", name, EnvPrefix, strings.ToUpper(strings.ReplaceAll(name, ".", "_")), p))
		}
	}
	switch c.Dev.TemporalLog {
	case "off", "error", "warn", "info", "debug":
	default:
		errs = append(errs, fmt.Errorf("dev.temporal_log (%s_DEV_TEMPORAL_LOG) %q must be one of off, error, warn, info, debug", EnvPrefix, c.Dev.TemporalLog))
	}
	switch c.Dev.TemporalStore {
	case "sqlite", "postgres":
	default:
		errs = append(errs, fmt.Errorf("dev.temporal_store (%s_DEV_TEMPORAL_STORE) %q must be sqlite or postgres", EnvPrefix, c.Dev.TemporalStore))
	}
	if c.Dev.TemporalShards < 0 || c.Dev.TemporalShards > 1024 {
		errs = append(errs, fmt.Errorf("dev.temporal_shards (%s_DEV_TEMPORAL_SHARDS) %d must be 0 (the store's default) to 1024", EnvPrefix, c.Dev.TemporalShards))
	}
	switch strings.ToLower(c.Log.Level) {
	case "debug", "info", "warn", "error":
	default:
		errs = append(errs, fmt.Errorf("log.level (%s_LOG_LEVEL) %q must be one of debug, info, warn, error", EnvPrefix, c.Log.Level))
	}
	switch c.Log.Format {
	case "text", "json":
	default:
		errs = append(errs, fmt.Errorf("log.format (%s_LOG_FORMAT) %q must be text or json", EnvPrefix, c.Log.Format))
	}
	errs = append(errs, c.validateModels()...)
	errs = append(errs, c.validateMedia()...)
	errs = append(errs, c.validateAudio()...)
	errs = append(errs, c.validateOAuth()...)
	errs = append(errs, c.validateSignUp()...)
	errs = append(errs, c.validateCheckout()...)
	errs = append(errs, c.validateEnclavesAWS()...)
	errs = append(errs, c.Enclaves.Limits.validate()...)
	errs = append(errs, c.validateRedaction()...)
	if _, err := limiter.NewRateFromFormatted(c.X402.RateLimit); err != nil {
		errs = append(errs, fmt.Errorf("x402.rate_limit (%s_X402_RATE_LIMIT) %q must look like 60-M (count per S, M or H)", EnvPrefix, c.X402.RateLimit))
	}
	if _, err := limiter.NewRateFromFormatted(c.X402.WalletRate()); c.X402.WalletRateLimit != "" && err != nil {
		errs = append(errs, fmt.Errorf("x402.wallet_rate_limit (%s_X402_WALLET_RATE_LIMIT) %q must look like 60-M (count per S, M or H)", EnvPrefix, c.X402.WalletRateLimit))
	}
	if err := c.X402.localOnMainNetwork(); err != nil {
		errs = append(errs, err)
	}
	if c.Runs.TruncateOutputChars < 100 {
		errs = append(errs, fmt.Errorf("runs.truncate_output_chars (%s_RUNS_TRUNCATE_OUTPUT_CHARS) must be at least 100", EnvPrefix))
	}
	if c.Runs.ModelAttempts < 1 || c.Runs.ModelAttempts > 20 {
		errs = append(errs, fmt.Errorf("runs.model_attempts (%s_RUNS_MODEL_ATTEMPTS) must be 1 to 20", EnvPrefix))
	}
	if c.Runs.ModelTimeout <= 0 {
		errs = append(errs, fmt.Errorf("runs.model_timeout (%s_RUNS_MODEL_TIMEOUT) must be positive", EnvPrefix))
	}
	return errors.Join(errs...)
}

func (c *Config) validateModels() []error {
	var errs []error
	if c.Models.OpenAI.BaseURL != "" {
		if u, err := url.Parse(c.Models.OpenAI.BaseURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			errs = append(errs, fmt.Errorf("models.openai.base_url (%s_MODELS_OPENAI_BASE_URL) must be an absolute http(s) URL", EnvPrefix))
		}
	}
	if len(c.Models.Catalog) == 0 {
		errs = append(errs, errors.New("models.catalog must list at least one model"))
	}
	seen := map[string]bool{}
	for i, m := range c.Models.Catalog {
		where := fmt.Sprintf("models.catalog[%d] (%s)", i, m.ID)
		if m.ID == "" {
			errs = append(errs, fmt.Errorf("models.catalog[%d] has no id", i))
		}
		if seen[m.ID] {
			errs = append(errs, fmt.Errorf("%s: model id listed twice", where))
		}
		seen[m.ID] = true
		switch m.Provider {
		case "local":
		case "openai":
			if c.Models.OpenAI.BaseURL == "" {
				errs = append(errs, fmt.Errorf("%s uses provider openai but models.openai.base_url (%s_MODELS_OPENAI_BASE_URL) is not set", where, EnvPrefix))
			}
		default:
			errs = append(errs, fmt.Errorf("%s: provider must be local or openai, got %q", where, m.Provider))
		}
		if m.ContextTokens < 16 {
			errs = append(errs, fmt.Errorf("%s: context_tokens must be at least 16", where))
		}
		for _, p := range []string{m.PromptPer1KUSD, m.CompletionPer1KUSD} {
			if v, err := money.ParseUSD(p); err != nil || v < 0 {
				errs = append(errs, fmt.Errorf("%s: price %q is not a decimal USD amount with at most 6 decimals", where, p))
			}
		}
	}
	return errs
}

// ValidateProduction adds what the stand-alone frontend and worker need:
// they start nothing of their own, so both addresses are required.
func (c *Config) ValidateProduction() error {
	var errs []error
	if err := c.Validate(); err != nil {
		errs = append(errs, err)
	}
	if c.Database.URL == "" {
		errs = append(errs, fmt.Errorf("database.url (%s_DATABASE_URL or DATABASE_URL) is required outside the dev command", EnvPrefix))
	}
	if c.Temporal.Address == "" {
		errs = append(errs, fmt.Errorf("temporal.address (%s_TEMPORAL_ADDRESS or TEMPORAL_ADDRESS) is required outside the dev command", EnvPrefix))
	}
	return errors.Join(errs...)
}

// RefuseDevOnly refuses, for the production roles (frontend, worker, all),
// what only the dev command and the test harness may run: the local TEST
// MODE card checkout, whose test card buys real credit — one variable must
// not turn a deployment into a credit mint.
func (c *Config) RefuseDevOnly() error {
	if c.Checkout.Provider == "local" {
		return fmt.Errorf("checkout.provider (%s_CHECKOUT_PROVIDER) is local outside the dev command, where its TEST MODE card would buy real credit: use stripe, or leave it empty to turn card payments off", EnvPrefix)
	}
	if c.Mail.Sender == "mailbox" {
		return fmt.Errorf("mail.sender (%s_MAIL_SENDER) is mailbox outside the dev command, where no message would leave the machine: use smtp", EnvPrefix)
	}
	return nil
}

// BaseURL is the public base address, without a trailing slash.
func (c *Config) BaseURL() string {
	if c.HTTP.PublicURL != "" {
		return strings.TrimRight(c.HTTP.PublicURL, "/")
	}
	return "http://" + c.HTTP.Addr
}

func checkHostPort(addr string) error {
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return err
	}
	n, err := strconv.Atoi(port)
	if err != nil || n < 0 || n > 65535 {
		return fmt.Errorf("port %q is not a number from 0 to 65535", port)
	}
	return nil
}
