// Package errs is the domain's error vocabulary: an error that says what
// kind of failure it is (the caller's input, a missing thing, a refusal, a
// conflict, missing credit, a passing outage) in a sentence that tells the
// caller what to do. Domain services return these; the HTTP layer maps a
// Kind to a status code in one place (frontend/errors.go) and the tool
// server turns them into tool errors, so neither needs to know the other.
package errs

import (
	"errors"
	"fmt"
	"time"
)

// Kind is what went wrong, from the caller's point of view.
type Kind int

const (
	// Invalid: the request is malformed; fix it (HTTP 400).
	Invalid Kind = iota + 1
	// Forbidden: the caller may not do this (403).
	Forbidden
	// NotFound: the thing does not exist, or is not the caller's (404).
	NotFound
	// Conflict: the thing is not in a state that allows this (409).
	Conflict
	// PaymentRequired: the account's credit cannot cover it (402).
	PaymentRequired
	// Unavailable: a passing failure; the same request may work later (503).
	Unavailable
)

// Error is a domain failure with a sentence for the caller.
type Error struct {
	Kind Kind
	Msg  string
	// Code is the spec's machine-readable code (INSUFFICIENT_CREDITS, …).
	Code string
	// Extra are fields that travel beside the message (balanceUsd, problems, …).
	Extra map[string]any
	// RetryAfter, when set, says how long to wait before trying again.
	RetryAfter time.Duration
}

func (e *Error) Error() string { return e.Msg }

func newf(k Kind, format string, args ...any) *Error {
	return &Error{Kind: k, Msg: fmt.Sprintf(format, args...)}
}

// Invalidf is an Invalid error.
func Invalidf(format string, args ...any) *Error { return newf(Invalid, format, args...) }

// Forbiddenf is a Forbidden error.
func Forbiddenf(format string, args ...any) *Error { return newf(Forbidden, format, args...) }

// NotFoundf is a NotFound error.
func NotFoundf(format string, args ...any) *Error { return newf(NotFound, format, args...) }

// Conflictf is a Conflict error.
func Conflictf(format string, args ...any) *Error { return newf(Conflict, format, args...) }

// As returns err's *Error when it is one.
func As(err error) (*Error, bool) {
	var e *Error
	ok := errors.As(err, &e)
	return e, ok
}
