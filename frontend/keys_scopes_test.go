package frontend_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"net/http"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"conduit/internal/apikey"
)

// enforcedScopes reads the scopes the routes enforce from the source:
// every requireScope(apikey.X) and Has(apikey.X) in frontend's non-test
// files, X resolved through internal/apikey's constants.
func enforcedScopes(t *testing.T) []string {
	t.Helper()
	fset := token.NewFileSet()
	consts := map[string]string{}
	af, err := parser.ParseFile(fset, filepath.Join("..", "internal", "apikey", "apikey.go"), nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	ast.Inspect(af, func(n ast.Node) bool {
		if vs, ok := n.(*ast.ValueSpec); ok && len(vs.Values) == len(vs.Names) {
			for i, name := range vs.Names {
				if lit, ok := vs.Values[i].(*ast.BasicLit); ok && lit.Kind == token.STRING {
					consts[name.Name], _ = strconv.Unquote(lit.Value)
				}
			}
		}
		return true
	})
	files, _ := filepath.Glob("*.go")
	seen := map[string]bool{}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		pf, err := parser.ParseFile(fset, f, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(pf, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok || len(call.Args) != 1 {
				return true
			}
			var fn string
			switch f := call.Fun.(type) {
			case *ast.Ident:
				fn = f.Name
			case *ast.SelectorExpr:
				fn = f.Sel.Name
			}
			if fn != "requireScope" && fn != "Has" {
				return true
			}
			if sel, ok := call.Args[0].(*ast.SelectorExpr); ok {
				if pkg, ok := sel.X.(*ast.Ident); ok && pkg.Name == "apikey" {
					v, ok := consts[sel.Sel.Name]
					if !ok {
						t.Fatalf("%s: apikey.%s is not a string constant of internal/apikey", f, sel.Sel.Name)
					}
					seen[v] = true
				}
			}
			return true
		})
	}
	var out []string
	for s := range seen {
		out = append(out, s)
	}
	slices.Sort(out)
	return out
}

// The scopes GET /api/keys/scopes publishes (the dashboard's key form) are
// exactly the scopes the routes enforce and the scopes a key can hold.
func TestKeyScopesPublishedEqualEnforced(t *testing.T) {
	_, key := env.NewAccount(t, apikey.KeysManage)
	body := wantStatus(t, do(t, "GET", "/api/keys/scopes", key, nil), http.StatusOK)
	var published []string
	for _, g := range body["groups"].([]any) {
		g := g.(map[string]any)
		for _, s := range g["scopes"].([]any) {
			s := s.(map[string]any)
			if g["name"] == "" || s["text"] == "" {
				t.Fatalf("undescribed: %v", g)
			}
			published = append(published, s["name"].(string))
		}
	}
	slices.Sort(published)
	enforced := enforcedScopes(t)
	if strings.Join(published, " ") != strings.Join(enforced, " ") {
		t.Fatalf("published %v\nenforced  %v", published, enforced)
	}
	if strings.Join(published, " ") != strings.Join(apikey.AllScopes(), " ") {
		t.Fatalf("published %v\nkeys hold %v", published, apikey.AllScopes())
	}
	if len(published) < 20 {
		t.Fatalf("only %d scopes published", len(published))
	}
	// Like every key route, it needs keys:manage.
	_, reader := env.NewAccount(t, apikey.PipelinesRead)
	wantStatus(t, do(t, "GET", "/api/keys/scopes", reader, nil), http.StatusForbidden)
}
