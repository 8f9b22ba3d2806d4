package oauth

import (
	"testing"

	"conduit/internal/accounts"
)

func TestRedirectURIRule(t *testing.T) {
	for _, ok := range []string{"https://claude.example/cb", "https://a.example:8443/x?y=1", "http://127.0.0.1/cb", "http://127.0.0.1:33418/", "http://[::1]:9/cb", "http://localhost:7777/callback"} {
		if err := checkRedirectURI(ok); err != nil {
			t.Errorf("%q refused: %v", ok, err)
		}
	}
	for _, bad := range []string{"", "/relative", "http://example.com/cb", "http://10.0.0.1/cb", "https://a.example/cb#frag", "https://a.example/cb#",
		"https://user:pw@a.example/cb", "myapp://cb", "javascript:alert(1)", "https:///nohost", "https://a.example/\x00", "ftp://a.example/"} {
		if err := checkRedirectURI(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestWantedAndGrantable(t *testing.T) {
	// No scope named: the default pair, as far as the client registered it.
	if got := wanted(nil, []string{"pipelines:read", "keys:manage"}); len(got) != 1 || got[0] != "pipelines:read" {
		t.Fatalf("%v", got)
	}
	req := &Request{Scopes: wanted([]string{"pipelines:run", "pipelines:read", "pipelines:run"}, nil)}
	grant, lacking := req.Grantable(accounts.Principal{Scopes: []string{"pipelines:read"}})
	if len(grant) != 1 || grant[0] != "pipelines:read" || len(lacking) != 1 || lacking[0] != "pipelines:run" {
		t.Fatalf("grant %v lacking %v", grant, lacking)
	}
}

func TestResourceRule(t *testing.T) {
	p, err := New(Config{Issuer: "https://api.example.test/", Secret: make([]byte, 32)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if p.Resource() != "https://api.example.test/api/mcp" || p.ResourceMetadataURL() != "https://api.example.test/.well-known/oauth-protected-resource/api/mcp" {
		t.Fatalf("%s %s", p.Resource(), p.ResourceMetadataURL())
	}
	for _, ok := range [][]string{nil, {"https://api.example.test/api/mcp"}, {"https://api.example.test/api/mcp/"}} {
		if err := p.checkResource(ok); err != nil {
			t.Errorf("%v refused", ok)
		}
	}
	for _, bad := range [][]string{{"https://api.example.test"}, {"https://evil.example/api/mcp"}, {"https://api.example.test/api/mcp", "https://other"}} {
		if err := p.checkResource(bad); err == nil {
			t.Errorf("%v accepted", bad)
		}
	}
	if _, err := New(Config{Issuer: "x", Secret: []byte("short")}, nil); err == nil {
		t.Fatal("a short secret was accepted")
	}
}
