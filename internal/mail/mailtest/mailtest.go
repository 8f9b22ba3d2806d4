// Package mailtest plays an SMTP server in process for tests of the SMTP
// sender (emersion/go-smtp's server): it keeps every message it accepts,
// checks PLAIN credentials, and can refuse recipients as a real server
// does.
package mailtest

import (
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/emersion/go-sasl"
	"github.com/emersion/go-smtp"
)

// Received is one accepted message.
type Received struct {
	From, To string
	Data     []byte
	// User is who authenticated (empty: nobody).
	User string
}

// Server is a running SMTP server.
type Server struct {
	Host string
	Port int
	// User and Password are the credentials AUTH PLAIN accepts.
	User, Password string

	mu       sync.Mutex
	received []Received
	refuse   *smtp.SMTPError
}

// Start serves SMTP on a free loopback port until the test ends.
func Start(t testing.TB, user, password string) *Server {
	t.Helper()
	s := &Server{User: user, Password: password}
	srv := smtp.NewServer(smtp.BackendFunc(func(*smtp.Conn) (smtp.Session, error) { return &session{s: s}, nil }))
	srv.Domain = "mail.test.local"
	srv.AllowInsecureAuth = true // loopback: net/smtp sends PLAIN to localhost only
	srv.ReadTimeout, srv.WriteTimeout = 30*time.Second, 30*time.Second
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	addr := ln.Addr().(*net.TCPAddr)
	s.Host, s.Port = "127.0.0.1", addr.Port
	return s
}

// RefuseRecipients makes RCPT answer code (a 5xx: for good; a 4xx: try
// later); 0 accepts again.
func (s *Server) RefuseRecipients(code int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if code == 0 {
		s.refuse = nil
		return
	}
	s.refuse = &smtp.SMTPError{Code: code, Message: "mailbox unavailable"}
}

// Received is every message accepted so far.
func (s *Server) Received() []Received {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Received(nil), s.received...)
}

type session struct {
	s        *Server
	user     string
	from, to string
}

func (x *session) AuthMechanisms() []string { return []string{sasl.Plain} }

func (x *session) Auth(string) (sasl.Server, error) {
	return sasl.NewPlainServer(func(_, user, password string) error {
		if user != x.s.User || password != x.s.Password {
			return smtp.ErrAuthFailed
		}
		x.user = user
		return nil
	}), nil
}

func (x *session) Mail(from string, _ *smtp.MailOptions) error {
	if x.s.User != "" && x.user == "" {
		return smtp.ErrAuthRequired
	}
	x.from = from
	return nil
}

func (x *session) Rcpt(to string, _ *smtp.RcptOptions) error {
	x.s.mu.Lock()
	defer x.s.mu.Unlock()
	if x.s.refuse != nil {
		return x.s.refuse
	}
	x.to = to
	return nil
}

func (x *session) Data(r io.Reader) error {
	b, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	x.s.mu.Lock()
	defer x.s.mu.Unlock()
	x.s.received = append(x.s.received, Received{From: x.from, To: x.to, Data: b, User: x.user})
	return nil
}

func (x *session) Reset()        { x.from, x.to = "", "" }
func (x *session) Logout() error { return nil }
