package graph

import (
	"os"
	"reflect"
	"strings"
	"testing"

	"conduit/internal/redact"
)

func known(id string) bool { return strings.HasPrefix(id, "local-") }

func mustParse(t *testing.T, s string) *Graph {
	t.Helper()
	g, err := Parse([]byte(s))
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func TestExampleGraph(t *testing.T) {
	b, err := os.ReadFile("testdata/example.json")
	if err != nil {
		t.Fatal(err)
	}
	g, err := Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Validate(known); err != nil {
		t.Fatal(err)
	}
	if err := g.Servable(); err != nil {
		t.Fatal(err)
	}
	c := g.Contract()
	want := Contract{
		Inputs:  []InputSpec{{Key: "question", Required: true, Description: "what the user asks"}, {Key: "tone", Required: false, Description: "optional style hint"}},
		Outputs: []string{"answer", "echo"},
	}
	if !reflect.DeepEqual(c, want) {
		t.Fatalf("contract %+v", c)
	}
	levels, err := g.Levels()
	if err != nil {
		t.Fatal(err)
	}
	wantLevels := [][]string{{"question", "tone"}, {"prompt", "shout"}, {"llm", "echo"}, {"check"}, {"answer"}}
	if !reflect.DeepEqual(levels, wantLevels) {
		t.Fatalf("levels %v", levels)
	}
}

func TestParseIsStrict(t *testing.T) {
	cases := map[string]string{
		`{"nodes": [], "edges": [], "extra": 1}`:     `unknown field "extra"`,
		`{"nodes": [{"id": "a", "typo": "x"}]}`:      `unknown field "typo"`,
		`{"nodes": "x"}`:                             "field nodes has the wrong type",
		`{"nodes": [`:                                "not valid JSON",
		`[]`:                                         "must be a JSON object",
		`{"nodes": []} {"nodes": []}`:                "single JSON object",
		`{"nodes": [{"id":"a","maxTokens":"many"}]}`: "wrong type",
	}
	for in, want := range cases {
		if _, err := Parse([]byte(in)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: want %q, got %v", in, want, err)
		}
	}
	many := `{"nodes": [` + strings.Repeat(`{"id":"a","type":"input"},`, MaxNodes) + `{"id":"b","type":"input"}]}`
	if _, err := Parse([]byte(many)); err == nil || !strings.Contains(err.Error(), "at most 200") {
		t.Errorf("too many nodes: %v", err)
	}
}

func TestValidationProblems(t *testing.T) {
	cases := []struct {
		name, graph, want string
	}{
		{"empty id", `{"nodes":[{"type":"input","key":"a"}]}`, "node 1 has no id"},
		{"bad id", `{"nodes":[{"id":"a b","type":"input","key":"a"}]}`, `node "a b": id must be`},
		{"duplicate id", `{"nodes":[{"id":"a","type":"input","key":"a"},{"id":"a","type":"input","key":"b"}]}`, `node "a": id is used by more than one node`},
		{"unknown kind", `{"nodes":[{"id":"a","type":"loop"}]}`, `node "a": unknown node type "loop"`},
		{"missing kind", `{"nodes":[{"id":"a"}]}`, `node "a": type is missing`},
		{"dangling from", `{"nodes":[{"id":"a","type":"input","key":"a"}],"edges":[{"from":"nope","to":"a"}]}`, `edge 1: "from" node "nope" does not exist`},
		{"dangling to", `{"nodes":[{"id":"a","type":"input","key":"a"}],"edges":[{"from":"a","to":"zz"}]}`, `edge 1: "to" node "zz" does not exist`},
		{"self loop", `{"nodes":[{"id":"p","type":"prompt","template":"x"}],"edges":[{"from":"p","to":"p"}]}`, `node "p": edge 1 connects the node to itself`},
		{"duplicate edge", `{"nodes":[{"id":"a","type":"input","key":"a"},{"id":"o","type":"output","key":"o","from":"a"}],"edges":[{"from":"a","to":"o"},{"from":"a","to":"o"}]}`, "edge 2: a → o is listed twice"},
		{"cycle", `{"nodes":[{"id":"a","type":"prompt","template":"{{c}}"},{"id":"b","type":"prompt","template":"{{a}}"},{"id":"c","type":"prompt","template":"{{b}}"}],"edges":[{"from":"a","to":"b"},{"from":"b","to":"c"},{"from":"c","to":"a"}]}`, "cycle: a → b → c → a"},
		{"duplicate input key", `{"nodes":[{"id":"a","type":"input","key":"q"},{"id":"b","type":"input","key":"q"}]}`, `node "b": input key "q" is used by more than one input node`},
		{"duplicate output key", `{"nodes":[{"id":"a","type":"input","key":"q"},{"id":"o1","type":"output","key":"r","from":"a"},{"id":"o2","type":"output","key":"r","from":"a"}],"edges":[{"from":"a","to":"o1"},{"from":"a","to":"o2"}]}`, `node "o2": output key "r" is used by more than one output node`},
		{"bad key", `{"nodes":[{"id":"a","type":"input","key":"1x"}]}`, `key "1x" must be`},
		{"missing key", `{"nodes":[{"id":"a","type":"input"}]}`, `node "a": an input node needs a key`},
		{"unknown model", `{"nodes":[{"id":"q","type":"input","key":"q"},{"id":"m","type":"model","model":"gpt-x","prompt":"{{q}}"}],"edges":[{"from":"q","to":"m"}]}`, `node "m": unknown model "gpt-x"`},
		{"model without prompt", `{"nodes":[{"id":"m","type":"model","model":"local-echo"}]}`, `node "m": a model node needs a prompt`},
		{"unclosed template", `{"nodes":[{"id":"p","type":"prompt","template":"hi {{name"}]}`, `unclosed {{ at character 3`},
		{"variable without source", `{"nodes":[{"id":"q","type":"input","key":"q"},{"id":"p","type":"prompt","template":"{{q}} and {{other}}"}],"edges":[{"from":"q","to":"p"}]}`, `template variable {{other}} has no source: no node "other" exists`},
		{"variable without edge", `{"nodes":[{"id":"q","type":"input","key":"q"},{"id":"p","type":"prompt","template":"{{q}}"}]}`, `template variable {{q}} has no source: add an edge from "q" to "p"`},
		{"output from without edge", `{"nodes":[{"id":"q","type":"input","key":"q"},{"id":"o","type":"output","key":"o","from":"q"}]}`, `from names node "q" but there is no edge from "q" to "o"`},
		{"input with incoming edge", `{"nodes":[{"id":"a","type":"input","key":"a"},{"id":"b","type":"input","key":"b"}],"edges":[{"from":"a","to":"b"}]}`, `node "b": an input node cannot have incoming edges`},
		{"output with outgoing edge", `{"nodes":[{"id":"a","type":"input","key":"a"},{"id":"o","type":"output","key":"o","from":"a"},{"id":"p","type":"prompt","template":"{{o}}"}],"edges":[{"from":"a","to":"o"},{"from":"o","to":"p"}]}`, `node "o": an output node cannot have outgoing edges`},
		{"guardrail bad rule", `{"nodes":[{"id":"a","type":"input","key":"a"},{"id":"g","type":"guardrail","input":"a","rules":[{"kind":"vibes"}],"action":"block"}],"edges":[{"from":"a","to":"g"}]}`, `unknown rule kind "vibes"`},
		{"guardrail bad regex", `{"nodes":[{"id":"a","type":"input","key":"a"},{"id":"g","type":"guardrail","input":"a","rules":[{"kind":"deny","patterns":["(["]}],"action":"block"}],"edges":[{"from":"a","to":"g"}]}`, `deny pattern "([" is not a valid regular expression`},
		{"guardrail no fallback", `{"nodes":[{"id":"a","type":"input","key":"a"},{"id":"g","type":"guardrail","input":"a","rules":[{"kind":"pii"}],"action":"fallback"}],"edges":[{"from":"a","to":"g"}]}`, "action fallback needs a fallback text"},
		{"guardrail bad action", `{"nodes":[{"id":"a","type":"input","key":"a"},{"id":"g","type":"guardrail","input":"a","rules":[{"kind":"pii"}],"action":"warn"}],"edges":[{"from":"a","to":"g"}]}`, `action must be block or fallback, got "warn"`},
		{"transform unknown", `{"nodes":[{"id":"a","type":"input","key":"a"},{"id":"p","type":"prompt","transform":"rot13","source":"a"}],"edges":[{"from":"a","to":"p"}]}`, `unknown transform "rot13"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := mustParse(t, c.graph).Validate(known)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("want %q, got %v", c.want, err)
			}
		})
	}
}

func TestValidationReportsEveryProblem(t *testing.T) {
	err := mustParse(t, `{"nodes":[{"id":"a","type":"loop"},{"id":"m","type":"model","model":"nope"}]}`).Validate(known)
	ve, ok := err.(*ValidationError)
	if !ok || len(ve.Problems) != 3 {
		t.Fatalf("want 3 problems, got %v", err)
	}
}

func TestGenerationNodes(t *testing.T) {
	good := `{"nodes":[{"id":"q","type":"input","key":"q"},
		{"id":"say","type":"speech","text":"Hello {{q}}","voice":"v1"},
		{"id":"bed","type":"music","prompt":"calm piano","seconds":30},
		{"id":"clip","type":"video","prompt":"{{q}} at dawn","aspectRatio":"9:16"},
		{"id":"o","type":"output","key":"o","from":"say"}],
		"edges":[{"from":"q","to":"say"},{"from":"q","to":"clip"},{"from":"say","to":"o"}]}`
	var checked []string
	check := func(n *Node) []Problem {
		checked = append(checked, n.ID)
		if n.Voice == "v1" {
			return []Problem{{NodeID: n.ID, Field: "voice", Message: "unknown voice"}}
		}
		return nil
	}
	err := mustParse(t, good).Validate(known, check)
	ve, ok := err.(*ValidationError)
	if !ok || len(ve.Problems) != 1 || ve.Problems[0].Field != "voice" || !reflect.DeepEqual(checked, []string{"say", "bed", "clip"}) {
		t.Fatalf("%v (checked %v)", err, checked)
	}
	if err := mustParse(t, good).Validate(known); err != nil {
		t.Fatalf("without checks only the structure is judged: %v", err)
	}
	g := mustParse(t, good)
	n, _ := g.Node("say")
	req, err := n.GenerationRequest(map[string]string{"q": "world"})
	if err != nil || req != (GenerationRequest{Kind: "speech", Voice: "v1", Text: "Hello world"}) {
		t.Fatalf("%+v %v", req, err)
	}
	for _, c := range []struct{ graph, want string }{
		{`{"nodes":[{"id":"s","type":"speech"}]}`, `node "s": a speech node needs a text`},
		{`{"nodes":[{"id":"s","type":"speech","prompt":"hi","text":"hi"}]}`, `node "s": a speech node takes text, not prompt`},
		{`{"nodes":[{"id":"m","type":"music","text":"calm"}]}`, `node "m": a music node takes prompt, not text`},
		{`{"nodes":[{"id":"v","type":"video","prompt":"{{nope}}"}]}`, `template variable {{nope}} has no source`},
		{`{"nodes":[{"id":"v","type":"video","prompt":"x","seconds":-5}]}`, `seconds must be positive`},
		{`{"nodes":[{"id":"v","type":"hologram"}]}`, `unknown node type "hologram" (input, model, prompt, guardrail, output, speech, music or video)`},
	} {
		if err := mustParse(t, c.graph).Validate(known); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: want %q, got %v", c.graph, c.want, err)
		}
	}
}

func TestServable(t *testing.T) {
	if err := mustParse(t, `{"nodes":[]}`).Servable(); err == nil || err.Error() != "pipeline has no input node and no output node" {
		t.Fatal(err)
	}
	if err := mustParse(t, `{"nodes":[{"id":"a","type":"input","key":"a"}]}`).Servable(); err == nil || err.Error() != "pipeline has no output node" {
		t.Fatal(err)
	}
}

func TestRenderTemplate(t *testing.T) {
	vals := map[string]string{"q": "why?", "llm": `{"answer": "because", "items": [{"n": 1}, "two"]}`, "plain": "text"}
	cases := map[string]string{
		"Q: {{q}}":           "Q: why?",
		"{{ q }}{{q}}":       "why?why?",
		"{{llm.answer}}":     "because",
		"{{llm.items[0]}}":   `{"n":1}`,
		"{{llm.items[1]}}":   "two",
		"{{llm.items[0].n}}": "1",
		"no placeholders":    "no placeholders",
	}
	for tmpl, want := range cases {
		got, err := RenderTemplate(tmpl, vals)
		if err != nil || got != want {
			t.Errorf("%s: got %q %v, want %q", tmpl, got, err, want)
		}
	}
	bad := map[string]string{
		"{{missing}}":      "no value for {{missing}}",
		"{{plain.field}}":  "value is not JSON",
		"{{llm.nope}}":     `no field "nope"`,
		"{{llm.items[5]}}": "out of range",
		"{{llm.items[x]}}": "not a non-negative integer",
		"oops }} here":     "unmatched }}",
		"{{}}":             "empty reference",
	}
	for tmpl, want := range bad {
		if _, err := RenderTemplate(tmpl, vals); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: want %q, got %v", tmpl, want, err)
		}
	}
}

func TestTransforms(t *testing.T) {
	vals := map[string]string{"src": `  {"a": {"b": ["x", "y"]}}  `}
	cases := []struct {
		n    Node
		want string
	}{
		{Node{Transform: "trim", Source: "src"}, `{"a": {"b": ["x", "y"]}}`},
		{Node{Transform: "upper", Source: "src"}, `  {"A": {"B": ["X", "Y"]}}  `},
		{Node{Transform: "json", Source: "src", Path: "a.b[1]"}, "y"},
		{Node{Transform: "json", Source: "src", Path: "a"}, `{"b":["x","y"]}`},
		{Node{Template: "[{{src}}]"}, `[  {"a": {"b": ["x", "y"]}}  ]`},
	}
	for _, c := range cases {
		got, err := c.n.TransformValue(vals)
		if err != nil || got != c.want {
			t.Errorf("%+v: got %q %v", c.n, got, err)
		}
	}
}

func TestGuardrails(t *testing.T) {
	block := Node{Action: ActionBlock, Rules: []Rule{{Kind: "maxLength", Value: 10}, {Kind: "deny", Patterns: []string{"(?i)secret"}}}}
	r, err := block.CheckGuardrail("short")
	if err != nil || !r.Passed || r.Value != "short" || r.Blocked {
		t.Fatalf("%+v %v", r, err)
	}
	r, _ = block.CheckGuardrail("a very long SECRET text")
	if !r.Blocked || len(r.Violations) != 2 || r.Violations[0] != "maxLength: 23 characters exceed the limit of 10" || !strings.Contains(r.Violations[1], "denied pattern") {
		t.Fatalf("%+v", r)
	}
	fb := Node{Action: ActionFallback, Fallback: "[redacted]", Rules: []Rule{{Kind: "pii"}}}
	for in, want := range map[string]string{
		"mail me at ann@example.com": "[redacted]",
		"call 415-555-0132":          "[redacted]",
		"ssn 536-90-4399":            "[redacted]",
		"card 4111 1111 1111 1111":   "[redacted]",
		"order 1234 5678 9012 3456":  "order 1234 5678 9012 3456", // fails Luhn: not a card
		"nothing personal here":      "nothing personal here",
	} {
		r, err := fb.CheckGuardrail(in)
		if err != nil || r.Value != want || r.Blocked {
			t.Errorf("%q: %+v %v", in, r, err)
		}
	}
	// internal/redact: names, addresses and validated numbers; a number
	// that only looks like an SSN (123-45-6789 is the SSA's advertising
	// example, never issued) passes.
	for in, want := range map[string]string{
		"Dear Zoltan Brekke, thanks":                        "[redacted]",
		"ship it to 1600 Larkspur Avenue, Tacoma, WA 98402": "[redacted]",
		"IBAN DE89 3704 0044 0532 0130 00":                  "[redacted]",
		"ssn 123-45-6789":                                   "ssn 123-45-6789",
		"on 2024-03-05 we shipped order 88213":              "on 2024-03-05 we shipped order 88213",
	} {
		r, err := fb.CheckGuardrail(in)
		if err != nil || r.Value != want || r.Blocked {
			t.Errorf("%q: %+v %v", in, r, err)
		}
	}
	blockPII := Node{Action: ActionBlock, Rules: []Rule{{Kind: "pii"}}}
	if r, _ := blockPII.CheckGuardrail("Dear Zoltan Brekke, write to zb@example.com"); !r.Blocked ||
		r.Violations[0] != "pii: value contains an email address, a person's name" {
		t.Errorf("%+v", r)
	}
	// runs recorded before the change keep the first patterns
	legacy := EvalOptions{LegacyPII: true}
	for in, want := range map[string]string{
		"ssn 123-45-6789":            "[redacted]",
		"Dear Zoltan Brekke, thanks": "Dear Zoltan Brekke, thanks",
		"mail me at ann@example.com": "[redacted]",
	} {
		r, err := fb.CheckGuardrailWith(in, legacy)
		if err != nil || r.Value != want || r.Blocked {
			t.Errorf("legacy %q: %+v %v", in, r, err)
		}
	}
	// runs recorded before rule set 2 keep rule set 1: no mailto: address,
	// no name addressed on the first line
	rules1 := EvalOptions{PIIRules: redact.Rules1}
	for in, want := range map[string]string{
		"write to mailto:ann@example.com":  "write to mailto:ann@example.com",
		"Ottoline,\n\nplease see the file": "Ottoline,\n\nplease see the file",
	} {
		if r, err := fb.CheckGuardrailWith(in, rules1); err != nil || r.Value != want {
			t.Errorf("rule set 1 %q: %+v %v", in, r, err)
		}
		if r, err := fb.CheckGuardrail(in); err != nil || r.Value != "[redacted]" {
			t.Errorf("rule set 2 %q: %+v %v", in, r, err)
		}
	}
	// a detection error fails closed: the node errs, nothing passes
	if _, err := blockPII.CheckGuardrail(string([]byte{0xff, 'a'})); err == nil {
		t.Error("invalid UTF-8 passed the pii rule")
	}
	req := Node{Action: ActionBlock, Rules: []Rule{{Kind: "requiredFields", Fields: []string{"name", "age"}}, {Kind: "regex", Pattern: `^\{`}}}
	if r, _ := req.CheckGuardrail(`{"name": "x", "age": ""}`); !r.Blocked || r.Violations[0] != "requiredFields: missing age" {
		t.Fatalf("%+v", r)
	}
	if r, _ := req.CheckGuardrail(`{"name": "x", "age": 3}`); !r.Passed {
		t.Fatalf("%+v", r)
	}
}

func TestValidateInputs(t *testing.T) {
	c := Contract{Inputs: []InputSpec{{Key: "q", Required: true}, {Key: "n", Required: true}, {Key: "opt"}}}
	got, err := ValidateInputs(c, map[string]any{"q": "hi", "n": 3.5, "extra": true, "opt": map[string]any{"a": []any{1}}})
	if err != nil || !reflect.DeepEqual(got, map[string]string{"q": "hi", "n": "3.5", "opt": `{"a":[1]}`}) {
		t.Fatalf("%v %v", got, err)
	}
	if _, err := ValidateInputs(c, map[string]any{"opt": "x"}); err == nil || err.Error() != "missing required inputs: n, q" {
		t.Fatal(err)
	}
	if _, err := ValidateInputs(c, map[string]any{"q": "x", "n": nil}); err == nil || err.Error() != "missing required input: n" {
		t.Fatal(err)
	}
}

func FuzzParseValidate(f *testing.F) {
	b, _ := os.ReadFile("testdata/example.json")
	f.Add(b)
	f.Add([]byte(`{"nodes":[{"id":"a","type":"prompt","template":"{{a.b[0]}}"}],"edges":[{"from":"a","to":"a"}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		g, err := Parse(data)
		if err != nil {
			return
		}
		if g.Validate(known) == nil {
			if _, err := g.Levels(); err != nil {
				t.Fatalf("valid graph has no order: %v", err)
			}
			_ = g.Contract()
		}
	})
}

func FuzzRenderTemplate(f *testing.F) {
	f.Add("Q: {{q}} {{llm.items[0].n}}")
	f.Add("{{")
	f.Fuzz(func(t *testing.T, tmpl string) {
		vals := map[string]string{"q": "v", "llm": `{"items":[{"n":1}]}`}
		out, err := RenderTemplate(tmpl, vals)
		if err == nil && !strings.Contains(tmpl, "{{") && out != tmpl {
			t.Fatalf("text without placeholders changed: %q → %q", tmpl, out)
		}
	})
}
