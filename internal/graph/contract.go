package graph

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
)

// InputSpec is one input key of the contract.
type InputSpec struct {
	Key         string
	Required    bool
	Description string
}

// Contract is what a caller sends and gets back: derived from the input and
// output nodes, in graph order.
type Contract struct {
	Inputs  []InputSpec
	Outputs []string
}

// Contract derives the graph's contract.
func (g *Graph) Contract() Contract {
	var c Contract
	for _, n := range g.Nodes {
		switch n.Type {
		case KindInput:
			c.Inputs = append(c.Inputs, InputSpec{Key: n.Key, Required: n.IsRequired(), Description: n.Description})
		case KindOutput:
			c.Outputs = append(c.Outputs, n.Key)
		}
	}
	return c
}

// ValidateInputs checks a caller's inputs against the contract: every
// required key must be present (the error names all missing keys); keys
// the contract does not know are allowed and ignored. Values become
// strings: strings as they are, anything else as compact JSON.
func ValidateInputs(c Contract, inputs map[string]any) (map[string]string, error) {
	out := map[string]string{}
	var missing []string
	for _, in := range c.Inputs {
		v, ok := inputs[in.Key]
		if !ok || v == nil {
			if in.Required {
				missing = append(missing, in.Key)
			}
			continue
		}
		if s, ok := v.(string); ok {
			out[in.Key] = s
			continue
		}
		b, err := json.Marshal(v)
		if err != nil {
			return nil, fmt.Errorf("input %q cannot be encoded: %v", in.Key, err)
		}
		out[in.Key] = string(b)
	}
	for k, v := range out {
		if len(v) > MaxNodeBytes {
			return nil, fmt.Errorf("input %q is %d KiB, over the %d KiB limit per value", k, len(v)>>10, MaxNodeBytes>>10)
		}
	}
	if len(missing) > 0 {
		sort.Strings(missing)
		word := "input"
		if len(missing) > 1 {
			word = "inputs"
		}
		return nil, fmt.Errorf("missing required %s: %s", word, strings.Join(missing, ", "))
	}
	return out, nil
}
