package graph

import (
	"fmt"
	"strings"

	"conduit/internal/mediakind"
)

// Transforms a prompt node may apply to its source instead of a template.
var transforms = map[string]bool{"json": true, "upper": true, "lower": true, "trim": true}

// TransformValue computes a prompt node's value: its template rendered, or its
// transform applied to the source node's value.
func (n *Node) TransformValue(values map[string]string) (string, error) {
	if n.Transform == "" {
		return RenderTemplate(n.Template, values)
	}
	v, ok := values[n.Source]
	if !ok {
		return "", fmt.Errorf("no value for source %q", n.Source)
	}
	switch n.Transform {
	case "upper":
		return strings.ToUpper(v), nil
	case "lower":
		return strings.ToLower(v), nil
	case "trim":
		return strings.TrimSpace(v), nil
	case "json":
		path, err := parsePath(normalisePath(n.Path))
		if err != nil {
			return "", err
		}
		return extract(v, path)
	}
	return "", fmt.Errorf("unknown transform %q", n.Transform)
}

// normalisePath lets "a.b[0]" be written without the leading dot.
func normalisePath(p string) string {
	if p == "" || p[0] == '.' || p[0] == '[' {
		return p
	}
	return "." + p
}

// ModelRequest is what a model node asks of its model.
type ModelRequest struct {
	Model       string
	System      string
	Prompt      string
	MaxTokens   int
	Temperature float64
}

// ModelRequest renders a model node's prompt and system text.
func (n *Node) ModelRequest(values map[string]string) (ModelRequest, error) {
	prompt, err := RenderTemplate(n.Prompt, values)
	if err != nil {
		return ModelRequest{}, err
	}
	system, err := RenderTemplate(n.System, values)
	if err != nil {
		return ModelRequest{}, err
	}
	return ModelRequest{Model: n.Model, System: system, Prompt: prompt, MaxTokens: n.MaxTokens, Temperature: n.Temperature}, nil
}

// OutputValue is an output node's value: its source node's value.
func (n *Node) OutputValue(values map[string]string) string { return values[n.From] }

// GenerationRequest is what a generation node asks its renderer for.
type GenerationRequest struct {
	Kind        string
	Model       string
	Voice       string
	Seconds     int
	AspectRatio string
	// Text is the rendered template: what to say (speech) or the
	// description (music, video).
	Text string
}

// TextTemplate is a generation node's template: its text (speech) or its
// prompt (music, video).
func (n *Node) TextTemplate() (field, template string) {
	if field = mediakind.TextField(n.Type); field == "text" {
		return field, n.Text
	}
	return field, n.Prompt
}

// GenerationRequest renders a generation node's text.
func (n *Node) GenerationRequest(values map[string]string) (GenerationRequest, error) {
	_, t := n.TextTemplate()
	text, err := RenderTemplate(t, values)
	if err != nil {
		return GenerationRequest{}, err
	}
	return GenerationRequest{Kind: n.Type, Model: n.Model, Voice: n.Voice, Seconds: n.Seconds, AspectRatio: n.AspectRatio, Text: text}, nil
}
