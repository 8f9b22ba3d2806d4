package redactproxy

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// maxSegment bounds a segment (code points) when no sentence ends sooner.
const maxSegment = 400

// OutputRedactor redacts PII the model produced itself, on a stream. The
// detector judges whole segments: a segment ends after a newline, after
// '.', '!' or '?' followed by a space, or after maxSegment code points (at
// the last space inside, if any). Where segments end depends on the text
// alone, never on how the stream was split, so the concatenated output
// equals RedactOutput of the whole answer; and what is held back is at
// most the segment being written — the longest stretch a value (or the
// context that makes it one) can still be growing in.
type OutputRedactor struct {
	s       *Session
	pending string
}

// NewOutputRedactor starts redacting one stream of answer text.
func (s *Session) NewOutputRedactor() *OutputRedactor { return &OutputRedactor{s: s} }

// RedactOutput redacts a whole answer.
func (s *Session) RedactOutput(text string) (string, error) {
	o := s.NewOutputRedactor()
	a, err := o.Push(text)
	if err != nil {
		return "", err
	}
	b, err := o.Flush()
	return a + b, err
}

// Push adds a piece and returns the redacted segments it completed.
func (o *OutputRedactor) Push(piece string) (string, error) {
	o.pending += piece
	var out strings.Builder
	for {
		n := segmentEnd(o.pending[:completeRunes(o.pending)])
		if n == 0 {
			return out.String(), nil
		}
		seg, err := o.s.redact(o.pending[:n], false)
		if err != nil {
			return out.String(), err
		}
		out.WriteString(seg)
		o.pending = o.pending[n:]
	}
}

// Flush redacts what is left at the end of the stream.
func (o *OutputRedactor) Flush() (string, error) {
	seg, err := o.s.redact(o.pending, false)
	o.pending = ""
	return seg, err
}

// segmentEnd is the byte length of the first complete segment of text, or
// 0 when none is complete yet.
func segmentEnd(text string) int {
	count := 0
	lastSpace := -1
	for i, r := range text {
		count++
		switch {
		case r == '\n':
			return i + 1
		case r == '.' || r == '!' || r == '?':
			next := i + 1
			if next == len(text) {
				return 0 // the next character decides
			}
			nr, size := utf8.DecodeRuneInString(text[next:])
			if unicode.IsSpace(nr) {
				return next + size
			}
		case unicode.IsSpace(r):
			lastSpace = i + utf8.RuneLen(r)
		}
		if count == maxSegment {
			if lastSpace > 0 {
				return lastSpace
			}
			return i + utf8.RuneLen(r)
		}
	}
	return 0
}
