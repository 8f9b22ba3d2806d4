package tools

import (
	"encoding/json"
	"testing"
)

// Every tool has a name, a description, input and output schemas of type
// object, and annotations; the MCP server accepts them all.
func TestEveryToolIsDescribed(t *testing.T) {
	r := New(Deps{})
	_ = r.MCPServer("test")
	seen := map[string]bool{}
	for _, tool := range r.Tools() {
		d := tool.Def()
		if d.Name == "" || seen[d.Name] || len(d.Description) < 40 || d.Annotations == nil {
			t.Errorf("tool %q: name, description or annotations missing", d.Name)
		}
		seen[d.Name] = true
		for what, s := range map[string]any{"input": d.InputSchema, "output": d.OutputSchema} {
			b, err := json.Marshal(s)
			var m map[string]any
			if err != nil || json.Unmarshal(b, &m) != nil || m["type"] != "object" {
				t.Errorf("tool %s: %s schema %s", d.Name, what, b)
			}
		}
	}
	if len(seen) != 13 {
		t.Errorf("%d tools", len(seen))
	}
}
