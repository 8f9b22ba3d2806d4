package tools

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"conduit/internal/accounts"
	"conduit/internal/errs"
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
	if len(seen) != 19 {
		t.Errorf("%d tools", len(seen))
	}
}

type echoArgs struct {
	Name  string `json:"name"`
	Count int    `json:"count,omitempty"`
}

type echoResult struct {
	Said string `json:"said"`
}

// The mirror's path through a tool: scope first, then the body as one
// JSON object valid against the input schema, then the function.
func TestInvokeChecksScopeAndArguments(t *testing.T) {
	r := &Registry{}
	Add(r, Meta{Name: "echo", Description: "echoes", Scope: "echo:use"}, func(_ context.Context, c *Call, in echoArgs) (echoResult, error) {
		return echoResult{Said: in.Name + "/" + c.Principal.AccountID}, nil
	})
	tool, _ := r.Lookup("echo")
	caller := accounts.Principal{AccountID: "acct_1", Scopes: []string{"echo:use"}}
	out, err := r.Invoke(context.Background(), tool, caller, []byte(`{"name":"hi","count":2}`))
	if err != nil || out.(echoResult).Said != "hi/acct_1" {
		t.Fatalf("%v %v", out, err)
	}
	for body, want := range map[string]string{
		`{}`:                         `missing properties: ["name"]`,
		`{"name":5}`:                 "name: type",
		`{"name":"x","count":1.5}`:   "count",
		`{"name":"x","other":true}`:  "other",
		`{"name":"a\u0000"}`:         "NUL",
		`[]`:                         "one JSON object",
		`{"name":"x"} {"name":"y"}`:  "one JSON object",
		`{"name":"x","count":1e999}`: "count",
	} {
		_, err := r.Invoke(context.Background(), tool, caller, []byte(body))
		e, ok := errs.As(err)
		if !ok || e.Kind != errs.Invalid || !strings.Contains(e.Msg, want) {
			t.Errorf("%s: %v, want Invalid naming %q", body, err, want)
		}
	}
	_, err = r.Invoke(context.Background(), tool, accounts.Principal{AccountID: "acct_1"}, []byte(`{"name":"x"}`))
	if e, ok := errs.As(err); !ok || e.Kind != errs.Forbidden || !strings.Contains(e.Msg, "echo:use") {
		t.Fatalf("no scope: %v", err)
	}
}
