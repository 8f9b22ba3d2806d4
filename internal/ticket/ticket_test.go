package ticket

import (
	"errors"
	"strings"
	"testing"
	"time"
)

var secret = []byte("0123456789abcdef0123456789abcdef")

func TestIssueVerify(t *testing.T) {
	now := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	s, err := New(secret, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	s = s.WithClock(func() time.Time { return now })
	run := "2026-11-22T10:00:00.000Z#0a1b2c3d"
	tok := s.Issue("video", run)
	if err := s.Verify("video", run, tok); err != nil {
		t.Fatalf("fresh ticket refused: %v", err)
	}
	other, _ := New([]byte("another-secret-another-secret-xx"), time.Hour)
	exp, mac, _ := strings.Cut(tok, ".")
	cases := []struct {
		name, kind, run, tok string
		want                 error
	}{
		{"other kind", "speech", run, tok, ErrMismatch},
		{"other run", "video", run[:len(run)-1] + "e", tok, ErrMismatch},
		{"other secret", "video", run, other.Issue("video", run), ErrMismatch},
		{"extended expiry", "video", run, "9" + exp + "." + mac, ErrMismatch},
		{"no dot", "video", run, exp + mac, ErrMalformed},
		{"empty", "video", run, "", ErrMalformed},
		{"letters", "video", run, "abc." + mac, ErrMalformed},
		{"negative", "video", run, "-5." + mac, ErrMalformed},
		{"leading zero", "video", run, "0" + exp + "." + mac, ErrMalformed},
		{"truncated mac", "video", run, exp + "." + mac[:10], ErrMismatch},
	}
	for _, c := range cases {
		if err := s.Verify(c.kind, c.run, c.tok); !errors.Is(err, c.want) {
			t.Errorf("%s: got %v, want %v", c.name, err, c.want)
		}
	}
	later := s.WithClock(func() time.Time { return now.Add(time.Hour) })
	if err := later.Verify("video", run, tok); !errors.Is(err, ErrExpired) {
		t.Errorf("an hour later: got %v, want expired", err)
	}
}

func TestNewRefusesWeakSecrets(t *testing.T) {
	if _, err := New([]byte("short"), time.Hour); err == nil {
		t.Error("a 5-byte secret was accepted")
	}
	if _, err := New(secret, 0); err == nil {
		t.Error("a zero lifetime was accepted")
	}
}

func FuzzVerify(f *testing.F) {
	now := time.Unix(1_790_000_000, 0)
	s, _ := New(secret, time.Hour)
	s = s.WithClock(func() time.Time { return now })
	f.Add("video", "r#1", s.Issue("video", "r#1"))
	f.Add("video", "r#1", "1.2.3")
	f.Fuzz(func(t *testing.T, kind, run, tok string) {
		// With the clock fixed, the only acceptable ticket is the one the
		// signer issues; anything else the fuzzer makes is a forgery.
		if err := s.Verify(kind, run, tok); err == nil && tok != s.Issue(kind, run) {
			t.Fatalf("accepted a forged ticket %q for %q/%q", tok, kind, run)
		}
	})
}
