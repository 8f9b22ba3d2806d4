package imagefetch

import (
	"context"
	"errors"
	"net/url"
	"strings"
	"time"

	"github.com/hashicorp/golang-lru/v2/expirable"
)

// Verdicts remembers briefly what fetching an image URL concluded — a
// usable image, or the refusal — so a caller repeating a request that has
// not paid yet does not make the server download the image again. A
// verdict is keyed by the URL alone, in its canonical form once it passed
// the URL rules (lower-case host without a trailing dot or the default
// port, the path and query as sent, no fragment), never by anything else
// in a request: it is a fact about the URL, the same for every caller, and
// only requests that have not paid read it (a paid request always fetches,
// since it needs the bytes, and refreshes the verdict).
type Verdicts struct {
	cache *expirable.LRU[string, *Error]
}

// NewVerdicts keeps at most size verdicts, each for ttl.
func NewVerdicts(size int, ttl time.Duration) *Verdicts {
	return &Verdicts{cache: expirable.NewLRU[string, *Error](max(1, size), nil, ttl)}
}

// Len is how many verdicts are kept (tests).
func (v *Verdicts) Len() int { return v.cache.Len() }

func (v *Verdicts) get(key string) (*Error, bool) {
	if v == nil {
		return nil, false
	}
	return v.cache.Get(key)
}

func (v *Verdicts) put(key string, err error) {
	if v == nil {
		return
	}
	var refused *Error
	switch {
	case err == nil:
		v.cache.Add(key, nil)
	case errors.As(err, &refused):
		v.cache.Add(key, refused)
	}
	// Anything else (a cancelled request) says nothing about the URL.
}

// verdictKey is the canonical form of a URL that passed the URL rules.
func verdictKey(u *url.URL) string {
	host := strings.TrimSuffix(strings.ToLower(u.Hostname()), ".")
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	k := "https://" + host + u.EscapedPath()
	if u.RawQuery != "" {
		k += "?" + u.RawQuery
	}
	return k
}

// CheckUnpaid judges the image at raw for a request that has not paid:
// the URL rules first (no network), then a fresh verdict if there is one,
// and only then a fetch, after spend agrees (the caller's budget of unpaid
// fetches; its refusal is returned as it is). The image's bytes are not
// kept: a request that pays fetches them again.
func (f *Fetcher) CheckUnpaid(ctx context.Context, raw string, spend func() error) error {
	u, err := checkURL(raw, "image_url", f.trusted)
	if err != nil {
		return err
	}
	if refused, ok := f.Verdicts.get(verdictKey(u)); ok {
		if refused != nil {
			return refused
		}
		return nil
	}
	if spend != nil {
		if err := spend(); err != nil {
			return err
		}
	}
	_, err = f.Fetch(ctx, raw)
	return err
}

// fetched records the verdict of a fetch of raw.
func (f *Fetcher) fetched(raw string, err error) {
	if f.Verdicts == nil {
		return
	}
	if u, uerr := checkURL(raw, "image_url", f.trusted); uerr == nil {
		f.Verdicts.put(verdictKey(u), err)
	}
}
