package activities

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
	"go.temporal.io/sdk/temporal"

	"conduit/internal/enclaves/provider"
)

func TestClassify(t *testing.T) {
	_, jsonErr := json.Marshal(math.Inf(1))
	typed := temporal.NewApplicationError("refused", "prompt_refused")
	for _, c := range []struct {
		name      string
		err       error
		permanent bool
	}{
		{"NUL in jsonb", fmt.Errorf("recording: %w", &pgconn.PgError{Code: "22P05"}), true},
		{"unique violation", &pgconn.PgError{Code: "23505"}, true},
		{"check violation", &pgconn.PgError{Code: "23514"}, true},
		{"undefined column", &pgconn.PgError{Code: "42703"}, true},
		{"serialization failure", &pgconn.PgError{Code: "40001"}, false},
		{"deadlock", &pgconn.PgError{Code: "40P01"}, false},
		{"server shutting down", &pgconn.PgError{Code: "57P01"}, false},
		{"cannot connect", &pgconn.PgError{Code: "08006"}, false},
		{"unencodable value", jsonErr, true},
		{"plain error", errors.New("connection reset by peer"), false},
		{"enclave: image missing", fmt.Errorf("deploying: %w", provider.Errorf(provider.Permanent, "prepare", "enc_1", "no such image")), true},
		{"enclave: registry down", provider.Errorf(provider.Transient, "prepare", "enc_1", "connection refused"), false},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := Classify(c.err)
			var app *temporal.ApplicationError
			isPermanent := errors.As(got, &app) && app.NonRetryable() && app.Type() == ErrPermanent
			if isPermanent != c.permanent {
				t.Fatalf("Classify(%v) = %v", c.err, got)
			}
		})
	}
	if Classify(typed) != typed || Classify(nil) != nil {
		t.Fatal("typed errors and nil pass through unchanged")
	}
}
