package oauth

import (
	"slices"
	"testing"

	"conduit/internal/tools"
)

// The tool server's scopes are exactly those its tools check: a new tool
// needing another scope must be offered on the consent page too.
func TestToolServerScopesAreTheTools(t *testing.T) {
	var used []string
	for _, tool := range tools.New(tools.Deps{}).Tools() {
		if tool.Scope != "" && !slices.Contains(used, tool.Scope) {
			used = append(used, tool.Scope)
		}
	}
	slices.Sort(used)
	if !slices.Equal(used, ToolServerScopes()) {
		t.Fatalf("the tools check %v, the tool server offers %v", used, ToolServerScopes())
	}
	for _, s := range DefaultScopes() {
		if !slices.Contains(ToolServerScopes(), s) {
			t.Fatalf("default %s is no tool server scope", s)
		}
	}
	if slices.Contains(DefaultScopes(), "keys:manage") {
		t.Fatal("keys:manage is granted only when a human ticks it")
	}
}
