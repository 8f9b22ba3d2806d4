// Package graph is the pure model of a pipeline graph: parsing,
// validation with precise messages, the contract (input and output keys),
// dependency layers and the walk over them that runs and estimates share
// (Walk, Evaluate), the semantics of every node kind except the model call
// and the render themselves (side effects done by activities), and the
// shape chat completions need (ChatShape). Everything here is
// deterministic, because workflow code calls it.
package graph

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"conduit/internal/mediakind"
)

// Node kinds.
const (
	KindInput     = "input"
	KindModel     = "model"
	KindPrompt    = "prompt"
	KindGuardrail = "guardrail"
	KindOutput    = "output"
	// Generation nodes render a file with a pay-per-call model; their
	// type is a media kind's name (internal/mediakind) and their value is
	// the URL of the item they add to the account's media library.
	KindSpeech = mediakind.Speech
	KindMusic  = mediakind.Music
	KindVideo  = mediakind.Video
)

// IsGeneration says whether a node type renders a file.
func IsGeneration(typ string) bool { return mediakind.Is(typ) }

// Limits on a graph, so a hostile draft cannot exhaust the service.
const (
	MaxNodes         = 200
	MaxEdges         = 1000
	MaxTemplateChars = 20_000
	MaxGraphBytes    = 1 << 20
)

// Graph is a pipeline: nodes and the edges between them.
type Graph struct {
	Nodes []Node `json:"nodes"`
	Edges []Edge `json:"edges"`
}

// Edge says To depends on From.
type Edge struct {
	From string `json:"from"`
	To   string `json:"to"`
}

// Node is one step. Which fields apply depends on Type (docs/pipelines.md).
type Node struct {
	ID   string `json:"id"`
	Type string `json:"type"`

	// input and output
	Key         string `json:"key,omitempty"`
	Required    *bool  `json:"required,omitempty"`
	Description string `json:"description,omitempty"`
	// output: the node whose value is the output
	From string `json:"from,omitempty"`

	// prompt (transform)
	Template  string `json:"template,omitempty"`
	Transform string `json:"transform,omitempty"`
	Source    string `json:"source,omitempty"`
	Path      string `json:"path,omitempty"`

	// model (and the generation nodes' model)
	Model       string  `json:"model,omitempty"`
	System      string  `json:"system,omitempty"`
	Prompt      string  `json:"prompt,omitempty"`
	MaxTokens   int     `json:"maxTokens,omitempty"`
	Temperature float64 `json:"temperature,omitempty"`

	// guardrail
	Input    string `json:"input,omitempty"`
	Rules    []Rule `json:"rules,omitempty"`
	Action   string `json:"action,omitempty"`
	Fallback string `json:"fallback,omitempty"`

	// generation: speech says Text (a template) in Voice; music and video
	// render Prompt (a template) for Seconds, video at AspectRatio. Model
	// is a pay-per-call model; every setting but the text has the menu's
	// default.
	Text        string `json:"text,omitempty"`
	Voice       string `json:"voice,omitempty"`
	Seconds     int    `json:"seconds,omitempty"`
	AspectRatio string `json:"aspectRatio,omitempty"`
}

// Parse reads a graph strictly: unknown fields and trailing data are
// errors, and the size limits hold.
func Parse(data []byte) (*Graph, error) {
	if len(data) > MaxGraphBytes {
		return nil, fmt.Errorf("graph is larger than %d bytes", MaxGraphBytes)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var g Graph
	if err := dec.Decode(&g); err != nil {
		return nil, describeJSONError(err)
	}
	if dec.More() {
		return nil, errors.New("graph must be a single JSON object")
	}
	if len(g.Nodes) > MaxNodes {
		return nil, fmt.Errorf("graph has %d nodes; at most %d are allowed", len(g.Nodes), MaxNodes)
	}
	if len(g.Edges) > MaxEdges {
		return nil, fmt.Errorf("graph has %d edges; at most %d are allowed", len(g.Edges), MaxEdges)
	}
	if g.Nodes == nil {
		g.Nodes = []Node{}
	}
	if g.Edges == nil {
		g.Edges = []Edge{}
	}
	return &g, nil
}

func describeJSONError(err error) error {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syn):
		return fmt.Errorf("graph is not valid JSON (at byte %d)", syn.Offset)
	case errors.As(err, &typ):
		if typ.Field != "" {
			return fmt.Errorf("graph field %s has the wrong type", typ.Field)
		}
		return errors.New("graph must be a JSON object with nodes and edges")
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		return fmt.Errorf("graph has an unknown field %s", strings.TrimPrefix(err.Error(), "json: unknown field "))
	default:
		return fmt.Errorf("graph is not valid JSON: %v", err)
	}
}

// Node returns the node with id.
func (g *Graph) Node(id string) (*Node, bool) {
	for i := range g.Nodes {
		if g.Nodes[i].ID == id {
			return &g.Nodes[i], true
		}
	}
	return nil, false
}

// Deps are the nodes with an edge into id, in edge order.
func (g *Graph) Deps(id string) []string {
	var out []string
	for _, e := range g.Edges {
		if e.To == id {
			out = append(out, e.From)
		}
	}
	return out
}

// IsRequired: input nodes are required unless they say otherwise.
func (n *Node) IsRequired() bool { return n.Required == nil || *n.Required }

// Servable says whether the graph can take API calls: it needs at least one
// input node and one output node (spec §1.3).
func (g *Graph) Servable() error {
	var in, out bool
	for _, n := range g.Nodes {
		in = in || n.Type == KindInput
		out = out || n.Type == KindOutput
	}
	switch {
	case !in && !out:
		return errors.New("pipeline has no input node and no output node")
	case !in:
		return errors.New("pipeline has no input node")
	case !out:
		return errors.New("pipeline has no output node")
	}
	return nil
}

// Levels orders the nodes in dependency layers: every node of a layer
// depends only on earlier layers, so a layer's nodes can run in parallel.
// Within a layer nodes keep their graph order. A cycle is an error.
func (g *Graph) Levels() ([][]string, error) {
	indeg := make(map[string]int, len(g.Nodes))
	for _, n := range g.Nodes {
		indeg[n.ID] = 0
	}
	for _, e := range g.Edges {
		if _, ok := indeg[e.To]; !ok {
			return nil, fmt.Errorf("edge to unknown node %q", e.To)
		}
		if _, ok := indeg[e.From]; !ok {
			return nil, fmt.Errorf("edge from unknown node %q", e.From)
		}
		indeg[e.To]++
	}
	var levels [][]string
	placed := 0
	done := map[string]bool{}
	for placed < len(g.Nodes) {
		var level []string
		for _, n := range g.Nodes {
			if !done[n.ID] && indeg[n.ID] == 0 {
				level = append(level, n.ID)
			}
		}
		if len(level) == 0 {
			return nil, errors.New("graph has a cycle")
		}
		for _, id := range level {
			done[id] = true
			for _, e := range g.Edges {
				if e.From == id {
					indeg[e.To]--
				}
			}
		}
		placed += len(level)
		levels = append(levels, level)
	}
	return levels, nil
}
