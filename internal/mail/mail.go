// Package mail delivers the outbox's messages (docs/accounts.md): over
// SMTP in production, or into the dev command's local mailbox, where the
// outbox row itself is the delivered message. What is mailed, and when, is
// the domain's (internal/accounts); durable delivery with retries is the
// mail workflow's.
package mail

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"mime"
	"mime/quotedprintable"
	"net"
	"net/smtp"
	"net/textproto"
	"strconv"
	"strings"
	"time"
)

// Message is one mail to one recipient, plain text.
type Message struct {
	ID      string
	To      string
	Subject string
	Body    string
}

// Sender delivers a message. An error wrapping ErrPermanent will not
// succeed by trying again (the server refused the message for good).
type Sender interface {
	Send(ctx context.Context, m Message) error
}

// ErrPermanent marks a refusal that retrying cannot fix.
var ErrPermanent = errors.New("permanent mail failure")

// Mailbox is the dev command's sender: nothing leaves the machine, the
// outbox row is the delivered message and its mailbox page shows it.
type Mailbox struct{}

// Send delivers m into the local mailbox: nothing more to do.
func (Mailbox) Send(context.Context, Message) error { return nil }

// SMTP sends through an SMTP server (RFC 5321) with the standard
// library's client: STARTTLS whenever the server offers it (port 465:
// TLS from the first byte), PLAIN auth when a user is set (only over TLS
// or to localhost, as net/smtp insists).
type SMTP struct {
	Host     string
	Port     int
	User     string
	Password string
	From     string
	// TLSConfig is for tests (a server's own certificate); nil: the
	// system's roots, ServerName Host.
	TLSConfig *tls.Config
	// Timeout bounds one delivery, connection to QUIT (default 30s).
	Timeout time.Duration
}

// Send delivers m. A 5xx answer is permanent (ErrPermanent); anything
// else (a refused connection, a 4xx) may pass on a later attempt.
func (s *SMTP) Send(ctx context.Context, m Message) error {
	if strings.ContainsAny(m.To, "\r\n<>,") || strings.ContainsAny(s.From, "\r\n<>,") {
		return fmt.Errorf("%w: a bad address", ErrPermanent)
	}
	timeout := s.Timeout
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	addr := net.JoinHostPort(s.Host, strconv.Itoa(s.Port))
	tc := s.TLSConfig
	if tc == nil {
		tc = &tls.Config{ServerName: s.Host, MinVersion: tls.VersionTLS12}
	}
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return fmt.Errorf("smtp %s: %w", addr, err)
	}
	if s.Port == 465 {
		conn = tls.Client(conn, tc)
	}
	deadline, _ := ctx.Deadline()
	_ = conn.SetDeadline(deadline)
	c, err := smtp.NewClient(conn, s.Host)
	if err != nil {
		conn.Close()
		return classify(addr, err)
	}
	defer c.Close()
	if err := s.deliver(c, tc, m); err != nil {
		return classify(addr, err)
	}
	return nil
}

func (s *SMTP) deliver(c *smtp.Client, tc *tls.Config, m Message) error {
	if err := c.Hello(helo(s.From)); err != nil {
		return err
	}
	if ok, _ := c.Extension("STARTTLS"); ok && s.Port != 465 {
		if err := c.StartTLS(tc); err != nil {
			return err
		}
	}
	if s.User != "" {
		if err := c.Auth(smtp.PlainAuth("", s.User, s.Password, s.Host)); err != nil {
			return err
		}
	}
	if err := c.Mail(s.From); err != nil {
		return err
	}
	if err := c.Rcpt(m.To); err != nil {
		return err
	}
	w, err := c.Data()
	if err != nil {
		return err
	}
	if _, err := w.Write(Format(s.From, m, time.Now())); err != nil {
		return err
	}
	if err := w.Close(); err != nil {
		return err
	}
	return c.Quit()
}

// classify makes a 5xx reply permanent.
func classify(addr string, err error) error {
	var te *textproto.Error
	if errors.As(err, &te) && te.Code >= 500 {
		return fmt.Errorf("smtp %s: %w: %v", addr, ErrPermanent, err)
	}
	return fmt.Errorf("smtp %s: %w", addr, err)
}

// helo names this host by the sender's domain (a bare "localhost" is
// refused by some servers).
func helo(from string) string {
	if _, domain, ok := strings.Cut(from, "@"); ok && domain != "" {
		return domain
	}
	return "localhost"
}

// Format writes m as an RFC 5322 message: UTF-8 plain text, quoted-
// printable, the subject encoded when it needs it.
func Format(from string, m Message, now time.Time) []byte {
	var b bytes.Buffer
	clean := func(s string) string { return strings.NewReplacer("\r", " ", "\n", " ").Replace(s) }
	id := m.ID
	if id == "" {
		r := make([]byte, 12)
		_, _ = rand.Read(r)
		id = hex.EncodeToString(r)
	}
	fmt.Fprintf(&b, "From: %s\r\n", clean(from))
	fmt.Fprintf(&b, "To: %s\r\n", clean(m.To))
	fmt.Fprintf(&b, "Subject: %s\r\n", mime.QEncoding.Encode("utf-8", clean(m.Subject)))
	fmt.Fprintf(&b, "Date: %s\r\n", now.UTC().Format(time.RFC1123Z))
	fmt.Fprintf(&b, "Message-ID: <%s@%s>\r\n", clean(id), helo(from))
	b.WriteString("MIME-Version: 1.0\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Transfer-Encoding: quoted-printable\r\n\r\n")
	q := quotedprintable.NewWriter(&b)
	_, _ = q.Write([]byte(strings.ReplaceAll(strings.ReplaceAll(m.Body, "\r\n", "\n"), "\n", "\r\n")))
	_ = q.Close()
	b.WriteString("\r\n")
	return b.Bytes()
}
