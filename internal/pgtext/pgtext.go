// Package pgtext says whether a value can be stored in PostgreSQL as text
// or jsonb: both refuse NUL characters and invalid UTF-8 (jsonb refuses the
// \u0000 escape too). The frontend checks untrusted input with it at the
// edge, so such input is a 400 rather than a failed statement.
package pgtext

import (
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// Problem says why s cannot be stored as text ("" when it can).
func Problem(s string) string {
	switch {
	case !utf8.ValidString(s):
		return "is not valid UTF-8"
	case strings.IndexByte(s, 0) >= 0:
		return "contains a NUL character"
	}
	return ""
}

// JSONProblem says why the JSON document b would carry unstorable text
// ("" when it would not): invalid UTF-8 anywhere (Go's decoder would
// replace it silently), a NUL character written \u0000 in any string
// (object keys included), or a \u escape of half a UTF-16 surrogate pair
// (jsonb refuses it; Go's decoder would replace it silently). Malformed JSON
// is not its concern: the decoder reports that.
func JSONProblem(b []byte) string {
	if !utf8.Valid(b) {
		return "is not valid UTF-8"
	}
	// Raw control characters are not JSON, so NUL and surrogates can only
	// arrive as \u escapes inside strings.
	in := false
	for i := 0; i < len(b); i++ {
		switch c := b[i]; {
		case !in:
			in = c == '"'
		case c == '"':
			in = false
		case c != '\\' || i+1 == len(b):
		case b[i+1] != 'u':
			i++ // \", \\, \n, …
		default:
			r, ok := escaped(b[i:])
			if !ok {
				return "" // malformed
			}
			i += 5
			switch {
			case r == 0:
				return `contains a NUL character (\u0000) in a string`
			case utf16.IsSurrogate(r) && r < 0xDC00:
				if low, ok := escaped(b[i+1:]); ok && utf16.DecodeRune(r, low) != utf8.RuneError {
					i += 6
					continue
				}
				fallthrough
			case utf16.IsSurrogate(r):
				return `contains half a UTF-16 surrogate pair (\u` + string(b[i-3:i+1]) + `) in a string`
			}
		}
	}
	return ""
}

// escaped reads the \uXXXX escape b starts with.
func escaped(b []byte) (rune, bool) {
	if len(b) < 6 || b[0] != '\\' || b[1] != 'u' {
		return 0, false
	}
	n, err := strconv.ParseUint(string(b[2:6]), 16, 16)
	return rune(n), err == nil
}
