package blob

import (
	"time"

	"conduit/internal/ticket"
)

// Links makes and checks expiring file URLs, the `t` query parameter of a
// library file's URL: a claim ticket (internal/ticket, the signing every
// statusUrl uses) of its own kind over the blob key. Unlike a purchase's
// `c` signature, which is the buyer's lasting capability to the file it
// paid for, a library link stops working after its lifetime; the library
// hands out a fresh one with every answer.
type Links struct {
	tickets *ticket.Signer
	ttl     time.Duration
}

// linkKind separates file links from claim tickets signed with the same
// secret: a ticket for a run can never open a file, nor the other way
// round.
const linkKind = "library-file"

// NewLinks signs with secret (at least 32 bytes); links last ttl.
func NewLinks(secret []byte, ttl time.Duration) (*Links, error) {
	t, err := ticket.New(secret, ttl)
	if err != nil {
		return nil, err
	}
	return &Links{tickets: t, ttl: ttl}, nil
}

// WithClock returns a copy reading time from now (tests).
func (l *Links) WithClock(now func() time.Time) *Links {
	return &Links{tickets: l.tickets.WithClock(now), ttl: l.ttl}
}

// TTL is how long a link works.
func (l *Links) TTL() time.Duration { return l.ttl }

// Token is a fresh `t` for key, and when it expires.
func (l *Links) Token(key string) (token string, expires time.Time) {
	tok := l.tickets.Issue(linkKind, key)
	return tok, ticket.Expiry(tok)
}

// Verify checks that token was issued for key and has not expired.
func (l *Links) Verify(key, token string) bool {
	return l != nil && l.tickets.Verify(linkKind, key, token) == nil
}
