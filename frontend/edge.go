package frontend

// Input checks that hold for every route, made once at the edge: what a
// caller sends must be storable before any handler looks at it.
// PostgreSQL's text and jsonb refuse NUL characters and invalid UTF-8
// (internal/pgtext), and its integer columns are 32-bit; a request carrying
// such values is malformed (400), never an internal error.

import (
	"github.com/gin-gonic/gin"

	"conduit/internal/errs"
	"conduit/internal/pgtext"
)

// storable is a 400 naming what when s cannot be stored as text.
func storable(what, s string) error {
	if why := pgtext.Problem(s); why != "" {
		return errs.Invalidf("%s %s", what, why)
	}
	return nil
}

// checkInput refuses a request whose path parameters or query parameters
// (names or values) cannot be stored as text. It runs after the route's
// error shape is chosen, so the refusal is in that shape.
func checkInput(c *gin.Context) {
	for _, p := range c.Params {
		if err := storable("path parameter "+p.Key, p.Value); err != nil {
			fail(c, err)
			return
		}
	}
	for name, values := range c.Request.URL.Query() {
		if err := storable("a query parameter name", name); err != nil {
			fail(c, err)
			return
		}
		what := "query parameter " + name
		for _, v := range values {
			if err := storable(what, v); err != nil {
				fail(c, err)
				return
			}
		}
	}
	c.Next()
}

// checkBody refuses a JSON body that is not valid UTF-8 or that carries a
// NUL character (written \u0000) in any string, key or value.
func checkBody(b []byte) error {
	if why := pgtext.JSONProblem(b); why != "" {
		return errs.Invalidf("request body %s; it cannot be stored", why)
	}
	return nil
}
