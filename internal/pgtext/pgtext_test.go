package pgtext

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestProblem(t *testing.T) {
	for s, want := range map[string]string{
		"": "", "plain": "", "ü日本😀": "", "a\x00b": "contains a NUL character", "\xff": "is not valid UTF-8",
		"\xed\xa0\x80": "is not valid UTF-8", // a UTF-16 surrogate encoded as UTF-8
	} {
		if got := Problem(s); got != want {
			t.Errorf("Problem(%q) = %q, want %q", s, got, want)
		}
	}
}

func TestJSONProblem(t *testing.T) {
	for doc, bad := range map[string]bool{
		`{}`: false, `{"a":"\u0000"}`: true, `{"\u0000":1}`: true, `{"a":"\\u0000"}`: false, `{"a":"\\\u0000"}`: true,
		`["x",{"y":["\u0000"]}]`: true, "{\"a\":\"\xff\"}": true, `{"a":"\u00e9"}`: false,
		`{"a":"\ud83d\ude00"}`: false, `{"a":"\ud800"}`: true, `{"a":"\udc00"}`: true, `{"a":"\ud800\u0041"}`: true,
		`{"a":"\ud800\ud800\udc00"}`: true, `{"a":"\\ud800"}`: false, `{"a":"\"\\","b":"\u0000"}`: true,
	} {
		if got := JSONProblem([]byte(doc)) != ""; got != bad {
			t.Errorf("JSONProblem(%s) refused=%v, want %v", doc, got, bad)
		}
	}
}

// Whatever JSONProblem lets through decodes to strings PostgreSQL can
// store: no NUL anywhere, keys included, and no bytes Go had to replace.
func FuzzJSONProblem(f *testing.F) {
	for _, seed := range []string{
		`{}`, `{"a":"\u0000"}`, `{"\u0000":1}`, `{"a":"\\u0000"}`, `{"a":"\\\u0000"}`, `["x",{"y":["\u0000"]}]`,
		"{\"a\":\"\xff\"}", `{"a":"\ud800"}`, `{"a":`, `"\u0000`, `{"a":"\u00000"}`, `{"a":"\U0000"}`,
		`{"a":"\ud83d\ude00"}`, `{"a":"\udc00\ud800"}`, `["\\","\u0000"]`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if JSONProblem(b) != "" {
			return
		}
		var v any
		if json.Unmarshal(b, &v) != nil {
			return // malformed: the decoder reports it
		}
		var walk func(any)
		walk = func(v any) {
			switch x := v.(type) {
			case string:
				if strings.ContainsRune(x, utf8.RuneError) && !strings.Contains(string(b), "\uFFFD") &&
					!strings.Contains(strings.ToLower(string(b)), `\ufffd`) {
					t.Fatalf("text Go had to replace got through in %q", b)
				}
				if strings.IndexByte(x, 0) >= 0 {
					t.Fatalf("a NUL got through in %q", b)
				}
			case []any:
				for _, e := range x {
					walk(e)
				}
			case map[string]any:
				for k, e := range x {
					walk(k)
					walk(e)
				}
			}
		}
		walk(v)
	})
}
