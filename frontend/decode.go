package frontend

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/gin-gonic/gin"

	"conduit/internal/errs"
)

// maxBody bounds every JSON request body.
const maxBody = 1 << 20

// readBody reads the whole body, at most maxBody bytes, refusing what
// could not be stored (checkBody).
func readBody(c *gin.Context) ([]byte, error) {
	b, err := io.ReadAll(http.MaxBytesReader(c.Writer, c.Request.Body, maxBody))
	if err != nil {
		return nil, badJSON(err)
	}
	return b, checkBody(b)
}

// decodeJSON reads the body as one JSON object into v, refusing unknown
// fields, trailing data, oversized bodies and unstorable text with a 400
// that says what is wrong.
func decodeJSON(c *gin.Context, v any) error {
	b, err := readBody(c)
	if err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return badJSON(err)
	}
	if dec.More() {
		return errs.Invalidf("request body must be a single JSON object")
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return errs.Invalidf("request body must be a single JSON object")
	}
	return nil
}

func badJSON(err error) error {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	var tooBig *http.MaxBytesError
	switch {
	case errs.Is(err, errs.Timeout): // the body did not arrive in time (deadlines.go)
		return err
	case errors.Is(err, io.EOF):
		return errs.Invalidf("request body must be a JSON object")
	case errors.As(err, &tooBig):
		return errs.New(errs.TooLarge, "request body exceeds %d bytes", maxBody)
	case errors.As(err, &syn):
		return errs.Invalidf("request body is not valid JSON (at byte %d)", syn.Offset)
	case errors.As(err, &typ):
		if typ.Field != "" {
			return errs.Invalidf("field %s must be %s", typ.Field, jsonKind(typ.Type.Kind().String()))
		}
		return errs.Invalidf("request body must be a JSON object")
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		return errs.Invalidf("unknown field %s", strings.TrimPrefix(err.Error(), "json: unknown field "))
	default:
		return errs.Invalidf("request body is not valid JSON: %v", err)
	}
}

func jsonKind(goKind string) string {
	switch goKind {
	case "string":
		return "a string"
	case "slice", "array":
		return "an array"
	case "map", "struct":
		return "an object"
	case "bool":
		return "a boolean"
	case "ptr":
		return "of the documented type"
	default:
		return "a number"
	}
}

// asBadRequest turns a JSON error about one field into a 400 naming it.
func asBadRequest(err error, field string) error {
	if _, ok := errs.As(err); ok {
		return err
	}
	return errs.Invalidf("field %s has the wrong type: %s", field, fmt.Sprint(err))
}
