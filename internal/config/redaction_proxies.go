package config

import (
	"fmt"
	"net/url"
	"time"

	"conduit/internal/codec"
)

// RedactionProxies configures the redacting chat proxy, its audit log and
// the PII vault (docs/redaction-proxies.md).
type RedactionProxies struct {
	// Keys are the vault's master keys, written like temporal.codec_keys
	// ("id:base64(32 bytes)", comma-separated, the first one wrapping new
	// keys; the others still unwrap). Empty: temporal.codec_keys. With
	// neither, proxies cannot store upstream keys and the vault answers 503.
	Keys string `mapstructure:"keys"`
	// OpenAIURL and AnthropicURL are where proxies of those styles go when
	// they name no base URL of their own.
	OpenAIURL    string `mapstructure:"openai_url"`
	AnthropicURL string `mapstructure:"anthropic_url"`
	// UpstreamTimeout bounds one upstream call, stream included.
	UpstreamTimeout time.Duration `mapstructure:"upstream_timeout"`
	// MaxBodyBytes bounds a chat request; MaxProxies the proxies an
	// account keeps.
	MaxBodyBytes int64 `mapstructure:"max_body_bytes"`
	MaxProxies   int   `mapstructure:"max_proxies"`
}

var redactionDefaults = map[string]any{
	"redaction.keys":             "",
	"redaction.openai_url":       "https://api.openai.com/v1",
	"redaction.anthropic_url":    "https://api.anthropic.com",
	"redaction.upstream_timeout": "120s",
	"redaction.max_body_bytes":   1 << 20,
	"redaction.max_proxies":      50,
}

// VaultKeys is the master key spec in effect (redaction.keys, else
// temporal.codec_keys), empty when neither is set.
func (c *Config) VaultKeys() string {
	if c.Redaction.Keys != "" {
		return c.Redaction.Keys
	}
	return c.Temporal.CodecKeys
}

func (c *Config) validateRedaction() []error {
	var out []error
	r := c.Redaction
	if r.Keys != "" {
		if _, err := codec.Parse(r.Keys); err != nil {
			out = append(out, fmt.Errorf("redaction.keys (%s_REDACTION_KEYS): %v", EnvPrefix, err))
		}
	}
	for name, v := range map[string]string{"redaction.openai_url": r.OpenAIURL, "redaction.anthropic_url": r.AnthropicURL} {
		if u, err := url.Parse(v); err != nil || u.Scheme != "https" || u.Host == "" {
			out = append(out, fmt.Errorf("%s must be an https URL", name))
		}
	}
	if r.UpstreamTimeout <= 0 {
		out = append(out, fmt.Errorf("redaction.upstream_timeout (%s_REDACTION_UPSTREAM_TIMEOUT) must be positive", EnvPrefix))
	}
	if r.MaxBodyBytes < 1024 || r.MaxBodyBytes > 64<<20 {
		out = append(out, fmt.Errorf("redaction.max_body_bytes (%s_REDACTION_MAX_BODY_BYTES) must be 1 KiB to 64 MiB", EnvPrefix))
	}
	if r.MaxProxies < 1 || r.MaxProxies > 10000 {
		out = append(out, fmt.Errorf("redaction.max_proxies (%s_REDACTION_MAX_PROXIES) must be 1 to 10000", EnvPrefix))
	}
	return out
}
