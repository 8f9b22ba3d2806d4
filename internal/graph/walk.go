package graph

import (
	"fmt"
	"strings"

	"conduit/internal/errs"
)

// Walk is the order in which an estimate evaluates a graph (and runs
// started before PipelineRun became a dataflow ran it): layer by layer
// (Levels), each layer's nodes in graph order. visit is called for every
// node of a layer, then settle (when not nil) once the whole layer has
// been visited: a run starts a layer's model calls in visit and waits for
// them in settle, so a layer's calls run in parallel. Nothing is visited
// when the graph cannot be ordered.
func (g *Graph) Walk(visit func(n *Node), settle func()) error {
	levels, err := g.Levels()
	if err != nil {
		return err
	}
	for _, level := range levels {
		for _, id := range level {
			n, _ := g.Node(id)
			visit(n)
		}
		if settle != nil {
			settle()
		}
	}
	return nil
}

// Step is one node's evaluation: the value of a node computed here, or
// the call its caller has to make (a model's answer or a rendered file is
// a side effect, made by an activity).
type Step struct {
	// Value is the node's value (input, prompt, guardrail, output); with
	// Err set it is not the node's value.
	Value string
	Err   error
	// Model, for a model node, is the call to make.
	Model *ModelRequest
	// Generation, for a generation node, is the render to start.
	Generation *GenerationRequest
}

// Evaluate computes a node from the run's inputs and the values of the
// nodes before it: every kind's semantics but the model call and the
// render, which it returns as requests.
func (n *Node) Evaluate(inputs, values map[string]string) Step {
	return n.EvaluateWith(inputs, values, EvalOptions{})
}

// EvaluateWith is Evaluate under a run's options.
func (n *Node) EvaluateWith(inputs, values map[string]string, o EvalOptions) Step {
	switch {
	case n.Type == KindInput:
		return Step{Value: inputs[n.Key]}
	case n.Type == KindPrompt:
		v, err := n.TransformValue(values)
		return Step{Value: v, Err: err}
	case n.Type == KindGuardrail:
		res, err := n.CheckGuardrailWith(values[n.Input], o)
		if err == nil && res.Blocked {
			err = fmt.Errorf("guardrail %q blocked the run: %s", n.ID, strings.Join(res.Violations, "; "))
		}
		return Step{Value: res.Value, Err: err}
	case n.Type == KindOutput:
		return Step{Value: n.OutputValue(values)}
	case n.Type == KindModel:
		req, err := n.ModelRequest(values)
		if err != nil {
			return Step{Err: err}
		}
		return Step{Model: &req}
	case IsGeneration(n.Type):
		req, err := n.GenerationRequest(values)
		if err != nil {
			return Step{Err: err}
		}
		return Step{Generation: &req}
	}
	return Step{Err: fmt.Errorf("unknown node type %q", n.Type)}
}

// Chat is how a graph maps onto a conversation (chat completions).
type Chat struct {
	// Entry is the first input node: it gets the latest user message.
	Entry *Node
	// Output is the first output node: its value is the answer.
	Output *Node
	// StreamNode is the model node whose tokens are streamed, if any.
	StreamNode string
}

// ChatShape finds the entry and output nodes, or says (Unprocessable) why
// the graph cannot answer chat completions.
func (g *Graph) ChatShape() (Chat, error) {
	var t Chat
	for i := range g.Nodes {
		n := &g.Nodes[i]
		if n.Type == KindInput && t.Entry == nil {
			t.Entry = n
		}
		if n.Type == KindOutput && t.Output == nil {
			t.Output = n
		}
	}
	if t.Entry == nil || t.Output == nil {
		return t, errs.New(errs.Unprocessable, "pipeline has no entry (input) node or no output node, so it cannot answer chat completions")
	}
	var missing []string
	for _, in := range g.Contract().Inputs {
		if in.Required && in.Key != t.Entry.Key {
			missing = append(missing, in.Key)
		}
	}
	if len(missing) > 0 {
		return t, errs.New(errs.Unprocessable, "pipeline also requires inputs %s, which chat completions cannot provide; use the invoke API", strings.Join(missing, ", "))
	}
	// Tokens are streamed only when the answer is a model's own text: a
	// guardrail or transform in between could change or withhold it, so
	// then the answer is sent whole when the run ends.
	if src, ok := g.Node(t.Output.From); ok && src.Type == KindModel {
		t.StreamNode = src.ID
	}
	return t, nil
}
