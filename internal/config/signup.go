package config

import (
	"errors"
	"fmt"
	"net/mail"
	"time"
)

// SignUp configures self-service sign-up (docs/accounts.md): the free
// credit is granted only once the email is verified through a signed,
// expiring link mailed to it.
type SignUp struct {
	// Secret keys the HMAC of verification links (at least 32
	// characters). The dev command generates and keeps one; without it
	// sign-up answers 503.
	Secret string `mapstructure:"secret"`
	// VerifyTTL is how long a verification link works.
	VerifyTTL time.Duration `mapstructure:"verify_ttl"`
}

// Mail configures how the outbox's messages leave (docs/accounts.md).
type Mail struct {
	// Sender is "smtp" (production), "mailbox" (the dev command's local
	// mailbox page: nothing leaves the machine; refused by the production
	// roles) or empty (no mail: sign-up answers 503).
	Sender string `mapstructure:"sender"`
	// From is the sender's address of every message.
	From string `mapstructure:"from"`
	// SMTP server: host, port (587: STARTTLS when offered; 465: TLS from
	// the first byte), and optional credentials (PLAIN auth, sent only
	// over TLS or to localhost).
	SMTPHost     string `mapstructure:"smtp_host"`
	SMTPPort     int    `mapstructure:"smtp_port"`
	SMTPUser     string `mapstructure:"smtp_user"`
	SMTPPassword string `mapstructure:"smtp_password"`
}

var signupDefaults = map[string]any{
	"signup.secret":      "",
	"signup.verify_ttl":  "24h",
	"mail.sender":        "",
	"mail.from":          "",
	"mail.smtp_host":     "",
	"mail.smtp_port":     587,
	"mail.smtp_user":     "",
	"mail.smtp_password": "",
}

// SignUpReady says why sign-up cannot be offered, or nil when it can: a
// verification link needs its secret and a way to mail it.
func (c *Config) SignUpReady() error {
	if len(c.SignUp.Secret) < 32 {
		return errors.New("sign-up is not configured on this deployment (signup.secret)")
	}
	if c.Mail.Sender == "" {
		return errors.New("sign-up is not configured on this deployment (mail.sender: no way to mail the verification link)")
	}
	return nil
}

func (c *Config) validateSignUp() []error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if s := c.SignUp.Secret; s != "" && len(s) < 32 {
		bad("signup.secret (%s_SIGNUP_SECRET) must be at least 32 characters", EnvPrefix)
	}
	if t := c.SignUp.VerifyTTL; t < time.Minute || t > 30*24*time.Hour {
		bad("signup.verify_ttl (%s_SIGNUP_VERIFY_TTL) must be from 1m to 720h", EnvPrefix)
	}
	m := c.Mail
	switch m.Sender {
	case "", "mailbox":
	case "smtp":
		if m.SMTPHost == "" {
			bad("mail.smtp_host (%s_MAIL_SMTP_HOST) is required with mail.sender smtp", EnvPrefix)
		}
		if m.SMTPPort < 1 || m.SMTPPort > 65535 {
			bad("mail.smtp_port (%s_MAIL_SMTP_PORT) must be a port number", EnvPrefix)
		}
		if a, err := mail.ParseAddress(m.From); err != nil || a.Name != "" || a.Address != m.From {
			bad("mail.from (%s_MAIL_FROM) must be a plain address like no-reply@example.com", EnvPrefix)
		}
	default:
		bad("mail.sender (%s_MAIL_SENDER) %q must be empty, smtp or mailbox", EnvPrefix, m.Sender)
	}
	return errs
}
