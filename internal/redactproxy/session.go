package redactproxy

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"unicode/utf8"

	"conduit/internal/errs"
	"conduit/internal/redact"
)

// placeholderRE finds a placeholder the way models write them back: the
// type in any case ([Name_1]), the ordinal in digits. A hashed value
// ([EMAIL_h0123abcd4567]) is not a placeholder: nothing restores it.
var placeholderRE = regexp.MustCompile(`\[([A-Za-z]+)_([0-9]+)\]`)

// maxPlaceholder bounds a possible placeholder's length: a stream holds
// back at most this many bytes after a '[' (the longest type is 7 letters).
const maxPlaceholder = 32

// Session is one call's redaction state: the call's placeholder table
// (redact.Placeholders, the detector package's: the same value the same
// placeholder across every message of the call, ordinals the caller's own
// text already uses skipped), the counts, and what the answer has restored
// so far. It lives for one call only, so nothing crosses from one request
// to another.
type Session struct {
	policy  Policy
	hashKey []byte
	ph      *redact.Placeholders
	counts  map[redact.Type]int
	seen    map[string]bool
	// blocked lists the types the policy blocks that were found.
	blocked []redact.Type
}

// NewSession starts a call's session. hashKey keys the hash action (stable
// per account); texts are every text of the request, scanned first so that
// ordinals already written in them are never issued.
func NewSession(p Policy, hashKey []byte, texts ...string) *Session {
	return &Session{policy: p, hashKey: hashKey, ph: redact.NewPlaceholders(texts...),
		counts: map[redact.Type]int{}, seen: map[string]bool{}}
}

// Reserve marks the placeholders written literally in text as taken.
func (s *Session) Reserve(text string) { s.ph.Reserve(text) }

// canonical is a placeholder as the table issued it: the type upper case,
// the ordinal without leading zeros (models write [Name_01] too).
func canonical(typ, n string) string {
	n = strings.TrimLeft(n, "0")
	if n == "" {
		n = "0"
	}
	return "[" + strings.ToUpper(typ) + "_" + n + "]"
}

// Counts is how many values of each type were redacted in this call.
func (s *Session) Counts() map[redact.Type]int {
	out := make(map[redact.Type]int, len(s.counts))
	for k, v := range s.counts {
		out[k] = v
	}
	return out
}

// Issued lists the restorable placeholders this call issued, sorted.
func (s *Session) Issued() []string {
	out := s.ph.List()
	sort.Strings(out)
	return out
}

// Dropped lists the issued placeholders the answer never mentioned.
func (s *Session) Dropped() []string {
	var out []string
	for _, k := range s.Issued() {
		if !s.seen[k] {
			out = append(out, k)
		}
	}
	return out
}

// Redact replaces what the policy's detector finds in text. A blocked type
// is an Unprocessable error naming the type (never the value); a detector
// failure is an error too: the caller sends nothing upstream (fail closed).
func (s *Session) Redact(text string) (string, error) {
	return s.redact(text, true)
}

func (s *Session) redact(text string, restorable bool) (string, error) {
	ents, err := redact.Detect(text, redact.Options{Types: s.policy.Types})
	if err != nil {
		return "", errs.Unavailablef("the redactor could not read the request, so nothing was sent upstream: %v", err)
	}
	if len(ents) == 0 {
		return text, nil
	}
	// Code-point offsets to byte offsets, in one walk.
	offs := make([]int, 0, utf8.RuneCountInString(text)+1)
	for i := range text {
		offs = append(offs, i)
	}
	offs = append(offs, len(text))
	var b strings.Builder
	last := 0
	for _, e := range ents {
		if e.Start < 0 || e.End > len(offs)-1 || e.Start >= e.End {
			return "", errs.Unavailablef("the redactor answered an entity outside the text, so nothing was sent upstream")
		}
		from, to := offs[e.Start], offs[e.End]
		if from < last {
			continue // overlaps resolved by the detector; never reuse a byte
		}
		value := text[from:to]
		if !restorable && insidePlaceholder(text, from, to) {
			continue
		}
		rep, err := s.replace(e.Type, value, restorable)
		if err != nil {
			return "", err
		}
		b.WriteString(text[last:from])
		b.WriteString(rep)
		last = to
	}
	b.WriteString(text[last:])
	if len(s.blocked) > 0 {
		names := make([]string, len(s.blocked))
		for i, t := range s.blocked {
			names[i] = string(t)
		}
		return "", errs.New(errs.Unprocessable, "the request contains %s, which this proxy's policy blocks; nothing was sent upstream", strings.Join(names, ", ")).
			With("blockedTypes", names)
	}
	return b.String(), nil
}

// insidePlaceholder: a span that touches a placeholder is the placeholder
// itself (a better detector may call [NAME_1] a name): left alone.
func insidePlaceholder(text string, from, to int) bool {
	for _, m := range placeholderRE.FindAllStringIndex(text, -1) {
		if from < m[1] && to > m[0] {
			return true
		}
	}
	return false
}

