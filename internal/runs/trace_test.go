package runs

import (
	"encoding/json"
	"testing"
	"time"

	"conduit/internal/money"
	"conduit/internal/store"
	"conduit/workflows"
)

// Every node that was charged carries its cost in the trace: a model call
// and a generation node's render alike, so the nodes add up to the run's
// cost; nodes that cost nothing, and failed ones, carry none.
func TestTraceCarriesTheCostOfEveryChargedNode(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	states := []workflows.NodeState{
		{ID: "in", Type: "input", Status: workflows.NodeSuccess, StartedAt: &at, FinishedAt: &at},
		{ID: "llm", Type: "model", Status: workflows.NodeSuccess, PromptTokens: 10, CompletionTokens: 5, CostMicros: 1_500},
		{ID: "say", Type: "speech", Status: workflows.NodeSuccess, CostMicros: 30_000, ItemID: "med_1"},
		{ID: "bed", Type: "music", Status: workflows.NodeSuccess, CostMicros: 60_000},
		{ID: "clip", Type: "video", Status: workflows.NodeSuccess, CostMicros: 420_000},
		{ID: "late", Type: "video", Status: workflows.NodeError, Error: "the render did not finish in time"},
		{ID: "out", Type: "output", Status: workflows.NodeSuccess},
	}
	raw, err := json.Marshal(states)
	if err != nil {
		t.Fatal(err)
	}
	nodes := Trace(store.Run{Nodes: raw})
	if len(nodes) != len(states) {
		t.Fatalf("trace has %d nodes, want %d", len(nodes), len(states))
	}
	want := map[string]money.Micros{"llm": 1_500, "say": 30_000, "bed": 60_000, "clip": 420_000}
	var sum money.Micros
	for _, n := range nodes {
		c, charged := want[n.ID]
		switch {
		case charged && (n.CostUSD == nil || *n.CostUSD != c):
			t.Errorf("node %s (%s): cost %v, want %d", n.ID, n.Type, n.CostUSD, c)
		case !charged && n.CostUSD != nil:
			t.Errorf("node %s (%s) carries a cost %d, want none", n.ID, n.Type, *n.CostUSD)
		}
		if n.CostUSD != nil {
			sum += *n.CostUSD
		}
	}
	if sum != 511_500 {
		t.Errorf("the nodes' costs add up to %d, want 511500", sum)
	}
	// The JSON a caller reads: costUsd on the render, in USD.
	b, _ := json.Marshal(nodes[2])
	var m map[string]any
	_ = json.Unmarshal(b, &m)
	if m["costUsd"] != 0.03 {
		t.Errorf("speech node JSON %s: costUsd %v, want 0.03", b, m["costUsd"])
	}
}
