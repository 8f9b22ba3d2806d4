package redact

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Operator says what replaces an entity of a type.
type Operator string

const (
	// OpPlaceholder: [EMAIL_1], stable within a call (Placeholders).
	OpPlaceholder Operator = "placeholder"
	// OpMask: letters and digits become '*'; cards, accounts, phones and
	// SSNs keep their last four digits, emails the first letter and domain.
	OpMask Operator = "mask"
	// OpHash: [EMAIL:3f2a…] — HMAC-SHA256 of the normalised value under
	// the policy's key, so equal values join without being shown.
	OpHash Operator = "hash"
	// OpBlock: the text is refused (BlockedError) when the type occurs.
	OpBlock Operator = "block"
)

// ParseOperator accepts an operator name.
func ParseOperator(s string) (Operator, bool) {
	switch o := Operator(strings.ToLower(s)); o {
	case OpPlaceholder, OpMask, OpHash, OpBlock:
		return o, true
	}
	return "", false
}

// Policy is what a redaction does: the types it looks for and, per type,
// the operator (placeholder when not set).
type Policy struct {
	Types      []Type
	Operators  map[Type]Operator
	MRNFormats []string
	MinScore   float64
	// HashKey keys OpHash (per account, so hashes do not join across accounts).
	HashKey []byte
}

func (p Policy) op(t Type) Operator {
	if o, ok := p.Operators[t]; ok {
		return o
	}
	return OpPlaceholder
}

// BlockedError: the text holds a type the policy blocks. It names the
// types, never the values.
type BlockedError struct{ Types []Type }

func (e *BlockedError) Error() string {
	names := make([]string, len(e.Types))
	for i, t := range e.Types {
		names[i] = string(t)
	}
	return "the text contains " + strings.Join(names, ", ") + ", which the policy blocks"
}

// Placeholders numbers the values of one call: the same value of a type
// always gets the same [TYPE_n], and an ordinal already written literally
// in any of the call's texts is skipped so a restore cannot confuse the
// two. Not safe for concurrent use; one per call, never shared across
// calls (a shared table leaks values between requests).
type Placeholders struct {
	taken  map[string]bool   // "EMAIL_3" present in the input
	next   map[Type]int      // last ordinal handed out per type
	byKey  map[string]string // type|normalised value → placeholder
	values map[string]string // placeholder → original value (first seen)
	order  []string          // placeholders in the order handed out
	types  map[string]Type   // placeholder → type
}

var literalPlaceholder = regexp.MustCompile(`(?i)\[([A-Z]+)_([0-9]+)\]`)

// NewPlaceholders prepares the numbering for a call whose texts are given
// (every message of a chat request, say).
func NewPlaceholders(texts ...string) *Placeholders {
	p := &Placeholders{taken: map[string]bool{}, next: map[Type]int{}, byKey: map[string]string{},
		values: map[string]string{}, types: map[string]Type{}}
	for _, t := range texts {
		p.Reserve(t)
	}
	return p
}

// Reserve marks the ordinals written literally in text as taken (a text
// of the call that arrived after NewPlaceholders).
func (p *Placeholders) Reserve(text string) {
	for _, m := range literalPlaceholder.FindAllStringSubmatch(text, -1) {
		p.taken[strings.ToUpper(m[1])+"_"+strings.TrimLeft(m[2], "0")] = true
	}
}

// For returns the placeholder of value as type t.
func (p *Placeholders) For(t Type, value string) string {
	key := string(t) + "|" + normalize(t, value)
	if ph, ok := p.byKey[key]; ok {
		return ph
	}
	ph := p.Fresh(t)
	p.byKey[key] = ph
	p.values[ph] = value
	p.types[ph] = t
	p.order = append(p.order, ph)
	return ph
}

// Fresh hands out a new ordinal of type t that restores to nothing: for
// values the answer itself produced, which the caller must not get back.
func (p *Placeholders) Fresh(t Type) string {
	n := p.next[t]
	for {
		n++
		if !p.taken[string(t)+"_"+strconv.Itoa(n)] {
			break
		}
	}
	p.next[t] = n
	p.taken[string(t)+"_"+strconv.Itoa(n)] = true
	return "[" + string(t) + "_" + strconv.Itoa(n) + "]"
}

// Value returns the original of a placeholder handed out by this table.
func (p *Placeholders) Value(ph string) (string, bool) {
	v, ok := p.values[ph]
	return v, ok
}

// Map returns placeholder → original for every placeholder handed out.
func (p *Placeholders) Map() map[string]string {
	m := make(map[string]string, len(p.values))
	for k, v := range p.values {
		m[k] = v
	}
	return m
}

