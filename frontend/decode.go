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
)

// maxBody bounds every JSON request body.
const maxBody = 1 << 20

// decodeJSON reads the body as one JSON object into v, refusing unknown
// fields, trailing data, oversized bodies and NUL characters with a 400
// that says what is wrong.
func decodeJSON(c *gin.Context, v any) error {
	raw, err := readBody(c)
	if err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return badJSON(err)
	}
	if dec.More() {
		return errorf(http.StatusBadRequest, "request body must be a single JSON object")
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return errorf(http.StatusBadRequest, "request body must be a single JSON object")
	}
	return nil
}

// readBody reads a JSON body of at most maxBody bytes and refuses one whose
// strings carry a NUL character: PostgreSQL cannot store U+0000 in text or
// jsonb, so such input would be accepted (and paid for) and then fail to
// be recorded forever.
func readBody(c *gin.Context) ([]byte, error) {
	raw, err := io.ReadAll(http.MaxBytesReader(c.Writer, c.Request.Body, maxBody))
	if err != nil {
		return nil, badJSON(err)
	}
	if hasNUL(raw) {
		return nil, errorf(http.StatusBadRequest, "text must not contain NUL characters (\\u0000)")
	}
	return raw, nil
}

// hasNUL reports a \u0000 escape in JSON text (raw control characters are
// not valid JSON, so an escape is the only way a NUL gets into a string).
// An escaped backslash before "u0000" is the literal text, not a NUL.
func hasNUL(raw []byte) bool {
	for i := bytes.Index(raw, []byte(`u0000`)); i >= 0; {
		slashes := 0
		for j := i - 1; j >= 0 && raw[j] == '\\'; j-- {
			slashes++
		}
		if slashes%2 == 1 {
			return true
		}
		next := bytes.Index(raw[i+1:], []byte(`u0000`))
		if next < 0 {
			break
		}
		i += 1 + next
	}
	return false
}

func badJSON(err error) error {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	var tooBig *http.MaxBytesError
	switch {
	case errors.Is(err, io.EOF):
		return errorf(http.StatusBadRequest, "request body must be a JSON object")
	case errors.As(err, &tooBig):
		return errorf(http.StatusRequestEntityTooLarge, "request body exceeds %d bytes", maxBody)
	case errors.As(err, &syn):
		return errorf(http.StatusBadRequest, "request body is not valid JSON (at byte %d)", syn.Offset)
	case errors.As(err, &typ):
		if typ.Field != "" {
			return errorf(http.StatusBadRequest, "field %s must be %s", typ.Field, jsonKind(typ.Type.Kind().String()))
		}
		return errorf(http.StatusBadRequest, "request body must be a JSON object")
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		return errorf(http.StatusBadRequest, "unknown field %s", strings.TrimPrefix(err.Error(), "json: unknown field "))
	default:
		return errorf(http.StatusBadRequest, "request body is not valid JSON: %v", err)
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
	var apiErr *APIError
	if errors.As(err, &apiErr) {
		return err
	}
	return errorf(http.StatusBadRequest, "field %s has the wrong type: %s", field, fmt.Sprint(err))
}
