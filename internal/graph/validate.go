package graph

import (
	"fmt"
	"regexp"
	"strings"

	"conduit/internal/mediakind"
)

// Problem is one thing wrong with a graph.
type Problem struct {
	NodeID  string
	Field   string
	Message string
}

func (p Problem) String() string {
	if p.NodeID != "" {
		return fmt.Sprintf("node %q: %s", p.NodeID, p.Message)
	}
	return p.Message
}

// ValidationError holds every problem found, not just the first.
type ValidationError struct{ Problems []Problem }

func (e *ValidationError) Error() string {
	parts := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		parts[i] = p.String()
	}
	return strings.Join(parts, "; ")
}

var keyRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,63}$`)

func validID(s string) bool { return keyRE.MatchString(s) }

type validator struct {
	g        *Graph
	problems []Problem
}

func (v *validator) addf(node, field, format string, args ...any) {
	v.problems = append(v.problems, Problem{NodeID: node, Field: field, Message: fmt.Sprintf(format, args...)})
}

// GenerationCheck checks a generation node's settings against the media
// menus (internal/library has the one the API uses): unknown models and
// voices, lengths not on sale, a deployment without media.
type GenerationCheck func(n *Node) []Problem

// Validate checks the whole graph. knownModel says which model ids exist;
// the generation checks, when given, judge the generation nodes' settings
// (without them only their structure is checked). A graph without input or
// output nodes is a valid draft; Servable says whether it can take calls.
func (g *Graph) Validate(knownModel func(id string) bool, checks ...GenerationCheck) error {
	v := &validator{g: g}
	ids := map[string]int{}
	for i, n := range g.Nodes {
		switch {
		case n.ID == "":
			v.addf("", "nodes", "node %d has no id", i+1)
		case !validID(n.ID):
			v.addf(n.ID, "id", "id must be a letter or _ followed by up to 63 letters, digits or _")
		case ids[n.ID] > 0:
			v.addf(n.ID, "id", "id is used by more than one node")
		}
		ids[n.ID]++
	}
	v.edges(ids)
	v.cycles(ids)
	inKeys, outKeys := map[string]bool{}, map[string]bool{}
	for i := range g.Nodes {
		n := &g.Nodes[i]
		switch typ := n.Type; {
		case typ == KindInput:
			v.key(n, inKeys, "input")
			if len(g.Deps(n.ID)) > 0 {
				v.addf(n.ID, "edges", "an input node cannot have incoming edges")
			}
		case typ == KindOutput:
			v.key(n, outKeys, "output")
			v.source(n, "from", n.From)
			for _, e := range g.Edges {
				if e.From == n.ID {
					v.addf(n.ID, "edges", "an output node cannot have outgoing edges")
					break
				}
			}
		case typ == KindPrompt:
			v.prompt(n)
		case typ == KindModel:
			v.model(n, knownModel)
		case typ == KindGuardrail:
			v.guardrail(n)
		case IsGeneration(typ):
			v.generation(n, checks)
		case typ == "":
			v.addf(n.ID, "type", "type is missing (%s)", nodeTypes)
		default:
			v.addf(n.ID, "type", "unknown node type %q (%s)", n.Type, nodeTypes)
		}
	}
	if len(v.problems) > 0 {
		return &ValidationError{Problems: v.problems}
	}
	return nil
}

// nodeTypes lists the node types for messages, the media kinds last.
var nodeTypes = func() string {
	media := mediakind.Names()
	return "input, model, prompt, guardrail, output, " + strings.Join(media[:len(media)-1], ", ") + " or " + media[len(media)-1]
}()

// generation checks a generation node: its text template, no field of the
// other text kind, and its settings by the checks given.
func (v *validator) generation(n *Node, checks []GenerationCheck) {
	field, t := n.TextTemplate()
	other, stray := "prompt", n.Prompt
	if field == "prompt" {
		other, stray = "text", n.Text
	}
	if stray != "" {
		v.addf(n.ID, other, "a %s node takes %s, not %s", n.Type, field, other)
	}
	if t == "" {
		v.addf(n.ID, field, "a %s node needs a %s", n.Type, field)
	} else {
		v.template(n, field, t)
	}
	if n.Seconds < 0 {
		v.addf(n.ID, "seconds", "seconds must be positive")
	}
	for _, check := range checks {
		v.problems = append(v.problems, check(n)...)
	}
}

func (v *validator) edges(ids map[string]int) {
	seen := map[Edge]bool{}
	for i, e := range v.g.Edges {
		if ids[e.From] == 0 {
			v.addf("", "edges", "edge %d: \"from\" node %q does not exist", i+1, e.From)
		}
		if ids[e.To] == 0 {
			v.addf("", "edges", "edge %d: \"to\" node %q does not exist", i+1, e.To)
		}
		if e.From == e.To && e.From != "" {
			v.addf(e.From, "edges", "edge %d connects the node to itself", i+1)
		}
		if seen[e] {
			v.addf("", "edges", "edge %d: %s → %s is listed twice", i+1, e.From, e.To)
		}
		seen[e] = true
	}
}

// cycles reports each cycle once, naming its nodes in order.
func (v *validator) cycles(ids map[string]int) {
	const (
		white = iota
		grey
		black
	)
	color := map[string]int{}
	var stack []string
	reported := map[string]bool{}
	var visit func(id string)
	visit = func(id string) {
		color[id] = grey
		stack = append(stack, id)
		for _, e := range v.g.Edges {
			if e.From != id || ids[e.To] == 0 || e.To == e.From {
				continue
			}
			switch color[e.To] {
			case white:
				visit(e.To)
			case grey:
				start := 0
				for i, s := range stack {
					if s == e.To {
						start = i
					}
				}
				cycle := append(append([]string{}, stack[start:]...), e.To)
				if !reported[e.To] {
					reported[e.To] = true
					v.addf("", "edges", "cycle: %s", strings.Join(cycle, " → "))
				}
			}
		}
		stack = stack[:len(stack)-1]
		color[id] = black
	}
	for _, n := range v.g.Nodes {
		if color[n.ID] == white && n.ID != "" {
			visit(n.ID)
		}
	}
}

func (v *validator) key(n *Node, seen map[string]bool, kind string) {
	switch {
	case n.Key == "":
		v.addf(n.ID, "key", "an %s node needs a key", kind)
	case !keyRE.MatchString(n.Key):
		v.addf(n.ID, "key", "key %q must be a letter or _ followed by up to 63 letters, digits or _", n.Key)
	case seen[n.Key]:
		v.addf(n.ID, "key", "%s key %q is used by more than one %s node", kind, n.Key, kind)
	}
	seen[n.Key] = true
}

// source checks that a field naming another node names a direct upstream.
func (v *validator) source(n *Node, field, id string) {
	if id == "" {
		v.addf(n.ID, field, "%s is required", field)
		return
	}
	if _, ok := v.g.Node(id); !ok {
		v.addf(n.ID, field, "%s names node %q, which does not exist", field, id)
		return
	}
	if !v.hasEdge(id, n.ID) {
		v.addf(n.ID, field, "%s names node %q but there is no edge from %q to %q", field, id, id, n.ID)
	}
}

func (v *validator) hasEdge(from, to string) bool {
	for _, e := range v.g.Edges {
		if e.From == from && e.To == to {
			return true
		}
	}
	return false
}

// template checks syntax and that every placeholder has a source: a node
// with an edge into this one.
func (v *validator) template(n *Node, field, t string) {
	if len(t) > MaxTemplateChars {
		v.addf(n.ID, field, "%s is longer than %d characters", field, MaxTemplateChars)
		return
	}
	refs, err := TemplateRefs(t)
	if err != nil {
		v.addf(n.ID, field, "%s: %v", field, err)
		return
	}
	for _, r := range refs {
		if _, ok := v.g.Node(r); !ok {
			v.addf(n.ID, field, "template variable {{%s}} has no source: no node %q exists", r, r)
		} else if !v.hasEdge(r, n.ID) {
			v.addf(n.ID, field, "template variable {{%s}} has no source: add an edge from %q to %q", r, r, n.ID)
		}
	}
}

func (v *validator) prompt(n *Node) {
	if n.Transform == "" {
		if n.Template == "" {
			v.addf(n.ID, "template", "a prompt node needs a template or a transform")
			return
		}
		v.template(n, "template", n.Template)
		return
	}
	if !transforms[n.Transform] {
		v.addf(n.ID, "transform", "unknown transform %q (json, upper, lower, trim)", n.Transform)
	}
	if n.Template != "" {
		v.addf(n.ID, "template", "a prompt node has either a template or a transform, not both")
	}
	v.source(n, "source", n.Source)
	if n.Transform == "json" {
		if _, err := parsePath(normalisePath(n.Path)); err != nil || n.Path == "" {
			v.addf(n.ID, "path", "the json transform needs a path such as a.b[0] (%v)", err)
		}
	}
}

func (v *validator) model(n *Node, knownModel func(string) bool) {
	switch {
	case n.Model == "":
		v.addf(n.ID, "model", "a model node needs a model")
	case knownModel != nil && !knownModel(n.Model):
		v.addf(n.ID, "model", "unknown model %q", n.Model)
	}
	if n.Prompt == "" {
		v.addf(n.ID, "prompt", "a model node needs a prompt")
	} else {
		v.template(n, "prompt", n.Prompt)
	}
	if n.System != "" {
		v.template(n, "system", n.System)
	}
	if n.MaxTokens < 0 || n.MaxTokens > 100_000 {
		v.addf(n.ID, "maxTokens", "maxTokens must be 0 (default) to 100000")
	}
	if n.Temperature < 0 || n.Temperature > 2 {
		v.addf(n.ID, "temperature", "temperature must be 0 to 2")
	}
}

func (v *validator) guardrail(n *Node) {
	v.source(n, "input", n.Input)
	if len(n.Rules) == 0 {
		v.addf(n.ID, "rules", "a guardrail needs at least one rule")
	}
	for i, r := range n.Rules {
		where := fmt.Sprintf("rules[%d]", i)
		switch r.Kind {
		case "maxLength", "minLength":
			if r.Value < 0 {
				v.addf(n.ID, where, "%s needs a value of 0 or more", r.Kind)
			}
		case "regex":
			if _, err := regexp.Compile(r.Pattern); err != nil || r.Pattern == "" {
				v.addf(n.ID, where, "regex needs a valid pattern: %v", err)
			}
		case "deny":
			if len(r.Patterns) == 0 {
				v.addf(n.ID, where, "deny needs patterns")
			}
			for _, p := range r.Patterns {
				if _, err := regexp.Compile(p); err != nil {
					v.addf(n.ID, where, "deny pattern %q is not a valid regular expression: %v", p, err)
				}
			}
		case "pii":
		case "requiredFields":
			if len(r.Fields) == 0 {
				v.addf(n.ID, where, "requiredFields needs fields")
			}
		default:
			v.addf(n.ID, where, "unknown rule kind %q (maxLength, minLength, regex, deny, pii, requiredFields)", r.Kind)
		}
	}
	switch n.Action {
	case ActionBlock:
	case ActionFallback:
		if n.Fallback == "" {
			v.addf(n.ID, "fallback", "action fallback needs a fallback text")
		}
	default:
		v.addf(n.ID, "action", "action must be block or fallback, got %q", n.Action)
	}
}
