// Package errs is the domain's one error vocabulary: an error that says what
// kind of failure it is (the caller's input, a missing credential, a
// refusal, a missing thing, a conflict, missing credit, a passing outage, …)
// in a sentence that tells the caller what to do. Domain services and
// handlers return these; the HTTP layer maps a Kind to a status code in one
// place (frontend/errors.go) and the tool server turns them into tool
// errors, so no other code needs to know HTTP.
package errs

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// Kind is what went wrong, from the caller's point of view. The comment of
// each kind names the HTTP status frontend/errors.go gives it.
type Kind int

const (
	// Invalid: the request is malformed; fix it (400).
	Invalid Kind = iota + 1
	// Forbidden: the caller may not do this (403).
	Forbidden
	// NotFound: the thing does not exist, or is not the caller's (404).
	NotFound
	// Conflict: the thing is not in a state that allows this (409).
	Conflict
	// PaymentRequired: the account's credit cannot cover it, or an x402
	// payment is needed (402; Challenge carries the x402 challenge).
	PaymentRequired
	// Unavailable: a passing failure; the same request may work later (503).
	Unavailable
	// Unauthorized: no credential, or one that is not valid (401).
	Unauthorized
	// TooManyRequests: a rate limit or quota refused it for now (429).
	TooManyRequests
	// Unprocessable: well-formed but not acceptable as it stands (422).
	Unprocessable
	// TooLarge: the request body is over its limit (413).
	TooLarge
	// Unsupported: a media type the route does not take (415).
	Unsupported
	// Upstream: a service we called failed or answered badly (502).
	Upstream
	// Gone: the thing existed and no longer can be had (410).
	Gone
	// Timeout: the caller took too long to send its request (408).
	Timeout
	// MethodNotAllowed: the route exists, the method does not (405).
	MethodNotAllowed
	// HeadersTooLarge: the request's header fields are over their limit (431).
	HeadersTooLarge
	// Internal: our failure; the body says nothing internal (500).
	Internal
)

// Error is a domain failure with a sentence for the caller.
type Error struct {
	Kind Kind
	Msg  string
	// Code is the spec's machine-readable code (INSUFFICIENT_CREDITS, …);
	// for an OAuth endpoint, the OAuth error code (invalid_grant, …).
	Code string
	// Extra are fields that travel beside the message (balanceUsd, problems, …).
	Extra map[string]any
	// RetryAfter, when set, says how long to wait before trying again.
	RetryAfter time.Duration
	// Challenge is the x402 challenge (an x402.PaymentRequired) a
	// PaymentRequired refusal carries: the HTTP layer sends it as the
	// PAYMENT-REQUIRED header and the spec's 402 body.
	Challenge any
	// Scope, on a Forbidden refusal for a missing scope, names that scope
	// (the tool server's WWW-Authenticate insufficient_scope challenge).
	Scope string
}

func (e *Error) Error() string { return e.Msg }

// With returns a copy of e carrying the extra field key.
func (e *Error) With(key string, value any) *Error {
	c := *e
	c.Extra = make(map[string]any, len(e.Extra)+1)
	for k, v := range e.Extra {
		c.Extra[k] = v
	}
	c.Extra[key] = value
	return &c
}

// New is an error of kind k with a formatted message.
func New(k Kind, format string, args ...any) *Error {
	return &Error{Kind: k, Msg: fmt.Sprintf(format, args...)}
}

// Invalidf is an Invalid error.
func Invalidf(format string, args ...any) *Error { return New(Invalid, format, args...) }

// Forbiddenf is a Forbidden error.
func Forbiddenf(format string, args ...any) *Error { return New(Forbidden, format, args...) }

// NotFoundf is a NotFound error.
func NotFoundf(format string, args ...any) *Error { return New(NotFound, format, args...) }

// Conflictf is a Conflict error.
func Conflictf(format string, args ...any) *Error { return New(Conflict, format, args...) }

// Unavailablef is an Unavailable error.
func Unavailablef(format string, args ...any) *Error { return New(Unavailable, format, args...) }

// Unauthorizedf is an Unauthorized error.
func Unauthorizedf(format string, args ...any) *Error { return New(Unauthorized, format, args...) }

// TooManyf is a TooManyRequests error.
func TooManyf(format string, args ...any) *Error { return New(TooManyRequests, format, args...) }

// As returns err's *Error when it is one.
func As(err error) (*Error, bool) {
	var e *Error
	ok := errors.As(err, &e)
	return e, ok
}

// Is reports whether err is a domain error of kind k.
func Is(err error, k Kind) bool {
	e, ok := As(err)
	return ok && e.Kind == k
}

// Problems collects a request's field errors, so that one Invalid error
// names them all at once (the body's "problems": [{field, message}]).
type Problems []map[string]string

// Add records that field is wrong and why.
func (p *Problems) Add(field, msg string) {
	*p = append(*p, map[string]string{"field": field, "message": msg})
}

// Err is nil without problems, else one Invalid error saying what is not
// valid ("the task", "the enclave", …) and listing every problem.
func (p Problems) Err(what string) error {
	if len(p) == 0 {
		return nil
	}
	msgs := make([]string, len(p))
	for i, x := range p {
		msgs[i] = x["field"] + ": " + x["message"]
	}
	e := Invalidf("%s is not valid: %s", what, strings.Join(msgs, "; "))
	e.Extra = map[string]any{"problems": []map[string]string(p)}
	return e
}

// Field is an Invalid error naming one field's problem.
func Field(field, msg string) *Error {
	e := Invalidf("%s: %s", field, msg)
	e.Extra = map[string]any{"problems": []map[string]string{{"field": field, "message": msg}}}
	return e
}
