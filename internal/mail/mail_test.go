package mail_test

import (
	"context"
	"errors"
	"net/mail"
	"strings"
	"testing"

	cmail "conduit/internal/mail"
	"conduit/internal/mail/mailtest"
)

// The SMTP sender against an SMTP server played in process: it
// authenticates, the server receives a well-formed message with the body
// intact, and a 5xx refusal is permanent while a 4xx is not.
func TestSMTPSenderDelivers(t *testing.T) {
	srv := mailtest.Start(t, "conduit", "s3cret-password")
	s := &cmail.SMTP{Host: srv.Host, Port: srv.Port, User: "conduit", Password: "s3cret-password", From: "no-reply@conduit.test"}
	link := "http://127.0.0.1:8080/verify-email?email=ada%40example.com&login=login_1&token=1893456000.abcdefghijklmnopqrstuvwxyz0123456789-_ABCDEFG"
	body := "Open this link to confirm your email:\n\n" + link + "\n\nÜnïcødé survives.\n"
	if err := s.Send(context.Background(), cmail.Message{ID: "mail_1", To: "ada@example.com", Subject: "Confirm your email — Conduit", Body: body}); err != nil {
		t.Fatal(err)
	}
	got := srv.Received()
	if len(got) != 1 || got[0].From != "no-reply@conduit.test" || got[0].To != "ada@example.com" || got[0].User != "conduit" {
		t.Fatalf("received %+v", got)
	}
	m, err := mail.ReadMessage(strings.NewReader(string(got[0].Data)))
	if err != nil {
		t.Fatal(err)
	}
	subj, err := new(mailDecoder).decode(m.Header.Get("Subject"))
	if err != nil || subj != "Confirm your email — Conduit" || m.Header.Get("To") != "ada@example.com" || !strings.Contains(m.Header.Get("Message-ID"), "mail_1") {
		t.Fatalf("headers %v (subject %q, %v)", m.Header, subj, err)
	}
	text := decodeQP(t, m.Body)
	if !strings.Contains(text, link) || !strings.Contains(text, "Ünïcødé survives.") {
		t.Fatalf("body does not carry the link intact:\n%s", text)
	}

	// Wrong credentials: the server refuses (535), for good.
	bad := *s
	bad.Password = "wrong"
	if err := bad.Send(context.Background(), cmail.Message{To: "ada@example.com", Subject: "x", Body: "x"}); !errors.Is(err, cmail.ErrPermanent) {
		t.Fatalf("wrong password: %v", err)
	}
	// A refused recipient: 550 is permanent, 451 may pass later.
	srv.RefuseRecipients(550)
	if err := s.Send(context.Background(), cmail.Message{To: "gone@example.com", Subject: "x", Body: "x"}); !errors.Is(err, cmail.ErrPermanent) {
		t.Fatalf("550: %v", err)
	}
	srv.RefuseRecipients(451)
	if err := s.Send(context.Background(), cmail.Message{To: "busy@example.com", Subject: "x", Body: "x"}); err == nil || errors.Is(err, cmail.ErrPermanent) {
		t.Fatalf("451: %v", err)
	}
	srv.RefuseRecipients(0)
	// Nobody listening: transient.
	down := *s
	down.Port = 1
	if err := down.Send(context.Background(), cmail.Message{To: "ada@example.com", Subject: "x", Body: "x"}); err == nil || errors.Is(err, cmail.ErrPermanent) {
		t.Fatalf("no server: %v", err)
	}
	// A recipient that would inject headers or commands is refused before
	// any connection.
	if err := s.Send(context.Background(), cmail.Message{To: "a@example.com\r\nRCPT TO:<b@example.com>", Subject: "x", Body: "x"}); !errors.Is(err, cmail.ErrPermanent) {
		t.Fatalf("injected recipient: %v", err)
	}
	if n := len(srv.Received()); n != 1 {
		t.Fatalf("%d messages received, want 1", n)
	}
}
