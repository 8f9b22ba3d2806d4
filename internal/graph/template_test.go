package graph

import (
	"errors"
	"strings"
	"testing"
)

// Rendering stops at the per-node limit instead of building the whole
// value: a template tripling a large input, or a chain of doubling nodes,
// fails with a clear error and never grows past the limit.
func TestRenderTemplateStopsAtTheLimit(t *testing.T) {
	big := strings.Repeat("x", 300<<10)
	if _, err := RenderTemplate("{{q}}{{q}}{{q}}", map[string]string{"q": big}); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("tripled 300 KiB: %v", err)
	}
	v := "a"
	for i := 0; i < 40; i++ {
		next, err := RenderTemplate("{{v}}{{v}}", map[string]string{"v": v})
		if err != nil {
			if !errors.Is(err, ErrTooLarge) || len(v) > MaxNodeBytes {
				t.Fatalf("step %d: %v (value %d bytes)", i, err, len(v))
			}
			return
		}
		v = next
	}
	t.Fatal("forty doublings rendered without reaching the limit")
}

func TestInputsOverTheLimitAreRefused(t *testing.T) {
	c := Contract{Inputs: []InputSpec{{Key: "q", Required: true}}}
	if _, err := ValidateInputs(c, map[string]any{"q": strings.Repeat("x", MaxNodeBytes+1)}); err == nil || !strings.Contains(err.Error(), "limit") {
		t.Fatalf("%v", err)
	}
	if _, err := ValidateInputs(c, map[string]any{"q": strings.Repeat("x", MaxNodeBytes)}); err != nil {
		t.Fatal(err)
	}
}
