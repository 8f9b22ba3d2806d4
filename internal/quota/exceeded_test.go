package quota

import (
	"context"
	"strings"
	"testing"

	"conduit/internal/errs"
)

func TestExceeded(t *testing.T) {
	e := Exceeded(Tasks, 3, 3)
	if e.Kind != errs.TooManyRequests || e.Code != Code || e.Extra["resource"] != "tasks" || e.Extra["used"] != int64(3) || e.Extra["limit"] != int64(3) {
		t.Fatalf("%+v", e)
	}
	if !strings.Contains(e.Msg, "3 of its 3 scheduled tasks") || !strings.Contains(e.Msg, "delete one") {
		t.Fatal(e.Msg)
	}
}

type counter map[Resource]int64

func (c counter) Count(_ context.Context, _ string, r Resource) (int64, error) { return c[r], nil }

type media struct{}

func (media) Usage(context.Context, string) ([]Item, error) {
	return []Item{{Resource: MediaBytes, Used: 10, Limit: limitPtr(100)}}, nil
}

// The counted resources come first, with no limit shown as null (nil),
// then the other sources in order.
func TestUsageJoinsSources(t *testing.T) {
	s := &Service{Sources: []Source{Counted{Counter: counter{Tasks: 2}, Limits: Limits{Tasks: 5}}, media{}}}
	u, err := s.Usage(context.Background(), "acct")
	if err != nil {
		t.Fatal(err)
	}
	if len(u.Resources) != 5 || u.Resources[4].Resource != MediaBytes || *u.Resources[4].Limit != 100 {
		t.Fatalf("resources %+v", u.Resources)
	}
	for _, it := range u.Resources {
		if it.Resource == Tasks && (it.Used != 2 || it.Limit == nil || *it.Limit != 5) {
			t.Fatalf("tasks %+v", it)
		}
		if it.Resource == Enclaves && it.Limit != nil {
			t.Fatalf("an unlimited resource shows a limit: %+v", it)
		}
	}
}
