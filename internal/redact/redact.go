// Package redact finds personal data in text and replaces it. It is the one
// detector of the house: the guardrail node's pii rule, /api/redact/run and
// the redacting chat proxy all call it.
//
// Offsets are Unicode code points into the original text, not bytes.
package redact

import (
	"regexp"
	"sort"
	"unicode/utf8"
)

// Type is an entity type of the spec's redaction policy.
type Type string

const (
	Name    Type = "NAME"
	Email   Type = "EMAIL"
	Phone   Type = "PHONE"
	Address Type = "ADDRESS"
	SSN     Type = "SSN"
	Card    Type = "CC"
	MRN     Type = "MRN"
	DOB     Type = "DOB"
	Account Type = "ACCOUNT"
	URL     Type = "URL"
	Date    Type = "DATE"
	Secret  Type = "SECRET"
)

// Types lists every entity type in the spec's order.
var Types = []Type{Name, Email, Phone, Address, SSN, Card, MRN, DOB, Account, URL, Date, Secret}

// Entity is one detection: [Start, End) in code points of the original text.
type Entity struct {
	Type       Type    `json:"type"`
	Start      int     `json:"start"`
	End        int     `json:"end"`
	Score      float64 `json:"score"`
	Recognizer string  `json:"recognizer"`
	Text       string  `json:"-"`
}

// Options narrows a detection. A nil Types means every type.
type Options struct {
	Types []Type
}

// Detect returns the entities found in text, sorted by Start, overlaps
// resolved (a longer span wins; on a tie the higher score, then the type
// order). An error means detection could not complete: callers fail closed.
//
// This first version knows EMAIL only; the recognizers of every type replace it.
func Detect(text string, opt Options) ([]Entity, error) {
	want := func(t Type) bool {
		if opt.Types == nil {
			return true
		}
		for _, x := range opt.Types {
			if x == t {
				return true
			}
		}
		return false
	}
	var out []Entity
	if want(Email) {
		for _, m := range emailRE.FindAllStringIndex(text, -1) {
			out = append(out, Entity{Type: Email, Start: utf8.RuneCountInString(text[:m[0]]),
				End: utf8.RuneCountInString(text[:m[1]]), Score: 1, Recognizer: "email", Text: text[m[0]:m[1]]})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Start < out[j].Start })
	return out, nil
}

var emailRE = regexp.MustCompile(`[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,}`)
