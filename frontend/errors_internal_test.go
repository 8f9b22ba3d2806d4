package frontend

import (
	"fmt"
	"go/parser"
	"go/token"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"conduit/internal/errs"
)

// Every kind of the domain's vocabulary has its own status: a kind added to
// internal/errs without a row in the table would answer 500.
func TestEveryErrorKindHasAStatus(t *testing.T) {
	seen := map[int]errs.Kind{}
	for k := errs.Invalid; k <= errs.Internal; k++ {
		st, ok := statuses[k]
		if !ok {
			t.Fatalf("kind %d has no HTTP status in frontend/errors.go", k)
		}
		if k != errs.Internal && st == http.StatusInternalServerError {
			t.Errorf("kind %d maps to 500", k)
		}
		if other, dup := seen[st]; dup {
			t.Errorf("kinds %d and %d both map to %d", other, k, st)
		}
		seen[st] = k
	}
}

// errorStatus matches what picks an error's HTTP status by hand: a 4xx or
// 5xx constant of net/http, an APIError or errorf (kept until the other
// branches merge), or writing a status and body at once.
var errorStatus = regexp.MustCompile(`http\.Status(BadRequest|Unauthorized|PaymentRequired|Forbidden|NotFound|MethodNotAllowed|` +
	`NotAcceptable|ProxyAuthRequired|RequestTimeout|Conflict|Gone|LengthRequired|PreconditionFailed|RequestEntityTooLarge|` +
	`RequestURITooLong|UnsupportedMediaType|RequestedRangeNotSatisfiable|ExpectationFailed|Teapot|MisdirectedRequest|` +
	`UnprocessableEntity|Locked|FailedDependency|TooEarly|UpgradeRequired|PreconditionRequired|TooManyRequests|` +
	`RequestHeaderFieldsTooLarge|UnavailableForLegalReasons|InternalServerError|NotImplemented|BadGateway|ServiceUnavailable|` +
	`GatewayTimeout|HTTPVersionNotSupported|VariantAlsoNegotiates|InsufficientStorage|LoopDetected|NotExtended|` +
	`NetworkAuthenticationRequired)\b|\bAPIError\{|\berrorf\(|AbortWithStatus`)

// Only errors.go turns errors into HTTP statuses: every other file of the
// frontend (pages included) returns *errs.Error values and calls fail,
// writeError or failPage, so the statuses table is the whole story.
func TestOnlyErrorsGoPicksErrorStatuses(t *testing.T) {
	var files []string
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "node_modules" || strings.HasPrefix(d.Name(), ".")) && path != "." {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(path, ".go") && !strings.HasSuffix(path, "_test.go") {
			files = append(files, path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range files {
		if path == "errors.go" {
			continue
		}
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		var hits []string
		for i, line := range strings.Split(string(b), "\n") {
			if errorStatus.MatchString(line) {
				hits = append(hits, fmt.Sprintf("%s:%d: %s", path, i+1, strings.TrimSpace(line)))
			}
		}
		if len(hits) > 0 {
			t.Errorf("an error status outside errors.go (return an *errs.Error and call fail):\n%s", strings.Join(hits, "\n"))
		}
	}
}

// Handlers call domain services: only server.go, which wires the store and
// the Temporal client into them, imports either.
func TestHandlersImportNoStoreNorTemporalClient(t *testing.T) {
	fset := token.NewFileSet()
	pkgs, err := parser.ParseDir(fset, ".", func(fi fs.FileInfo) bool { return !strings.HasSuffix(fi.Name(), "_test.go") }, parser.ImportsOnly)
	if err != nil {
		t.Fatal(err)
	}
	for _, pkg := range pkgs {
		for path, f := range pkg.Files {
			name := filepath.Base(path)
			for _, imp := range f.Imports {
				p := strings.Trim(imp.Path.Value, `"`)
				if (p == "conduit/internal/store" || p == "go.temporal.io/sdk/client") && name != "server.go" {
					t.Errorf("%s imports %s: call a domain service instead (server.go wires it)", name, p)
				}
			}
		}
	}
}
