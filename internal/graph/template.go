package graph

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// A template is text with {{ref}} placeholders. ref is an upstream node id,
// optionally followed by a path into that node's JSON value:
// {{llm.answer}}, {{data.items[0].name}}. A value that is a JSON string is
// inserted as its text; any other JSON value as compact JSON.

type placeholder struct {
	start, end int // byte offsets of "{{" and just after "}}"
	root       string
	path       []pathStep
}

type pathStep struct {
	field string
	index int // -1: a field step
}

// parseTemplate finds every placeholder, or reports the first syntax error.
func parseTemplate(t string) ([]placeholder, error) {
	var out []placeholder
	for i := 0; i < len(t); {
		open := strings.Index(t[i:], "{{")
		if open < 0 {
			if strings.Contains(t[i:], "}}") {
				return nil, fmt.Errorf("unmatched }} at character %d", i+strings.Index(t[i:], "}}"))
			}
			return out, nil
		}
		open += i
		if c := strings.Index(t[i:open], "}}"); c >= 0 {
			return nil, fmt.Errorf("unmatched }} at character %d", i+c)
		}
		closeAt := strings.Index(t[open+2:], "}}")
		if closeAt < 0 {
			return nil, fmt.Errorf("unclosed {{ at character %d", open)
		}
		inner := strings.TrimSpace(t[open+2 : open+2+closeAt])
		root, path, err := parseRef(inner)
		if err != nil {
			return nil, fmt.Errorf("placeholder {{%s}} at character %d: %v", inner, open, err)
		}
		end := open + 2 + closeAt + 2
		out = append(out, placeholder{start: open, end: end, root: root, path: path})
		i = end
	}
	return out, nil
}

func parseRef(s string) (string, []pathStep, error) {
	if s == "" {
		return "", nil, fmt.Errorf("empty reference")
	}
	rootEnd := strings.IndexAny(s, ".[")
	root := s
	rest := ""
	if rootEnd >= 0 {
		root, rest = s[:rootEnd], s[rootEnd:]
	}
	if !validID(root) {
		return "", nil, fmt.Errorf("%q is not a node id", root)
	}
	path, err := parsePath(rest)
	return root, path, err
}

// parsePath reads ".a.b[0].c"-style steps.
func parsePath(s string) ([]pathStep, error) {
	var steps []pathStep
	for s != "" {
		switch s[0] {
		case '.':
			end := strings.IndexAny(s[1:], ".[")
			name := s[1:]
			if end >= 0 {
				name = s[1 : end+1]
			}
			if name == "" {
				return nil, fmt.Errorf("empty field name in path")
			}
			steps = append(steps, pathStep{field: name, index: -1})
			s = s[1+len(name):]
		case '[':
			end := strings.IndexByte(s, ']')
			if end < 0 {
				return nil, fmt.Errorf("unclosed [ in path")
			}
			n, err := strconv.Atoi(s[1:end])
			if err != nil || n < 0 {
				return nil, fmt.Errorf("index %q is not a non-negative integer", s[1:end])
			}
			steps = append(steps, pathStep{index: n})
			s = s[end+1:]
		default:
			return nil, fmt.Errorf("unexpected %q in path", s[0])
		}
	}
	return steps, nil
}

// TemplateRefs lists the node ids a template refers to, in order, once
// each.
func TemplateRefs(t string) ([]string, error) {
	phs, err := parseTemplate(t)
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	var out []string
	for _, p := range phs {
		if !seen[p.root] {
			seen[p.root] = true
			out = append(out, p.root)
		}
	}
	return out, nil
}

// Size limits of a run's values. A run's values travel in its workflow's
// history (activity inputs, the result, the status query), whose payloads
// Temporal refuses past 2 MB; these limits keep every accepted input far
// from that, so no input size or template (say {{q}}{{q}}{{q}}, or a chain
// of nodes each doubling its input) can wedge a run. Rendering stops as
// soon as a node's value would pass its limit.
const (
	// MaxNodeBytes bounds one node's value.
	MaxNodeBytes = 512 << 10
	// MaxRunBytes bounds the sum of every node's value in one run.
	MaxRunBytes = 3 << 19 // 1.5 MiB
)

// ErrTooLarge wraps a value over MaxNodeBytes.
var ErrTooLarge = fmt.Errorf("over the %d KiB limit per node", MaxNodeBytes>>10)

// RenderTemplate fills every placeholder from values (node id → value),
// refusing a result over MaxNodeBytes.
func RenderTemplate(t string, values map[string]string) (string, error) {
	phs, err := parseTemplate(t)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	last := 0
	for _, p := range phs {
		b.WriteString(t[last:p.start])
		v, ok := values[p.root]
		if !ok {
			return "", fmt.Errorf("no value for {{%s}}", p.root)
		}
		if len(p.path) > 0 {
			if v, err = extract(v, p.path); err != nil {
				return "", fmt.Errorf("{{%s…}}: %v", p.root, err)
			}
		}
		if b.Len()+p.start-last+len(v) > MaxNodeBytes {
			return "", fmt.Errorf("the rendered template would be %w", ErrTooLarge)
		}
		b.WriteString(v)
		last = p.end
	}
	if b.Len()+len(t)-last > MaxNodeBytes {
		return "", fmt.Errorf("the rendered template would be %w", ErrTooLarge)
	}
	b.WriteString(t[last:])
	return b.String(), nil
}

// extract follows path into the JSON document v.
func extract(v string, path []pathStep) (string, error) {
	var doc any
	if err := json.Unmarshal([]byte(v), &doc); err != nil {
		return "", fmt.Errorf("value is not JSON, so it has no fields")
	}
	for _, st := range path {
		if st.index < 0 {
			obj, ok := doc.(map[string]any)
			if !ok {
				return "", fmt.Errorf("field %q of a non-object", st.field)
			}
			if doc, ok = obj[st.field]; !ok {
				return "", fmt.Errorf("no field %q", st.field)
			}
			continue
		}
		arr, ok := doc.([]any)
		if !ok {
			return "", fmt.Errorf("index [%d] of a non-array", st.index)
		}
		if st.index >= len(arr) {
			return "", fmt.Errorf("index [%d] out of range (length %d)", st.index, len(arr))
		}
		doc = arr[st.index]
	}
	if s, ok := doc.(string); ok {
		return s, nil
	}
	b, err := json.Marshal(doc)
	return string(b), err
}