func (s *Session) replace(t redact.Type, value string, restorable bool) (string, error) {
	s.counts[t]++
	act := s.policy.action(t)
	if act == ActBlock && !restorable {
		// The answer is already being written: a blocked type the model
		// produced is masked, not a failure halfway through it.
		act = ActMask
	}
	switch act {
	case ActBlock:
		for _, b := range s.blocked {
			if b == t {
				return "", nil
			}
		}
		s.blocked = append(s.blocked, t)
		return "", nil
	case ActMask:
		return strings.Repeat("*", utf8.RuneCountInString(value)), nil
	case ActHash:
		m := hmac.New(sha256.New, s.hashKey)
		m.Write([]byte(string(t) + "\x00" + value))
		return "[" + string(t) + "_h" + hex.EncodeToString(m.Sum(nil))[:12] + "]", nil
	}
	if !restorable {
		return s.ph.Fresh(t), nil
	}
	return s.ph.For(t, value), nil
}

// RedactJSON redacts every string inside a JSON document (tool-call
// arguments) by decoding and re-encoding it, so quotes and apostrophes in
// values survive. Text that is not JSON is redacted as text.
func (s *Session) RedactJSON(doc string) (string, error) {
	var v any
	dec := json.NewDecoder(strings.NewReader(doc))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		return s.Redact(doc)
	}
	var ferr error
	v = walkStrings(v, func(str string) string {
		out, err := s.Redact(str)
		if err != nil && ferr == nil {
			ferr = err
		}
		return out
	})
	if ferr != nil {
		return "", ferr
	}
	return encodeJSON(v), nil
}

// RestoreJSON restores every string inside a JSON document; text that is
// not JSON is restored with JSON string escaping (a partial document).
func (s *Session) RestoreJSON(doc string) string {
	var v any
	dec := json.NewDecoder(strings.NewReader(doc))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		r := s.NewRestorer(true)
		return r.Push(doc) + r.Flush()
	}
	return encodeJSON(walkStrings(v, s.RestoreText))
}

func encodeJSON(v any) string {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
	return strings.TrimSuffix(buf.String(), "\n")
}

func walkStrings(v any, f func(string) string) any {
	switch x := v.(type) {
	case string:
		return f(x)
	case []any:
		for i := range x {
			x[i] = walkStrings(x[i], f)
		}
	case map[string]any:
		for k, e := range x {
			x[k] = walkStrings(e, f)
		}
	}
	return v
}

// RestoreText puts the original values back into a whole answer.
func (s *Session) RestoreText(text string) string {
	r := s.NewRestorer(false)
	return r.Push(text) + r.Flush()
}

// Restorer restores a stream. It holds back only what could still become
// a placeholder: the text from the last '[' while it reads like the start
// of one (letters, then '_' and digits) and is shorter than any
// placeholder can be. So the concatenation of its outputs equals
// RestoreText of the concatenated inputs, however the stream was split.
type Restorer struct {
	s       *Session
	jsonEsc bool
	pending string
}

// NewRestorer starts restoring one stream (one choice's content, or one
// tool call's arguments when jsonEscaped: values are written as the inside
// of a JSON string).
func (s *Session) NewRestorer(jsonEscaped bool) *Restorer {
	return &Restorer{s: s, jsonEsc: jsonEscaped}
}

// Push adds a piece of the stream and returns what can be sent now.
func (r *Restorer) Push(piece string) string {
	r.pending += piece
	cut := min(partialStart(r.pending), completeRunes(r.pending))
	out := r.restore(r.pending[:cut])
	r.pending = r.pending[cut:]
	return out
}

// Flush returns what is left at the end of the stream.
func (r *Restorer) Flush() string {
	out := r.restore(r.pending)
	r.pending = ""
	return out
}

// Held is how many bytes the restorer is holding back.
func (r *Restorer) Held() int { return len(r.pending) }

func (r *Restorer) restore(text string) string {
	if !strings.Contains(text, "[") {
		return text
	}
	return placeholderRE.ReplaceAllStringFunc(text, func(m string) string {
		sub := placeholderRE.FindStringSubmatch(m)
		k := canonical(sub[1], sub[2])
		v, ok := r.s.ph.Value(k)
		if !ok {
			return m
		}
		r.s.seen[k] = true
		if r.jsonEsc {
			b, _ := json.Marshal(v)
			return string(b[1 : len(b)-1])
		}
		return v
	})
}

// partialStart is where a possible unfinished placeholder begins at the
// end of text (len(text) when there is none).
func partialStart(text string) int {
	i := strings.LastIndexByte(text, '[')
	if i < 0 || len(text)-i >= maxPlaceholder {
		return len(text)
	}
	tail := text[i+1:]
	j := 0
	for j < len(tail) && isLetter(tail[j]) {
		j++
	}
	if j == len(tail) {
		return i
	}
	if j == 0 || tail[j] != '_' {
		return len(text)
	}
	j++
	for j < len(tail) && tail[j] >= '0' && tail[j] <= '9' {
		j++
	}
	if j == len(tail) {
		return i
	}
	return len(text)
}

// completeRunes is the length of text without an unfinished UTF-8
// sequence at its end (a stream split inside a character).
func completeRunes(text string) int {
	for back := 1; back <= utf8.UTFMax && back <= len(text); back++ {
		c := text[len(text)-back]
		if c < 0x80 {
			return len(text)
		}
		if utf8.RuneStart(c) {
			if utf8.FullRuneInString(text[len(text)-back:]) {
				return len(text)
			}
			return len(text) - back
		}
	}
	return len(text)
}

func isLetter(c byte) bool { return c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' }

// String keeps a session's values out of logs and traces by accident.
func (s *Session) String() string {
	return fmt.Sprintf("redaction session (%d placeholders)", s.ph.Len())
}
