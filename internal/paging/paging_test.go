package paging_test

import (
	"errors"
	"net/url"
	"testing"

	"conduit/internal/errs"
	"conduit/internal/paging"
)

func TestFromTakesAfterOrItsOlderName(t *testing.T) {
	for _, c := range []struct{ after, cursor, value, param string }{
		{"", "", "", ""},
		{"a1", "", "a1", "after"},
		{"", "c1", "c1", "cursor"},
		{"x", "x", "x", "after"},
	} {
		tok, err := paging.From(c.after, c.cursor)
		if err != nil || tok.Value != c.value || tok.Param != c.param {
			t.Fatalf("From(%q, %q) = %+v, %v", c.after, c.cursor, tok, err)
		}
	}
	_, err := paging.From("a", "b")
	var e *errs.Error
	if !errors.As(err, &e) || e.Kind != errs.Invalid {
		t.Fatalf("after and cursor that differ: %v", err)
	}
}

func TestForeignNamesTheParameterSent(t *testing.T) {
	if msg := (paging.Token{Value: "x", Param: "cursor"}).Foreign().Msg; msg != "cursor is not one this API gave you (use nextAfter of the previous page)" {
		t.Fatal(msg)
	}
}

func TestNextURLKeepsTheFiltersAndSetsAfter(t *testing.T) {
	got := paging.NextURL("https://api.example", "/api/runs", url.Values{"status": {""}, "pipelineId": {"p 1"}, "limit": {"2"}, "after": {"old"}}, "run#1")
	if want := "https://api.example/api/runs?after=run%231&limit=2&pipelineId=p+1"; got != want {
		t.Fatalf("%s, want %s", got, want)
	}
}
