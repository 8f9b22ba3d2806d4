package frontend

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/gin-gonic/gin"

	"conduit/internal/accounts"
	"conduit/internal/oauth"
)

// The tool server and its mirror answer a refused credential with an
// OAuth challenge pointing at their Protected Resource Metadata (RFC 9728
// §5.1), and a missing scope with insufficient_scope (RFC 6750 §3.1);
// other routes do not. The real /api/mcp routes are mounted elsewhere;
// placeholders behind the same middleware stand in for them here.
func TestBearerChallengeOnToolServerPaths(t *testing.T) {
	prov, err := oauth.New(oauth.Config{Issuer: "https://api.example.test", Secret: []byte("0123456789abcdef0123456789abcdef")}, nil)
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{deps: Deps{Accounts: &accounts.Service{}, OAuth: prov}}
	r := gin.New()
	r.Use(s.challenged)
	ok := func(c *gin.Context) { c.Status(http.StatusOK) }
	asCaller := func(c *gin.Context) {
		c.Set(principalKey, accounts.Principal{AccountID: "acct_x", Scopes: []string{"pipelines:read"}})
		c.Next()
	}
	r.POST("/api/mcp", s.authenticate, ok)
	r.POST("/api/v1/tools/:name", s.authenticate, ok)
	r.POST("/api/v1/tools/scoped/:name", asCaller, requireScope("pipelines:run"), ok)
	r.GET("/api/account/balance", s.authenticate, ok)

	meta := `resource_metadata="https://api.example.test/.well-known/oauth-protected-resource/api/mcp"`
	// A 401 names the scopes the tool server asks for (the MCP
	// authorization spec), so a client asks for those and no more.
	scope := `scope="media:read media:write pipelines:read pipelines:run pipelines:write", `
	for _, c := range []struct {
		method, path, auth string
		status             int
		challenge          string
	}{
		{"POST", "/api/mcp", "", 401, "Bearer " + scope + meta},
		{"POST", "/api/mcp", "Bearer ory_at_forged.token", 401, `Bearer error="invalid_token", ` + scope + meta},
		{"POST", "/api/v1/tools/list_pipelines", "Bearer cnd_nope", 401, `Bearer error="invalid_token", ` + scope + meta},
		{"POST", "/api/v1/tools/scoped/run_pipeline", "", 403, `Bearer error="insufficient_scope", scope="pipelines:run", ` + meta},
		{"GET", "/api/account/balance", "", 401, ""},
	} {
		req := httptest.NewRequest(c.method, c.path, nil)
		if c.auth != "" {
			req.Header.Set("Authorization", c.auth)
		}
		w := httptest.NewRecorder()
		r.ServeHTTP(w, req)
		if w.Code != c.status || w.Header().Get("WWW-Authenticate") != c.challenge {
			t.Errorf("%s %s (%q): %d %q, want %d %q", c.method, c.path, c.auth, w.Code, w.Header().Get("WWW-Authenticate"), c.status, c.challenge)
		}
	}

	// Without OAuth the challenge still says Bearer, pointing nowhere.
	s.deps.OAuth = nil
	w := httptest.NewRecorder()
	r.ServeHTTP(w, httptest.NewRequest("POST", "/api/mcp", nil))
	if w.Code != 401 || w.Header().Get("WWW-Authenticate") != "Bearer" {
		t.Errorf("without OAuth: %d %q", w.Code, w.Header().Get("WWW-Authenticate"))
	}
}
