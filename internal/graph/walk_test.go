package graph

import (
	"errors"
	"strings"
	"testing"

	"conduit/internal/errs"
)

func TestWalkLayersInGraphOrder(t *testing.T) {
	g := mustParse(t, `{"nodes":[
		{"id":"out","type":"output","key":"answer","from":"m"},
		{"id":"q","type":"input","key":"question"},
		{"id":"p","type":"prompt","template":"Q: {{q}}"},
		{"id":"g","type":"guardrail","input":"p","rules":[{"kind":"maxLength","value":3}],"action":"fallback","fallback":"short"},
		{"id":"m","type":"model","model":"local-echo","prompt":"{{p}} / {{g}}"}],
		"edges":[{"from":"q","to":"p"},{"from":"p","to":"g"},{"from":"p","to":"m"},{"from":"g","to":"m"},{"from":"m","to":"out"}]}`)
	var order []string
	err := g.Walk(func(n *Node) { order = append(order, n.ID) }, func() { order = append(order, "|") })
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(order, " "); got != "q | p | g | m | out |" {
		t.Fatalf("walk %q", got)
	}

	values := map[string]string{}
	inputs := map[string]string{"question": "why?"}
	var steps []Step
	_ = g.Walk(func(n *Node) {
		s := n.Evaluate(inputs, values)
		if s.Model != nil {
			s.Value = "answer"
		}
		values[n.ID] = s.Value
		steps = append(steps, s)
	}, nil)
	if values["p"] != "Q: why?" || values["g"] != "short" || values["out"] != "answer" {
		t.Fatalf("values %v", values)
	}
	if m := steps[3].Model; m == nil || m.Prompt != "Q: why? / short" || m.Model != "local-echo" {
		t.Fatalf("model step %+v", steps[3])
	}

	cyclic := mustParse(t, `{"nodes":[{"id":"a","type":"prompt","template":"x"},{"id":"b","type":"prompt","template":"y"}],
		"edges":[{"from":"a","to":"b"},{"from":"b","to":"a"}]}`)
	if err := cyclic.Walk(func(*Node) { t.Fatal("visited a cyclic graph") }, nil); err == nil {
		t.Fatal("a cycle walked")
	}
}

func TestEvaluate(t *testing.T) {
	block := Node{ID: "g", Type: KindGuardrail, Input: "x", Action: ActionBlock, Rules: []Rule{{Kind: "maxLength", Value: 1}, {Kind: "minLength", Value: 9}}}
	if s := block.Evaluate(nil, map[string]string{"x": "abc"}); s.Err == nil || !strings.HasPrefix(s.Err.Error(), `guardrail "g" blocked the run: `) || !strings.Contains(s.Err.Error(), "; ") {
		t.Fatalf("blocked guardrail %+v", s)
	}
	speech := Node{ID: "s", Type: KindSpeech, Model: "speech-v3", Text: "Say {{x}}", Voice: "aria"}
	s := speech.Evaluate(nil, map[string]string{"x": "hi"})
	if s.Generation == nil || *s.Generation != (GenerationRequest{Kind: KindSpeech, Model: "speech-v3", Voice: "aria", Text: "Say hi"}) {
		t.Fatalf("generation step %+v", s)
	}
	if s := (&Node{ID: "z", Type: "zeta"}).Evaluate(nil, nil); s.Err == nil || s.Err.Error() != `unknown node type "zeta"` {
		t.Fatalf("unknown kind %+v", s)
	}
}

func TestChatShape(t *testing.T) {
	g := mustParse(t, `{"nodes":[
		{"id":"q","type":"input","key":"question"},
		{"id":"tone","type":"input","key":"tone","required":false},
		{"id":"m","type":"model","model":"local-echo","prompt":"{{q}}"},
		{"id":"out","type":"output","key":"answer","from":"m"}],
		"edges":[{"from":"q","to":"m"},{"from":"m","to":"out"}]}`)
	c, err := g.ChatShape()
	if err != nil || c.Entry.ID != "q" || c.Output.ID != "out" || c.StreamNode != "m" {
		t.Fatalf("%+v %v", c, err)
	}

	g.Nodes[1].Required = nil // tone is now required: chat cannot provide it
	_, err = g.ChatShape()
	var e *errs.Error
	if !errors.As(err, &e) || e.Kind != errs.Unprocessable || e.Msg != "pipeline also requires inputs tone, which chat completions cannot provide; use the invoke API" {
		t.Fatalf("%#v", err)
	}

	noOut := mustParse(t, `{"nodes":[{"id":"q","type":"input","key":"question"}],"edges":[]}`)
	if _, err := noOut.ChatShape(); !errors.As(err, &e) || e.Kind != errs.Unprocessable || !strings.Contains(e.Msg, "no output node") {
		t.Fatalf("%#v", err)
	}

	// The answer passes a transform: sent whole, not streamed.
	g = mustParse(t, `{"nodes":[{"id":"q","type":"input","key":"question"},{"id":"p","type":"prompt","transform":"upper","source":"q"},
		{"id":"out","type":"output","key":"answer","from":"p"}],"edges":[{"from":"q","to":"p"},{"from":"p","to":"out"}]}`)
	if c, err := g.ChatShape(); err != nil || c.StreamNode != "" {
		t.Fatalf("%+v %v", c, err)
	}
}

// The node types' list in messages is read from the media kinds.
func TestNodeTypesMessage(t *testing.T) {
	if nodeTypes != "input, model, prompt, guardrail, output, speech, music or video" {
		t.Fatal(nodeTypes)
	}
}
