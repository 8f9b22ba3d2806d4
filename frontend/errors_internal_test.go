package frontend

import (
	"net/http"
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
