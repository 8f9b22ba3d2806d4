// Package ticket makes and checks claim tickets: the signed token in a
// pay-per-call run's statusUrl and retryUrl that is the only credential
// needed to poll or retry that run (spec §5). A ticket binds the run id and
// the kind of run (video, speech, music) and expires; it is
// "<expiry unix seconds>.<base64url HMAC-SHA256>", so it needs no storage
// and a leaked ticket opens one run only.
package ticket

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"strconv"
	"strings"
	"time"
)

// Errors of Verify. All of them answer 403; they differ for logs.
var (
	ErrMalformed = errors.New("claim ticket is malformed")
	ErrExpired   = errors.New("claim ticket has expired")
	ErrMismatch  = errors.New("claim ticket is not valid for this run")
)

// Signer issues and checks tickets with one secret.
type Signer struct {
	key []byte
	ttl time.Duration
	now func() time.Time
}

// New returns a signer; secret must be at least 32 bytes.
func New(secret []byte, ttl time.Duration) (*Signer, error) {
	if len(secret) < 32 {
		return nil, errors.New("ticket secret must be at least 32 bytes")
	}
	if ttl <= 0 {
		return nil, errors.New("ticket lifetime must be positive")
	}
	return &Signer{key: secret, ttl: ttl, now: time.Now}, nil
}

// WithClock returns a copy reading time from now (tests).
func (s *Signer) WithClock(now func() time.Time) *Signer {
	c := *s
	c.now = now
	return &c
}

// Issue returns a fresh ticket for the run.
func (s *Signer) Issue(kind, runID string) string {
	exp := s.now().Add(s.ttl).Unix()
	return strconv.FormatInt(exp, 10) + "." + s.mac(kind, runID, exp)
}

// Verify checks that token was issued for this kind and run and has not
// expired.
func (s *Signer) Verify(kind, runID, token string) error {
	expPart, macPart, ok := strings.Cut(token, ".")
	if !ok || len(expPart) == 0 || len(expPart) > 12 {
		return ErrMalformed
	}
	exp, err := strconv.ParseInt(expPart, 10, 64)
	if err != nil || exp <= 0 || strconv.FormatInt(exp, 10) != expPart {
		return ErrMalformed
	}
	if !hmac.Equal([]byte(macPart), []byte(s.mac(kind, runID, exp))) {
		return ErrMismatch
	}
	if s.now().Unix() >= exp {
		return ErrExpired
	}
	return nil
}

func (s *Signer) mac(kind, runID string, exp int64) string {
	h := hmac.New(sha256.New, s.key)
	// Length-prefixed fields: no two (kind, run, expiry) triples sign the
	// same bytes.
	for _, f := range []string{"conduit/claim-ticket/v1", kind, runID, strconv.FormatInt(exp, 10)} {
		h.Write([]byte(strconv.Itoa(len(f)) + ":" + f))
	}
	return base64.RawURLEncoding.EncodeToString(h.Sum(nil))
}

// Expiry reads when a ticket this package issued expires (the zero time
// for a malformed one). It checks nothing: Verify does.
func Expiry(token string) time.Time {
	expPart, _, ok := strings.Cut(token, ".")
	if !ok {
		return time.Time{}
	}
	exp, err := strconv.ParseInt(expPart, 10, 64)
	if err != nil || exp <= 0 {
		return time.Time{}
	}
	return time.Unix(exp, 0).UTC()
}
