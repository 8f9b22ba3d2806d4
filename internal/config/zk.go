package config

import (
	"fmt"
	"net/url"
	"time"
)

// ZKAgg configures proof aggregation (docs/proofs.md): a domain's batch
// closes when it holds BatchSize statements or BatchWait after its first.
type ZKAgg struct {
	BatchSize int           `mapstructure:"batch_size"`
	BatchWait time.Duration `mapstructure:"batch_wait"`
}

// ZKPassport configures zkPassport verification requests (docs/proofs.md).
type ZKPassport struct {
	// Domain is what requests are bound to (the SDK's domain); empty:
	// the host of http.public_url.
	Domain string `mapstructure:"domain"`
	// VerifierURL is the sidecar running zkPassport's own verifier (the
	// UltraHonk proofs and the certificate registry); empty: the
	// cryptographic level is reported as not checked.
	VerifierURL     string        `mapstructure:"verifier_url"`
	VerifierTimeout time.Duration `mapstructure:"verifier_timeout"`
	// DefaultValidity is a request's life when it names none (the SDK's
	// default, 7 days); MaxValidity bounds what a caller may ask.
	DefaultValidity time.Duration `mapstructure:"default_validity"`
	MaxValidity     time.Duration `mapstructure:"max_validity"`
	// MaxOpen bounds an account's requests not yet verified or expired.
	MaxOpen int `mapstructure:"max_open"`
	// SigningKey signs attestations: base64 of a 32-byte Ed25519 seed;
	// empty: a key made at start (attestations then verify only against
	// the key published while that process runs).
	SigningKey string `mapstructure:"signing_key"`
}

var zkDefaults = map[string]any{
	"zkagg.batch_size":            8,
	"zkagg.batch_wait":            "5s",
	"zkpassport.domain":           "",
	"zkpassport.verifier_url":     "",
	"zkpassport.verifier_timeout": "60s",
	"zkpassport.default_validity": "168h",
	"zkpassport.max_validity":     "720h",
	"zkpassport.max_open":         100,
	"zkpassport.signing_key":      "",
}

// checkZK validates the proof settings.
func (c *Config) checkZK() []error {
	var errs []error
	if c.ZKAgg.BatchSize < 1 || c.ZKAgg.BatchSize > 1024 {
		errs = append(errs, fmt.Errorf("zkagg.batch_size (%s_ZKAGG_BATCH_SIZE) must be 1 to 1024", EnvPrefix))
	}
	if c.ZKAgg.BatchWait <= 0 {
		errs = append(errs, fmt.Errorf("zkagg.batch_wait (%s_ZKAGG_BATCH_WAIT) must be positive", EnvPrefix))
	}
	z := c.ZKPassport
	if z.VerifierURL != "" {
		if u, err := url.Parse(z.VerifierURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			errs = append(errs, fmt.Errorf("zkpassport.verifier_url (%s_ZKPASSPORT_VERIFIER_URL) %q must be an absolute http(s) URL", EnvPrefix, z.VerifierURL))
		}
	}
	if z.VerifierTimeout <= 0 {
		errs = append(errs, fmt.Errorf("zkpassport.verifier_timeout (%s_ZKPASSPORT_VERIFIER_TIMEOUT) must be positive", EnvPrefix))
	}
	if z.DefaultValidity <= 0 || z.MaxValidity < z.DefaultValidity {
		errs = append(errs, fmt.Errorf("zkpassport.default_validity (%s_ZKPASSPORT_DEFAULT_VALIDITY) must be positive and at most zkpassport.max_validity", EnvPrefix))
	}
	if z.MaxOpen < 1 {
		errs = append(errs, fmt.Errorf("zkpassport.max_open (%s_ZKPASSPORT_MAX_OPEN) must be at least 1", EnvPrefix))
	}
	return errs
}
