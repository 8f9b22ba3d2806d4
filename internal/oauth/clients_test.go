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
	// No scope named: the tool server's defaults, as far as the client
	// registered them (keys:manage is no default).
	if got := wanted(nil, []string{"pipelines:read", "keys:manage", "pii:read"}); len(got) != 1 || got[0] != "pipelines:read" {
		t.Fatalf("%v", got)
	}
	req := &Request{Scopes: wanted([]string{"pipelines:run", "pipelines:read", "pipelines:run", "pii:delete"}, nil)}
	grant, lacking, unused := req.Grantable(accounts.Principal{Scopes: []string{"pipelines:read", "pii:delete"}})
	if len(grant) != 1 || grant[0] != "pipelines:read" || len(lacking) != 1 || lacking[0] != "pipelines:run" || len(unused) != 1 || unused[0] != "pii:delete" {
		t.Fatalf("grant %v lacking %v unused %v", grant, lacking, unused)
	}
	if !Ticked("pipelines:run") || Ticked("keys:manage") {
		t.Fatal("the consent page's defaults")
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
	// Scheme and host are compared case-insensitively, without default
	// ports or a trailing slash; the path is case-sensitive.
	for _, ok := range [][]string{nil, {"https://api.example.test/api/mcp"}, {"https://api.example.test/api/mcp/"},
		{"HTTPS://API.Example.TEST/api/mcp"}, {"https://api.example.test:443/api/mcp"}, {"hTTps://Api.example.test:443/api/mcp/"}} {
		if err := p.checkResource(ok); err != nil {
			t.Errorf("%v refused", ok)
		}
	}
	for _, bad := range [][]string{{"https://api.example.test"}, {"https://evil.example/api/mcp"}, {"https://api.example.test/api/mcp", "https://other"},
		{"https://api.example.test/API/MCP"}, {"http://api.example.test/api/mcp"}, {"https://api.example.test:8443/api/mcp"}, {"https://api.example.test/api/mcp#x"},
		{"https://api.example.test/api/mcp?x=1"}, {"https://u@api.example.test/api/mcp"}, {"/api/mcp"}, {""}} {
		if err := p.checkResource(bad); err == nil {
			t.Errorf("%v accepted", bad)
		}
	}
	// An http issuer on port 80 compares equal written with or without it.
	h, _ := New(Config{Issuer: "http://LOCALHOST:80", Secret: make([]byte, 32)}, nil)
	if err := h.checkResource([]string{"http://localhost/api/mcp"}); err != nil {
		t.Errorf("default http port: %v", err)
	}
	if _, err := New(Config{Issuer: "x", Secret: []byte("short")}, nil); err == nil {
		t.Fatal("a short secret was accepted")
	}
}
