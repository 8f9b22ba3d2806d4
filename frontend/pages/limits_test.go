package pages

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"

	"conduit/internal/humans"
)

// The dashboard's sign-up form and the server agree on a password's
// length: the form's constants are read from its source and compared with
// the limits the server enforces.
func TestSignUpFormLimitsAgreeWithTheServer(t *testing.T) {
	src, err := os.ReadFile(filepath.Join("..", "..", "ui", "src", "pages", "Auth.tsx"))
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]int{"minPassword": humans.MinPassword, "maxPassword": humans.MaxPassword} {
		m := regexp.MustCompile(`const ` + name + ` = (\d+);`).FindSubmatch(src)
		if m == nil {
			t.Fatalf("Auth.tsx declares no %s", name)
		}
		if got, _ := strconv.Atoi(string(m[1])); got != want {
			t.Errorf("the form's %s is %d, the server's %d", name, got, want)
		}
	}
	for _, use := range []string{"minLength={kind === \"signup\" ? minPassword : undefined}", "maxLength={maxPassword}"} {
		if !regexp.MustCompile(regexp.QuoteMeta(use)).Match(src) {
			t.Errorf("the password field lacks %s", use)
		}
	}
	// The server refuses one character short of the form's minimum and
	// takes the minimum itself.
	if err := humans.CheckNewPassword("12345678901"); err == nil {
		t.Error("the server takes an 11-character password")
	}
	if err := humans.CheckNewPassword("123456789012"); err != nil {
		t.Errorf("the server refuses a 12-character password: %v", err)
	}
}

// Every page links the dashboard's stylesheet, the one the app loads.
func TestPagesLinkTheAppStylesheet(t *testing.T) {
	if Stylesheet() == "" {
		t.Fatal("the dashboard build has no stylesheet")
	}
	b, err := Message.Render(MessageView{Title: "t", Text: "x"})
	if err != nil || !regexp.MustCompile(`<link rel="stylesheet" href="`+regexp.QuoteMeta(Stylesheet())+`">`).Match(b) {
		t.Fatalf("%v %s", err, b)
	}
}
