package store

import (
	"errors"
	"io"
	"net"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"conduit/internal/errs"
)

// retryOutage is what a 503 for a database outage asks callers to wait
// before trying again.
const retryOutage = 5 * time.Second

// Classify is err in the domain's vocabulary when it is an outage
// (Unavailable), nil otherwise: the frontend is handed it at wiring time,
// so that it can answer 503 without importing the store.
func Classify(err error) *errs.Error {
	if !Unavailable(err) {
		return nil
	}
	// Nothing the caller sent is wrong, and the same call works once the
	// database is back.
	return &errs.Error{Kind: errs.Unavailable, RetryAfter: retryOutage,
		Msg: "the service is temporarily unavailable (its database cannot be reached); try again shortly"}
}

// Unavailable reports whether err means PostgreSQL could not be reached or
// dropped the connection — the server is down, restarting or refusing
// connections — rather than that a statement failed. Such a call can
// succeed unchanged once the server is back; the frontend answers 503 with
// Retry-After for it.
func Unavailable(err error) bool {
	var connect *pgconn.ConnectError
	var pgErr *pgconn.PgError
	switch {
	case err == nil:
		return false
	case errors.As(err, &connect):
		return true
	case errors.As(err, &pgErr):
		// Class 08: connection exception; 57P01–57P03: the server is
		// shutting down, crashed or not yet accepting connections; 53300:
		// it has no connection slot left.
		return strings.HasPrefix(pgErr.Code, "08") || pgErr.Code == "57P01" || pgErr.Code == "57P02" || pgErr.Code == "57P03" || pgErr.Code == "53300"
	case errors.Is(err, pgconn.ErrConnClosed):
		return true
	}
	// An I/O failure on an open connection, as pgconn wraps it (its
	// wrappers say whether the statement may have been sent).
	var wrapped interface{ SafeToRetry() bool }
	var netErr net.Error
	return errors.As(err, &wrapped) && (errors.As(err, &netErr) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF))
}
