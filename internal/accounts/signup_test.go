package accounts

import (
	"context"
	"net/url"
	"strings"
	"testing"
	"time"

	"conduit/internal/errs"
)

// A verification link's signature and expiry are checked before anything
// is looked up: with no store at all, every bad link is refused (a lookup
// would panic here), each with its kind.
func TestVerifyLinkIsCheckedBeforeAnyLookUp(t *testing.T) {
	links, err := NewVerifyLinks(strings.Repeat("k", 32), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	s := &Service{BaseURL: "https://conduit.test", VerifyLinks: links}
	link, exp := s.VerifyLink("login_1", "ada@example.com")
	if time.Until(exp) < 59*time.Minute || time.Until(exp) > time.Hour {
		t.Fatalf("expiry %s", exp)
	}
	u, err := url.Parse(link)
	if err != nil || u.Path != VerifyPath || u.Host != "conduit.test" {
		t.Fatalf("link %q", link)
	}
	q := u.Query()
	tok := q.Get("token")
	other, _ := NewVerifyLinks(strings.Repeat("x", 32), time.Hour)
	old := &Service{VerifyLinks: links.WithClock(func() time.Time { return time.Now().Add(-2 * time.Hour) })}
	oldLink, _ := old.VerifyLink("login_1", "ada@example.com")
	ou, _ := url.Parse(oldLink)
	foreign, _ := (&Service{VerifyLinks: other}).VerifyLink("login_1", "ada@example.com")
	fu, _ := url.Parse(foreign)
	for _, c := range []struct {
		login, email, token string
		kind                errs.Kind
	}{
		{"login_2", "ada@example.com", tok, errs.Forbidden},
		{"login_1", "eve@example.com", tok, errs.Forbidden},
		{"login_1", "ada@example.com", tok + "x", errs.Forbidden},
		{"login_1", "ada@example.com", "", errs.Forbidden},
		{"login_1", "ada@example.com", fu.Query().Get("token"), errs.Forbidden},
		{"login_1", "ada@example.com", strings.Repeat("9", 300), errs.Forbidden},
		{"login_1", "ada@example.com", ou.Query().Get("token"), errs.Gone},
	} {
		_, err := s.VerifyEmail(context.Background(), c.login, c.email, c.token)
		if e, ok := errs.As(err); !ok || e.Kind != c.kind {
			t.Errorf("%+v: %v", c, err)
		}
	}
	// Without a signer sign-up is off, and says why.
	off := &Service{}
	if _, err := off.VerifyEmail(context.Background(), "login_1", "ada@example.com", tok); err == nil {
		t.Fatal("verified without a signer")
	} else if e, _ := errs.As(err); e.Kind != errs.Unavailable {
		t.Fatalf("off: %v", err)
	}
	if _, err := off.SignUp(context.Background(), NewSignUp{Email: "ada@example.com"}); err == nil || !strings.Contains(err.Error(), "signup.secret") {
		t.Fatalf("sign-up off: %v", err)
	}
}
