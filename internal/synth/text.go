package synth

import (
	"strings"
	"unicode"
)

// maxDescription bounds how much of a description is read: enough for
// any sensible request, and Plan stays fast on whatever it is handed.
const maxDescription = 4000

// brk stands for punctuation that ends a clause; negations ("no drums")
// do not reach across it.
const brk = "|"

// text is a description as lower-case word tokens.
type text struct {
	toks []string
	used []bool // tokens a genre name took ("drum and bass" is no bass)
}

func parseText(s string) *text {
	if len(s) > maxDescription {
		s = s[:maxDescription]
	}
	s = strings.ToLower(s)
	s = strings.NewReplacer("♯", "#", "♭", "b", "&", " and ", "'n'", " and ", "’n’", " and ", "'n", " and ").Replace(s)
	t := &text{}
	var cur strings.Builder
	flush := func() {
		if cur.Len() > 0 {
			t.toks = append(t.toks, cur.String())
			cur.Reset()
		}
	}
	for _, r := range s {
		switch {
		case unicode.IsLetter(r) || unicode.IsDigit(r) || r == '#' || r == '/':
			cur.WriteRune(r)
		case r == ',' || r == '.' || r == ';' || r == ':' || r == '!' || r == '?' || r == '(' || r == ')' || r == '\n':
			flush()
			if n := len(t.toks); n > 0 && t.toks[n-1] != brk {
				t.toks = append(t.toks, brk)
			}
		default: // spaces, hyphens ("lo-fi", "laid-back"), anything else
			flush()
		}
	}
	flush()
	t.used = make([]bool, len(t.toks))
	return t
}

// match is a phrase found in the text.
type match struct {
	pos, n int // first token and length
	value  int // index of the table entry that matched
}

// findAll finds every occurrence of the entries' phrases, longest phrase
// first so "very slow" is not also read as "slow", and never across
// tokens a genre took (when skipUsed). Matches come back in text order.
func (t *text) findAll(entries [][]string, skipUsed bool) []match {
	type cand struct {
		words []string
		value int
	}
	var cands []cand
	for v, phrases := range entries {
		for _, p := range phrases {
			cands = append(cands, cand{strings.Fields(p), v})
		}
	}
	// Longest first; stable, so earlier entries win between equals.
	for i := 1; i < len(cands); i++ {
		for j := i; j > 0 && len(cands[j].words) > len(cands[j-1].words); j-- {
			cands[j], cands[j-1] = cands[j-1], cands[j]
		}
	}
	taken := make([]bool, len(t.toks))
	var out []match
	for _, c := range cands {
		n := len(c.words)
		for i := 0; i+n <= len(t.toks); i++ {
			ok := true
			for k := 0; k < n && ok; k++ {
				ok = t.toks[i+k] == c.words[k] && !taken[i+k] && !(skipUsed && t.used[i+k])
			}
			if !ok {
				continue
			}
			for k := 0; k < n; k++ {
				taken[i+k] = true
			}
			out = append(out, match{pos: i, n: n, value: c.value})
		}
	}
	for i := 1; i < len(out); i++ {
		for j := i; j > 0 && out[j].pos < out[j-1].pos; j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out
}

// has reports whether any of the words occurs as a token.
func (t *text) has(words ...string) bool {
	for _, tok := range t.toks {
		for _, w := range words {
			if tok == w {
				return true
			}
		}
	}
	return false
}

// negated reports whether the phrase at pos is inside a negation: "no",
// "without", "minus", "not" or "sans" earlier in the same clause, with no
// "but", "with", "plus" or "and with" in between.
func (t *text) negated(pos int) bool {
	for i := pos - 1; i >= 0 && i >= pos-6; i-- {
		switch t.toks[i] {
		case "no", "without", "minus", "not", "sans", "zero", "never":
			return true
		case brk, "but", "with", "plus", "featuring", "feat":
			return false
		}
	}
	return false
}
