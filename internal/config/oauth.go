package config

import (
	"errors"
	"fmt"
	"time"

	"github.com/ulule/limiter/v3"
)

// OAuth configures the authorization server the tool server's clients
// (assistants) connect through (docs/oauth.md).
type OAuth struct {
	// Secret keys the HMAC signatures of authorization codes, access and
	// refresh tokens (at least 32 characters). The dev command generates
	// one; without it OAuth is off (its endpoints answer 503) and API keys
	// remain the only bearer credential.
	Secret string `mapstructure:"secret"`
	// AccessTokenTTL is how long an access token works.
	AccessTokenTTL time.Duration `mapstructure:"access_token_ttl"`
	// RefreshTokenTTL is how long a refresh token can be exchanged; every
	// exchange rotates it (a new one, the same lifetime again).
	RefreshTokenTTL time.Duration `mapstructure:"refresh_token_ttl"`
	// CodeTTL is how long an authorization code can be exchanged.
	CodeTTL time.Duration `mapstructure:"code_ttl"`
	// RegisterRateLimit bounds dynamic client registrations per client
	// address ("<count>-<S|M|H>"); beyond it: 429.
	RegisterRateLimit string `mapstructure:"register_rate_limit"`
}

// Ready says why OAuth cannot be offered, or nil when it can.
func (o OAuth) Ready() error {
	if len(o.Secret) < 32 {
		return errors.New("oauth.secret must be set (at least 32 characters) to sign OAuth tokens")
	}
	return nil
}

// SignIn configures human sign-in (email and password) for the consent
// page and the dashboard.
type SignIn struct {
	// SessionTTL is how long a sign-in lasts.
	SessionTTL time.Duration `mapstructure:"session_ttl"`
	// RateLimit bounds sign-in attempts, per client address and per email
	// each ("<count>-<S|M|H>"); beyond it: 429.
	RateLimit string `mapstructure:"rate_limit"`
}

var oauthDefaults = map[string]any{
	"oauth.secret":              "",
	"oauth.access_token_ttl":    "1h",
	"oauth.refresh_token_ttl":   "720h",
	"oauth.code_ttl":            "10m",
	"oauth.register_rate_limit": "20-H",
	"signin.session_ttl":        "12h",
	"signin.rate_limit":         "10-M",
}

func (c *Config) validateOAuth() []error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	o := c.OAuth
	if o.Secret != "" && len(o.Secret) < 32 {
		bad("oauth.secret (%s_OAUTH_SECRET) must be at least 32 characters", EnvPrefix)
	}
	if o.AccessTokenTTL < time.Second || o.AccessTokenTTL > 24*time.Hour {
		bad("oauth.access_token_ttl (%s_OAUTH_ACCESS_TOKEN_TTL) must be from 1s to 24h", EnvPrefix)
	}
	if o.RefreshTokenTTL < o.AccessTokenTTL {
		bad("oauth.refresh_token_ttl (%s_OAUTH_REFRESH_TOKEN_TTL) must be at least oauth.access_token_ttl", EnvPrefix)
	}
	if o.CodeTTL < time.Second || o.CodeTTL > time.Hour {
		bad("oauth.code_ttl (%s_OAUTH_CODE_TTL) must be from 1s to 1h", EnvPrefix)
	}
	if _, err := limiter.NewRateFromFormatted(o.RegisterRateLimit); err != nil {
		bad("oauth.register_rate_limit (%s_OAUTH_REGISTER_RATE_LIMIT) %q must look like 20-H (count per S, M or H)", EnvPrefix, o.RegisterRateLimit)
	}
	if c.SignIn.SessionTTL < time.Minute {
		bad("signin.session_ttl (%s_SIGNIN_SESSION_TTL) must be at least 1m", EnvPrefix)
	}
	if _, err := limiter.NewRateFromFormatted(c.SignIn.RateLimit); err != nil {
		bad("signin.rate_limit (%s_SIGNIN_RATE_LIMIT) %q must look like 10-M (count per S, M or H)", EnvPrefix, c.SignIn.RateLimit)
	}
	return errs
}
