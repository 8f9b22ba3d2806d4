package humans

import (
	"strings"
	"testing"
)

func TestPasswordHash(t *testing.T) {
	h, err := HashPassword("correct horse battery staple")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(h, "$argon2id$v=19$m=19456,t=2,p=1$") {
		t.Fatalf("hash %q does not name argon2id and its parameters", h)
	}
	if !CheckPassword("correct horse battery staple", h) {
		t.Fatal("the password does not match its own hash")
	}
	for _, wrong := range []string{"", "correct horse battery stapl", "Correct horse battery staple", "correct horse battery staple "} {
		if CheckPassword(wrong, h) {
			t.Errorf("%q matches", wrong)
		}
	}
	h2, _ := HashPassword("correct horse battery staple")
	if h2 == h {
		t.Fatal("two hashes of one password are equal: the salt is not random")
	}
}

func TestMalformedHashesMatchNothing(t *testing.T) {
	good, _ := HashPassword("a password long enough")
	parts := strings.Split(good, "$")
	for _, h := range []string{
		"", "plain", "$argon2i$v=19$m=19456,t=2,p=1$" + parts[4] + "$" + parts[5],
		"$argon2id$v=18$m=19456,t=2,p=1$" + parts[4] + "$" + parts[5],
		"$argon2id$v=19$m=99999999,t=2,p=1$" + parts[4] + "$" + parts[5], // a tampered row may not cost the machine
		"$argon2id$v=19$m=19456,t=200,p=1$" + parts[4] + "$" + parts[5],
		"$argon2id$v=19$m=19456,t=2,p=1$!!$" + parts[5],
		"$argon2id$v=19$m=19456,t=2,p=1$" + parts[4] + "$",
	} {
		if CheckPassword("a password long enough", h) {
			t.Errorf("%q matches", h)
		}
	}
}

func FuzzParsePHC(f *testing.F) {
	good, _ := HashPassword("seed password")
	f.Add(good)
	f.Add("$argon2id$v=19$m=1,t=1,p=1$$")
	f.Fuzz(func(t *testing.T, s string) {
		if p, err := parsePHC(s); err == nil && (p.memory > 1<<20 || p.time > 16 || p.threads > 16) {
			t.Fatalf("parsed parameters beyond the bounds: %+v", p)
		}
	})
}

func TestNormalizeEmail(t *testing.T) {
	for in, want := range map[string]string{"Dev@Conduit.Local": "dev@conduit.local", " a.b+c@example.com ": "a.b+c@example.com"} {
		if got, err := NormalizeEmail(in); err != nil || got != want {
			t.Errorf("%q: %q %v", in, got, err)
		}
	}
	for _, bad := range []string{"", "nobody", "Name <a@example.com>", "a@", "a\x00@example.com", strings.Repeat("a", 250) + "@example.com"} {
		if _, err := NormalizeEmail(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestCSRFTokens(t *testing.T) {
	session := NewFormToken()
	tok := CSRFToken(session)
	if !CheckCSRF(session, tok) || CheckCSRF(session, tok[:len(tok)-1]+"A") && !strings.HasSuffix(tok, "A") || CheckCSRF(NewFormToken(), tok) || CheckCSRF("", "") {
		t.Fatal("CSRF tokens do not bind to their session")
	}
	if tok == string(sessionHash(session)) {
		t.Fatal("the CSRF token is the stored hash")
	}
	if !SameToken("x", "x") || SameToken("", "") || SameToken("x", "y") {
		t.Fatal("SameToken")
	}
}

func TestNewPasswordLength(t *testing.T) {
	if CheckNewPassword("short") == nil || CheckNewPassword(strings.Repeat("p", MaxPassword+1)) == nil || CheckNewPassword("twelve chars") != nil {
		t.Fatal("password length rule")
	}
}
