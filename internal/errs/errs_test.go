package errs_test

import (
	"errors"
	"testing"

	"conduit/internal/errs"
)

func TestProblemsNameEveryField(t *testing.T) {
	var p errs.Problems
	if p.Err("the task") != nil {
		t.Fatal("no problems, yet an error")
	}
	p.Add("name", "is required")
	p.Add("cron", "is not a cron expression")
	err := p.Err("the task")
	e, ok := errs.As(err)
	if !ok || e.Kind != errs.Invalid {
		t.Fatalf("got %#v, want an Invalid error", err)
	}
	if want := "the task is not valid: name: is required; cron: is not a cron expression"; e.Msg != want {
		t.Fatalf("message %q, want %q", e.Msg, want)
	}
	if got := e.Extra["problems"].([]map[string]string); len(got) != 2 || got[1]["field"] != "cron" {
		t.Fatalf("problems %v", got)
	}
}

func TestWithCopiesExtra(t *testing.T) {
	base := &errs.Error{Kind: errs.Conflict, Msg: "m", Extra: map[string]any{"a": 1}}
	got := base.With("b", 2)
	if len(base.Extra) != 1 || got.Extra["a"] != 1 || got.Extra["b"] != 2 {
		t.Fatalf("base %v, copy %v", base.Extra, got.Extra)
	}
	if !errs.Is(errors.Join(errors.New("x"), got), errs.Conflict) || errs.Is(got, errs.Invalid) {
		t.Fatal("Is does not see the kind")
	}
}