// List returns the placeholders in the order they were handed out.
func (p *Placeholders) List() []string { return append([]string(nil), p.order...) }

// Len is the number of distinct values seen.
func (p *Placeholders) Len() int { return len(p.order) }

// normalize makes equal values equal: case for emails and names, digits
// only for numbers, whitespace for the rest.
func normalize(t Type, v string) string {
	switch t {
	case Email, Name, URL:
		return strings.ToLower(strings.Join(strings.Fields(v), " "))
	case Phone, Card, SSN, Account, MRN:
		var b strings.Builder
		for _, r := range v {
			if r >= '0' && r <= '9' || r >= 'A' && r <= 'Z' || r >= 'a' && r <= 'z' {
				b.WriteRune(r)
			}
		}
		if t == Phone && strings.HasPrefix(strings.TrimSpace(v), "+") {
			return "+" + b.String()
		}
		return strings.ToUpper(b.String())
	}
	return strings.Join(strings.Fields(v), " ")
}

// Replaced is an entity with what replaced it.
type Replaced struct {
	Entity
	Operator    Operator `json:"operator"`
	Replacement string   `json:"placeholder"`
}

// Apply replaces the entities (sorted, non-overlapping, code-point spans
// of text, as Detect returns them) by the policy's operators. ph numbers
// placeholders; nil makes a table for this text alone. A blocked type
// returns a *BlockedError and no text.
func Apply(text string, ents []Entity, pol Policy, ph *Placeholders) (string, []Replaced, error) {
	var blocked []Type
	for _, e := range ents {
		if pol.op(e.Type) == OpBlock && !containsType(blocked, e.Type) {
			blocked = append(blocked, e.Type)
		}
	}
	if len(blocked) > 0 {
		return "", nil, &BlockedError{Types: blocked}
	}
	if ph == nil {
		ph = NewPlaceholders(text)
	}
	var b strings.Builder
	b.Grow(len(text))
	out := make([]Replaced, 0, len(ents))
	// walk the text once, converting code points to bytes as we go
	bytePos, runePos := 0, 0
	advance := func(to int) int {
		for runePos < to && bytePos < len(text) {
			_, size := utf8.DecodeRuneInString(text[bytePos:])
			bytePos += size
			runePos++
		}
		return bytePos
	}
	for _, e := range ents {
		if e.Start < runePos || e.End < e.Start {
			return "", nil, fmt.Errorf("entities overlap or are out of order at %d", e.Start)
		}
		s := bytePos
		bs := advance(e.Start)
		b.WriteString(text[s:bs])
		be := advance(e.End)
		val := text[bs:be]
		var rep string
		op := pol.op(e.Type)
		switch op {
		case OpMask:
			rep = mask(e.Type, val)
		case OpHash:
			rep = hashValue(pol.HashKey, e.Type, val)
		default:
			op = OpPlaceholder
			rep = ph.For(e.Type, val)
		}
		b.WriteString(rep)
		e.Text = val
		out = append(out, Replaced{Entity: e, Operator: op, Replacement: rep})
	}
	b.WriteString(text[bytePos:])
	return b.String(), out, nil
}

// Redact detects and replaces in one call.
func Redact(text string, pol Policy, ph *Placeholders) (string, []Replaced, error) {
	ents, err := Detect(text, Options{Types: pol.Types, MRNFormats: pol.MRNFormats, MinScore: pol.MinScore})
	if err != nil {
		return "", nil, err
	}
	return Apply(text, ents, pol, ph)
}

func containsType(ts []Type, t Type) bool {
	for _, x := range ts {
		if x == t {
			return true
		}
	}
	return false
}

func mask(t Type, v string) string {
	keep := 0
	switch t {
	case Card, Account, Phone, SSN:
		keep = 4
	case Email:
		at := strings.LastIndexByte(v, '@')
		if at > 0 {
			r, size := utf8.DecodeRuneInString(v)
			return string(r) + strings.Repeat("*", utf8.RuneCountInString(v[size:at])) + v[at:]
		}
	}
	// keep the last `keep` digits, star every other letter or digit
	rs := []rune(v)
	digits := 0
	for i := len(rs) - 1; i >= 0; i-- {
		r := rs[i]
		isD := r >= '0' && r <= '9'
		if isD && digits < keep {
			digits++
			continue
		}
		if isD || isLetterRune(r) {
			rs[i] = '*'
		}
	}
	return string(rs)
}

func isLetterRune(r rune) bool {
	return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= 0x80
}

func hashValue(key []byte, t Type, v string) string {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(string(t) + "|" + normalize(t, v)))
	return "[" + string(t) + ":" + hex.EncodeToString(m.Sum(nil))[:16] + "]"
}
