// Package redactproxy is the redacting chat proxy (docs/redaction-proxies.md):
// the proxies an account configures (/api/proxies), the per-call placeholder
// session that redacts what leaves and restores what comes back, and the
// translation to and from each upstream style, streams included.
package redactproxy

import (
	"fmt"
	"slices"

	"conduit/internal/redact"
)

// Action is what a policy does with a detected value of one type.
type Action string

const (
	// ActPlaceholder replaces the value with [TYPE_n], restored in the answer.
	ActPlaceholder Action = "placeholder"
	// ActMask replaces every character with '*' (not restorable).
	ActMask Action = "mask"
	// ActHash replaces the value with [TYPE_h<12 hex>], a keyed hash stable
	// per account (joins across calls, not restorable).
	ActHash Action = "hash"
	// ActBlock refuses the call: nothing goes upstream.
	ActBlock Action = "block"
)

// Output says what happens to the model's answer.
type Output string

const (
	// OutRestore puts the original values back in place of placeholders.
	OutRestore Output = "restore"
	// OutRedact restores, and also redacts PII the model produced itself.
	OutRedact Output = "redact"
)

// Policy is a proxy's redaction policy.
type Policy struct {
	// Types are the entity types detected; empty means all twelve.
	Types []redact.Type `json:"types"`
	// Actions picks the action per type; a type not named gets placeholder.
	Actions map[redact.Type]Action `json:"actions,omitempty"`
}

// Check validates the policy and returns it normalised (types sorted in
// the spec's order, no duplicates).
func (p Policy) Check() (Policy, error) {
	var out Policy
	for _, t := range p.Types {
		if !slices.Contains(redact.Types, t) {
			return out, fmt.Errorf("policy.types: %q is not an entity type (known: %v)", t, redact.Types)
		}
	}
	for _, t := range redact.Types {
		if slices.Contains(p.Types, t) {
			out.Types = append(out.Types, t)
		}
	}
	if len(out.Types) == 0 {
		out.Types = slices.Clone(redact.Types)
	}
	for t, a := range p.Actions {
		if !slices.Contains(redact.Types, t) {
			return out, fmt.Errorf("policy.actions: %q is not an entity type", t)
		}
		switch a {
		case ActPlaceholder, ActMask, ActHash, ActBlock:
		default:
			return out, fmt.Errorf("policy.actions.%s: %q must be placeholder, mask, hash or block", t, a)
		}
		if a != ActPlaceholder {
			if out.Actions == nil {
				out.Actions = map[redact.Type]Action{}
			}
			out.Actions[t] = a
		}
	}
	return out, nil
}

func (p Policy) action(t redact.Type) Action {
	if a, ok := p.Actions[t]; ok {
		return a
	}
	return ActPlaceholder
}
