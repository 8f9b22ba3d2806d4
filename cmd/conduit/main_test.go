package main

import (
	"os/exec"
	"strings"
	"testing"
)

// The production binary must not link the Temporal server (nor the UI
// server): only the dev entry point embeds them.
func TestProductionBinaryDoesNotLinkTheTemporalServer(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	deps := strings.Fields(string(out))
	if len(deps) < 50 {
		t.Fatalf("implausibly few dependencies listed: %d", len(deps))
	}
	for _, d := range deps {
		if strings.HasPrefix(d, "go.temporal.io/server") || strings.HasPrefix(d, "github.com/temporalio/ui-server") || d == "conduit/internal/devstack" {
			t.Errorf("production binary links %s", d)
		}
	}
}
