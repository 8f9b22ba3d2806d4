package frontend

import (
	"testing"

	"conduit/internal/store"
)

// A retried model call replays its tokens from the start: only text past
// what the client already has goes out.
func TestDeltaTrackerSkipsReplayedTokens(t *testing.T) {
	var tr deltaTracker
	var out []string
	for _, d := range []store.Delta{
		{Seq: 1_000_001, Text: "Hel"}, {Seq: 1_000_002, Text: "lo"}, // attempt 1 dies here
		{Seq: 2_000_001, Text: "Hel"}, {Seq: 2_000_002, Text: "lo"}, {Seq: 2_000_003, Text: " world"},
	} {
		if s := tr.add(d); s != "" {
			out = append(out, s)
		}
	}
	if len(out) != 3 || out[0] != "Hel" || out[1] != "lo" || out[2] != " world" || tr.sent != "Hello world" {
		t.Fatalf("%q", out)
	}
}
