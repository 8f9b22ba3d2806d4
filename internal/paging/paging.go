// Package paging is the API's one paging convention for list endpoints
// (docs/paging.md): a page is asked for with limit and after, and answered
// with nextAfter (pass it back as after) and nextUrl (the next page's
// address), both absent on the last page. The older names of some
// endpoints (cursor in, nextCursor out) are still accepted and emitted.
package paging

import (
	"net/url"

	"conduit/internal/errs"
)

// Token is where the caller asked to continue, and the parameter it used
// (for an error that names what the caller sent).
type Token struct {
	Value string
	Param string
}

// From picks the continuation: after, or cursor (its older name). Both,
// different, is refused: which one was meant is unknowable.
func From(after, cursor string) (Token, error) {
	switch {
	case after != "" && cursor != "" && after != cursor:
		return Token{}, errs.Invalidf("after and cursor are two names for one thing: send after alone")
	case after != "":
		return Token{Value: after, Param: "after"}, nil
	case cursor != "":
		return Token{Value: cursor, Param: "cursor"}, nil
	}
	return Token{}, nil
}

// Foreign is the refusal of a token that is not the caller's: another
// account's (or pipeline's) page, or one this API never gave out.
func (t Token) Foreign() *errs.Error {
	return errs.Invalidf("%s is not one this API gave you (use nextAfter of the previous page)", t.Param)
}

// NextURL is the next page's address: base+path with the query's filters
// (empty ones dropped) and after set to next.
func NextURL(base, path string, filters url.Values, next string) string {
	q := url.Values{}
	for k, vs := range filters {
		for _, v := range vs {
			if v != "" {
				q.Add(k, v)
			}
		}
	}
	q.Set("after", next)
	return base + path + "?" + q.Encode()
}
