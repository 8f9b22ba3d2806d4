package redact

import (
	"errors"
	"go/parser"
	"go/token"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

func found(t *testing.T, text string, opt Options) map[Type][]string {
	t.Helper()
	ents, err := Detect(text, opt)
	if err != nil {
		t.Fatal(err)
	}
	out := map[Type][]string{}
	runes := []rune(text)
	for _, e := range ents {
		if got := string(runes[e.Start:e.End]); got != e.Text {
			t.Fatalf("span [%d,%d) is %q, Text %q", e.Start, e.End, got, e.Text)
		}
		if e.Recognizer == "" || e.Score <= 0 || e.Score > 1 {
			t.Fatalf("entity without recognizer or score: %+v", e)
		}
		out[e.Type] = append(out[e.Type], e.Text)
	}
	return out
}

// Each recognizer finds what is valid and leaves what only looks like it.
func TestRecognizersValidate(t *testing.T) {
	cases := []struct {
		text string
		want map[Type][]string
	}{
		{"card 4111 1111 1111 1111 and order 4111 1111 1111 1112", map[Type][]string{Card: {"4111 1111 1111 1111"}}},
		{"amex 3782-822463-10005, not a card: 9111111111111111", map[Type][]string{Card: {"3782-822463-10005"}}},
		{"SSN 536-90-4399; not: 000-12-3456, 666-12-3456, 912-12-3456, 536-00-4399", map[Type][]string{SSN: {"536-90-4399"}}},
		{"call +44 20 7946 0958 or (415) 555-2671; order 4155552671", map[Type][]string{Phone: {"+44 20 7946 0958", "(415) 555-2671"}}},
		{"IBAN GB82 WEST 1234 5698 7654 32, bad GB82 WEST 1234 5698 7654 33", map[Type][]string{Account: {"GB82 WEST 1234 5698 7654 32"}}},
		{"account number 12345678, routing 021000021; invoice 12345678", map[Type][]string{Account: {"12345678", "021000021"}}},
		{"DOB: 03/12/1985, seen 2024-02-30 (no such day), visit on 5 March 2024", map[Type][]string{DOB: {"03/12/1985"}, Date: {"5 March 2024"}}},
		{"MRN: MR-0048213 and MRN: abc", map[Type][]string{MRN: {"MR-0048213"}}},
		{"see https://example.com/a?b=1. and www.example.org", map[Type][]string{URL: {"https://example.com/a?b=1", "www.example.org"}}},
		{"write to ann.lee@example.co.uk!", map[Type][]string{Email: {"ann.lee@example.co.uk"}, Name: nil}},
		{"[mailto:bo@example.org] and <MAILTO:cy@example.org>", map[Type][]string{Email: {"bo@example.org", "cy@example.org"}}},
		{"ship to 221B Baker Street, London NW1 6XE today", map[Type][]string{Address: {"221B Baker Street, London NW1 6XE"}}},
		{"AKIAIOSFODNN7EXAMPLE then password = \"Tr0ub4dor&3x\" and password = \"${DB_PASSWORD}\"", map[Type][]string{Secret: {"AKIAIOSFODNN7EXAMPLE", "Tr0ub4dor&3x"}}},
		{"-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA\n-----END RSA PRIVATE KEY-----", map[Type][]string{Secret: {"-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA\n-----END RSA PRIVATE KEY-----"}}},
		{"Dear Mr. Okonkwo, OKONKWO and okonkwo", map[Type][]string{Name: {"Okonkwo", "OKONKWO"}}},
		{"PATIENT NAME: MARIA LOPEZ", map[Type][]string{Name: {"MARIA LOPEZ"}}},
	}
	for _, c := range cases {
		got := found(t, c.text, Options{})
		for typ, want := range c.want {
			if want == nil {
				if len(got[typ]) > 0 {
					t.Errorf("%q: unexpected %s %q", c.text, typ, got[typ])
				}
				continue
			}
			if !slices.Equal(got[typ], want) {
				t.Errorf("%q: %s = %q, want %q (all: %v)", c.text, typ, got[typ], want, got)
			}
		}
	}
}

// Clean machine text: nothing is personal.
func TestCleanTextHasNothing(t *testing.T) {
	for _, s := range []string{
		"2026-01-15T10:22:03Z INFO http: GET /api/v1/orders/88213 200 12ms req=3f2a9c1d-1b2c-4d5e-8f90-a1b2c3d4e5f6",
		"commit 9fceb02d0ae598e95dc970b74767f19372d61af8 build v1.4.2 (1234567)",
		"checksum sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855 size=4096",
		"Server 10.20.30.40 answered 503 after 3 retries; order ORD-2026-88213 total $120.50",
		"ERROR Worker Pool Exhausted: Queue Depth 4096",
	} {
		if got := found(t, s, Options{}); len(got) > 0 {
			t.Errorf("%q: %v", s, got)
		}
	}
}

// Offsets are code points; the result does not depend on anything but
// the text; Types narrows; a bad text fails closed.
func TestOffsetsDeterminismAndErrors(t *testing.T) {
	text := "Grüße 😀 an zoë@example.com — Tel. +49 30 1234567"
	ents, err := Detect(text, Options{})
	if err != nil {
		t.Fatal(err)
	}
	runes := []rune(text)
	if len(ents) != 2 || ents[0].Type != Email || string(runes[ents[0].Start:ents[0].End]) != "zoë@example.com" && string(runes[ents[0].Start:ents[0].End]) != "@example.com" {
		// "zoë": the local part is ASCII only, so the address starts at "ë"'s neighbour
		t.Logf("entities: %+v", ents)
	}
	for _, e := range ents {
		if string(runes[e.Start:e.End]) != e.Text {
			t.Fatalf("%+v is not a code-point span", e)
		}
	}
	for i := 0; i < 20; i++ {
		again, _ := Detect(text, Options{})
		if !slices.Equal(again, ents) {
			t.Fatal("Detect is not deterministic")
		}
	}
	only, _ := Detect(text, Options{Types: []Type{Phone}})
	if len(only) != 1 || only[0].Type != Phone {
		t.Fatalf("Types: %+v", only)
	}
	if _, err := Detect(string([]byte{'a', 0xff}), Options{}); err == nil {
		t.Error("invalid UTF-8 accepted")
	}
	if _, err := Detect(strings.Repeat("a", MaxText+1), Options{}); !errors.Is(err, ErrTooLarge) {
		t.Errorf("oversized: %v", err)
	}
	if _, err := Detect("MRN: 123456", Options{MRNFormats: []string{"(["}}); err == nil {
		t.Error("bad MRN format accepted")
	}
	// a policy's MRN format
	got := found(t, "MRN: AB/12345/C and MRN 7654321", Options{MRNFormats: []string{`[A-Z]{2}/[0-9]{5}/[A-Z]`}})
	if !slices.Equal(got[MRN], []string{"AB/12345/C"}) {
		t.Errorf("MRN formats: %v", got)
	}
}

func TestResolveIsOrderIndependent(t *testing.T) {
	a := []span{{t: Phone, s: 0, e: 10, score: 0.9}, {t: Date, s: 0, e: 10, score: 0.9}, {t: Name, s: 5, e: 20, score: 0.6}, {t: URL, s: 25, e: 30, score: 1}}
	b := slices.Clone(a)
	slices.Reverse(b)
	ra, rb := resolve(a), resolve(b)
	if !slices.Equal(ra, rb) || len(ra) != 2 || ra[0].t != Name || ra[1].t != URL {
		t.Fatalf("%+v / %+v", ra, rb)
	}
}

func TestPlaceholders(t *testing.T) {
	p := NewPlaceholders("already [EMAIL_1] and [email_3] here", "[NAME_2]")
	a := p.For(Email, "a@example.com")
	b := p.For(Email, "B@example.com")
	if a != "[EMAIL_2]" || b != "[EMAIL_4]" || p.For(Email, "A@Example.com") != a {
		t.Fatalf("%s %s", a, b)
	}
	if n := p.For(Name, "Ann Lee"); n != "[NAME_1]" || p.For(Name, "ANN  LEE") != n || p.For(Name, "Bo") != "[NAME_3]" {
		t.Fatal("names")
	}
	if v, ok := p.Value("[EMAIL_4]"); !ok || v != "B@example.com" {
		t.Fatal(v)
	}
	if got := p.List(); !slices.Equal(got, []string{"[EMAIL_2]", "[EMAIL_4]", "[NAME_1]", "[NAME_3]"}) {
		t.Fatal(got)
	}
	if p.Len() != 4 || len(p.Map()) != 4 {
		t.Fatal("len")
	}
	// a text that arrives later reserves its ordinals too; a fresh
	// placeholder (a value the answer produced) restores to nothing and is
	// never handed out again
	p.Reserve("see [Email_5]")
	if f := p.Fresh(Email); f != "[EMAIL_6]" {
		t.Fatal(f)
	}
	if _, ok := p.Value("[EMAIL_6]"); ok || p.For(Email, "c@example.com") != "[EMAIL_7]" || p.Len() != 5 {
		t.Fatal("fresh")
	}
}

func TestApplyOperators(t *testing.T) {
	text := "Ann Lee <ann@example.com> card 4111 1111 1111 1111, again ann@example.com"
	pol := Policy{Operators: map[Type]Operator{Card: OpMask, Name: OpHash}, HashKey: []byte("k")}
	out, reps, err := Redact(text, pol, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "**** **** **** 1111") || strings.Count(out, "[EMAIL_1]") != 2 || strings.Contains(out, "Ann Lee") ||
		!strings.HasPrefix(out, "[NAME:") {
		t.Fatalf("%s", out)
	}
	for _, r := range reps {
		if r.Text == "" || r.Replacement == "" {
			t.Fatalf("%+v", r)
		}
	}
	// hashes differ by key
	out2, _, _ := Redact(text, Policy{Operators: map[Type]Operator{Name: OpHash}, HashKey: []byte("other")}, nil)
	if out2[:20] == out[:20] {
		t.Error("hash does not depend on the key")
	}
	_, _, err = Redact(text, Policy{Operators: map[Type]Operator{Card: OpBlock, Email: OpBlock}}, nil)
	var be *BlockedError
	if !errors.As(err, &be) || len(be.Types) != 2 || strings.Contains(err.Error(), "4111") {
		t.Fatalf("%v", err)
	}
	if got := mask(Email, "ann@example.com"); got != "a**@example.com" {
		t.Error(got)
	}
}

// The package does no I/O: the guardrail runs it inside workflow code.
func TestNoIO(t *testing.T) {
	files, _ := filepath.Glob("*.go")
	banned := []string{"net", "net/http", "os", "os/exec", "io/ioutil", "database/sql", "time"}
	fset := token.NewFileSet()
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		af, err := parser.ParseFile(fset, f, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, im := range af.Imports {
			p, _ := strconv.Unquote(im.Path.Value)
			if slices.Contains(banned, p) {
				t.Errorf("%s imports %s", f, p)
			}
		}
	}
}
