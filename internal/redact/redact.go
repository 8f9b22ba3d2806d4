// Package redact finds personal data in text and replaces it. It is the one
// detector of the house: the guardrail node's pii rule, /api/redact/run and
// the redacting chat proxy all call it.
//
// Offsets are Unicode code points into the original text, not bytes.
//
// Every recognizer validates what it matches (Luhn and issuer ranges for
// cards, SSA rules for SSNs, libphonenumber metadata for phones, mod-97 for
// IBANs, calendar ranges for dates) so that order ids, hashes and log
// numbers do not count. Names come from context cues, embedded name lists
// and the shape of a name, with negative evidence (common words, log lines).
// See docs/redaction.md.
package redact

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
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

// ParseType accepts a type name (case-insensitive; CARD and CREDIT_CARD
// mean CC).
func ParseType(s string) (Type, bool) {
	u := Type(upperASCII(s))
	switch u {
	case "CARD", "CREDIT_CARD":
		return Card, true
	}
	for _, t := range Types {
		if t == u {
			return t, true
		}
	}
	return "", false
}

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
	// MRNFormats are the medical record number formats of a policy
	// (RE2 patterns matched against the token after an MRN cue such as
	// "MRN:" or "medical record no."). Empty means DefaultMRNFormats.
	MRNFormats []string
	// MinScore drops detections scored below it (0 keeps all).
	MinScore float64
	// Rules picks the rule set: 0, the newest (Rules2); Rules1, the rules
	// pipeline runs recorded before workflows.ChangeRedactNames keep, so
	// their guardrail decides on replay as it decided then.
	Rules int
}

// Rule sets (Options.Rules). Rules2 adds the NAME context rules (fields,
// vocatives, coordination, signatures, questions, more cues and verbs,
// the possessive, more common words) and reads mailto:user@host as an
// address.
const (
	Rules1 = 1
	Rules2 = 2
)

// DefaultMRNFormats: 5–12 characters of digits, upper-case letters and
// dashes with at least four digits, after an MRN cue.
var DefaultMRNFormats = []string{`[A-Z]{0,4}-?[0-9][0-9A-Z-]{3,11}`}

// MaxText bounds one Detect call (bytes); callers turn ErrTooLarge into 413.
const MaxText = 1 << 20

// ErrTooLarge is returned for a text over MaxText.
var ErrTooLarge = fmt.Errorf("text exceeds %d bytes", MaxText)

// span is a detection in byte offsets, before conversion.
type span struct {
	t          Type
	s, e       int
	score      float64
	recognizer string
	prio       int // higher wins an overlap of equal length
}

// Detect returns the entities found in text, sorted by Start, overlaps
// resolved deterministically (see resolve). An error means detection could
// not complete: callers fail closed.
func Detect(text string, opt Options) ([]Entity, error) {
	if len(text) > MaxText {
		return nil, ErrTooLarge
	}
	if !utf8.ValidString(text) {
		return nil, fmt.Errorf("text is not valid UTF-8")
	}
	var mrn []*regexp.Regexp
	if want(opt.Types, MRN) && len(opt.MRNFormats) > 0 {
		var err error
		if mrn, err = compileMRN(opt.MRNFormats); err != nil {
			return nil, err
		}
	}
	sc := getScanner(text)
	defer putScanner(sc)
	sc.types = opt.Types
	sc.mrn = mrn
	sc.v1 = opt.Rules == Rules1
	sc.common = fCommon | fCommon2
	if sc.v1 {
		sc.common = fCommon
	}
	sc.run()
	spans := resolve(sc.spans)
	out := make([]Entity, 0, len(spans))
	for _, s := range spans {
		if s.score < opt.MinScore || !want(opt.Types, s.t) {
			continue
		}
		out = append(out, Entity{Type: s.t, Start: s.s, End: s.e, Score: s.score, Recognizer: s.recognizer, Text: text[s.s:s.e]})
	}
	toCodePoints(text, out)
	return out, nil
}

// CompileMRNFormats checks a policy's MRN formats (for policy validation).
func CompileMRNFormats(formats []string) error {
	_, err := compileMRN(formats)
	return err
}

func compileMRN(formats []string) ([]*regexp.Regexp, error) {
	var out []*regexp.Regexp
	for _, f := range formats {
		re, err := regexp.Compile(`^(?:` + f + `)`)
		if err != nil {
			return nil, fmt.Errorf("MRN format %q: %v", f, err)
		}
		out = append(out, re)
	}
	return out, nil
}

func want(types []Type, t Type) bool {
	if types == nil {
		return true
	}
	for _, x := range types {
		if x == t {
			return true
		}
	}
	return false
}

// resolve keeps a set of non-overlapping spans: longer first, then higher
// score, then the recognizer priority, then the type order, then the
// earlier start — a total order, so the result never depends on the order
// recognizers ran in.
func resolve(in []span) []span {
	if len(in) == 0 {
		return nil
	}
	slices.SortFunc(in, func(a, b span) int {
		if la, lb := a.e-a.s, b.e-b.s; la != lb {
			return lb - la
		}
		if a.prio != b.prio {
			return b.prio - a.prio
		}
		if a.score != b.score {
			if a.score > b.score {
				return -1
			}
			return 1
		}
		if ra, rb := typeRank(a.t), typeRank(b.t); ra != rb {
			return ra - rb
		}
		if a.s != b.s {
			return a.s - b.s
		}
		return strings.Compare(a.recognizer, b.recognizer)
	})
	// an occupancy bitmap of the text's bytes: checking a candidate costs
	// its length, so the whole pass is linear in the spans' total length
	end := 0
	for _, c := range in {
		end = max(end, c.e)
	}
	occ := make([]uint64, end/64+1)
	var kept []span
	for _, c := range in {
		free := true
		for k := c.s; k < c.e; k++ {
			if occ[k>>6]&(1<<(k&63)) != 0 {
				free = false
				break
			}
		}
		if !free {
			continue
		}
		for k := c.s; k < c.e; k++ {
			occ[k>>6] |= 1 << (k & 63)
		}
		kept = append(kept, c)
	}
	slices.SortFunc(kept, func(a, b span) int { return a.s - b.s })
	return kept
}

// toCodePoints turns the byte offsets of sorted entities into code points
// in one pass over the text.
func toCodePoints(text string, ents []Entity) {
	if len(ents) == 0 {
		return
	}
	ascii := true
	for i := 0; i < len(text); i++ {
		if text[i] >= utf8.RuneSelf {
			ascii = false
			break
		}
	}
	if ascii {
		return
	}
	// Boundaries are visited in increasing byte order: starts are sorted
	// and spans do not overlap, so each end precedes the next start.
	pos, runes := 0, 0
	adv := func(b int) int {
		runes += utf8.RuneCountInString(text[pos:b])
		pos = b
		return runes
	}
	for i := range ents {
		ents[i].Start = adv(ents[i].Start)
		ents[i].End = adv(ents[i].End)
	}
}

func upperASCII(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c >= 'a' && c <= 'z' {
			b[i] = c - 32
		}
	}
	return string(b)
}

func typeRank(t Type) int {
	switch t {
	case Name:
		return 0
	case Email:
		return 1
	case Phone:
		return 2
	case Address:
		return 3
	case SSN:
		return 4
	case Card:
		return 5
	case MRN:
		return 6
	case DOB:
		return 7
	case Account:
		return 8
	case URL:
		return 9
	case Date:
		return 10
	case Secret:
		return 11
	}
	return 12
}
