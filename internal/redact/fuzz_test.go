package redact

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzDetect: any text either errs or yields sorted, non-overlapping
// code-point spans whose Text is the text's; Redact never leaks a span's
// value when it is not elsewhere in the text.
func FuzzDetect(f *testing.F) {
	for _, s := range []string{
		"Hi, my name is Zoltan Brekke, zoltan.brekke@example.com, (415) 555-2671",
		"SSN 536-90-4399 card 4111 1111 1111 1111 IBAN GB82 WEST 1234 5698 7654 32",
		"DOB: 03/12/1985 MRN: MR-0048213 1600 Pennsylvania Avenue NW, Washington, DC 20500",
		"Hauptstraße 12a, 10115 Berlin; 12 rue de la Paix, 75002 Paris; Calle de Alcalá 45, 28014 Madrid",
		"password = \"Tr0ub4dor&3x\" AKIAIOSFODNN7EXAMPLE -----BEGIN PRIVATE KEY-----\nabc",
		"+", "(", "@", "://", "www.", "1-", "12/", "March 3,", "Dr.", "-----BEGIN", "Plaza 1", "Via ", "3 rue",
		"Grüße 😀 an zoë@example.com — Tel. +49 30 1234567",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		ents, err := Detect(s, Options{})
		if err != nil {
			if utf8.ValidString(s) && len(s) <= MaxText {
				t.Fatalf("error on valid text: %v", err)
			}
			return
		}
		runes := []rune(s)
		prev := 0
		for _, e := range ents {
			if e.Start < prev || e.End <= e.Start || e.End > len(runes) {
				t.Fatalf("bad span %+v (prev end %d, %d runes)", e, prev, len(runes))
			}
			if string(runes[e.Start:e.End]) != e.Text {
				t.Fatalf("span %+v is %q", e, string(runes[e.Start:e.End]))
			}
			prev = e.End
		}
		out, reps, err := Apply(s, ents, Policy{}, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range reps {
			if len(r.Text) >= 6 && strings.Count(s, r.Text) == 1 && strings.Contains(out, r.Text) {
				t.Fatalf("value %q survives in %q", r.Text, out)
			}
		}
	})
}
