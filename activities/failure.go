package activities

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/jackc/pgx/v5/pgconn"
	"go.temporal.io/sdk/interceptor"
	"go.temporal.io/sdk/temporal"
)

// ErrPermanent types an activity failure that retrying cannot fix.
const ErrPermanent = "permanent"

// Classify is the one place an activity's error is sorted into transient
// (retried by its policy) or permanent (not retried): the same statement
// with the same data fails the same way every time, so data exceptions,
// integrity violations and statements PostgreSQL cannot run, and values
// that cannot be encoded, end the attempt for good. Errors an activity
// typed itself (temporal application errors) keep their own verdict;
// everything else — a dropped connection, a timeout, a deadlock, a server
// starting up — is transient. A domain error that knows it is permanent
// says so with a Permanent() bool method (enclave providers' errors do).
func Classify(err error) error {
	if err == nil {
		return nil
	}
	var app *temporal.ApplicationError
	if errors.As(err, &app) {
		return err
	}
	var pg *pgconn.PgError
	if errors.As(err, &pg) && len(pg.Code) == 5 {
		switch pg.Code[:2] {
		case "22", "23", "42", "2B", "0A": // data, integrity, syntax/access, dependent objects, unsupported
			return temporal.NewNonRetryableApplicationError(err.Error(), ErrPermanent, err)
		}
	}
	var typed interface{ Permanent() bool }
	if errors.As(err, &typed) && typed.Permanent() {
		return temporal.NewNonRetryableApplicationError(err.Error(), ErrPermanent, err)
	}
	var unsupported *json.UnsupportedValueError
	var unsupportedType *json.UnsupportedTypeError
	if errors.As(err, &unsupported) || errors.As(err, &unsupportedType) {
		return temporal.NewNonRetryableApplicationError(err.Error(), ErrPermanent, err)
	}
	return err
}

// Interceptor applies Classify to every activity the worker runs.
func Interceptor() interceptor.WorkerInterceptor { return &classifying{} }

type classifying struct {
	interceptor.WorkerInterceptorBase
}

func (*classifying) InterceptActivity(ctx context.Context, next interceptor.ActivityInboundInterceptor) interceptor.ActivityInboundInterceptor {
	return &classifyingActivity{ActivityInboundInterceptorBase: interceptor.ActivityInboundInterceptorBase{Next: next}}
}

type classifyingActivity struct {
	interceptor.ActivityInboundInterceptorBase
}

func (c *classifyingActivity) ExecuteActivity(ctx context.Context, in *interceptor.ExecuteActivityInput) (any, error) {
	out, err := c.Next.ExecuteActivity(ctx, in)
	return out, Classify(err)
}
