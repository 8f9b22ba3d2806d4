package redact

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"sort"
	"strings"

	"conduit/internal/errs"
)

// RecognizerVersion names the detector's rule set; it changes when a
// recognizer's behaviour does.
const RecognizerVersion = "conduit-redact/2"

// MaxRunText bounds the text of one /api/redact/run call (bytes).
const MaxRunText = 256 << 10

// RunRequest is POST /api/redact/run's body.
type RunRequest struct {
	Text string `json:"text"`
	// Entities narrows the types detected (all when empty).
	Entities []string   `json:"entities,omitempty"`
	Policy   *RunPolicy `json:"policy,omitempty"`
	// IncludeValues echoes each entity's original value; the caller's key
	// must hold pii:read as well as redact:run.
	IncludeValues bool `json:"includeValues,omitempty"`
}

// RunPolicy is the request's policy: types, an operator per type
// (placeholder, mask, hash, block), MRN formats and a score floor.
type RunPolicy struct {
	Entities   []string          `json:"entities,omitempty"`
	Operators  map[string]string `json:"operators,omitempty"`
	MRNFormats []string          `json:"mrnFormats,omitempty"`
	MinScore   float64           `json:"minScore,omitempty"`
}

// RunEntity is one replaced entity. Start and End are code points of the
// submitted text.
type RunEntity struct {
	Type        Type     `json:"type"`
	Start       int      `json:"start"`
	End         int      `json:"end"`
	Score       float64  `json:"score"`
	Placeholder string   `json:"placeholder"`
	Operator    Operator `json:"operator"`
	Recognizer  string   `json:"recognizer"`
	Value       string   `json:"value,omitempty"`
}

// RunResult is the answer.
type RunResult struct {
	Redacted          string       `json:"redacted"`
	Entities          []RunEntity  `json:"entities"`
	Counts            map[Type]int `json:"counts"`
	RecognizerVersion string       `json:"recognizerVersion"`
}

// Caller is who asks: the account (which keys the hash operator) and
// whether the credential may see original values (pii:read).
type Caller struct {
	AccountID     string
	CanReadValues bool
}

// Run redacts one text for /api/redact/run. Refusals are *errs.Error:
// 400 for a bad policy, 403 for includeValues without pii:read, 413 for
// an oversized text, 422 when the policy blocks a type found — then, and
// only then, the result comes with the error, holding the counts by type
// alone (for the audit log; no text, no entity). Detection failures fail
// closed: no text comes back.
func Run(req RunRequest, who Caller) (*RunResult, error) {
	if req.Text == "" {
		return nil, errs.Invalidf("text is required")
	}
	if len(req.Text) > MaxRunText {
		return nil, errs.New(errs.TooLarge, "text is %d bytes; /api/redact/run accepts at most %d", len(req.Text), MaxRunText)
	}
	if req.IncludeValues && !who.CanReadValues {
		e := errs.Forbiddenf("includeValues needs the pii:read permission as well as redact:run")
		e.Scope = "pii:read"
		return nil, e
	}
	pol, err := req.policy()
	if err != nil {
		return nil, err
	}
	pol.HashKey = hashKey(who.AccountID)
	ents, err := Detect(req.Text, Options{Types: pol.Types, MRNFormats: pol.MRNFormats, MinScore: pol.MinScore})
	if err != nil {
		return nil, fmt.Errorf("redact: %w", err)
	}
	red, reps, err := Apply(req.Text, ents, pol, nil)
	var blocked *BlockedError
	switch {
	case errors.As(err, &blocked):
		counts := map[Type]int{}
		for _, e := range ents {
			counts[e.Type]++
		}
		return &RunResult{Counts: counts, RecognizerVersion: RecognizerVersion},
			&errs.Error{Kind: errs.Unprocessable, Code: "PII_BLOCKED", Msg: blocked.Error(), Extra: map[string]any{"blockedTypes": blocked.Types}}
	case err != nil:
		return nil, fmt.Errorf("redact: %w", err)
	}
	out := &RunResult{Redacted: red, Entities: make([]RunEntity, 0, len(reps)), Counts: map[Type]int{}, RecognizerVersion: RecognizerVersion}
	for _, r := range reps {
		e := RunEntity{Type: r.Type, Start: r.Start, End: r.End, Score: r.Score, Placeholder: r.Replacement,
			Operator: r.Operator, Recognizer: r.Recognizer}
		if req.IncludeValues {
			e.Value = r.Text
		}
		out.Entities = append(out.Entities, e)
		out.Counts[r.Type]++
	}
	return out, nil
}

func (req RunRequest) policy() (Policy, error) {
	var pol Policy
	names := req.Entities
	if req.Policy != nil {
		if len(names) > 0 && len(req.Policy.Entities) > 0 {
			return pol, errs.Invalidf("give entities or policy.entities, not both")
		}
		if len(req.Policy.Entities) > 0 {
			names = req.Policy.Entities
		}
	}
	types, err := parseTypes(names, "entities")
	if err != nil {
		return pol, err
	}
	pol.Types = types
	if req.Policy == nil {
		return pol, nil
	}
	p := req.Policy
	if p.MinScore < 0 || p.MinScore > 1 {
		return pol, errs.Invalidf("policy.minScore must be between 0 and 1")
	}
	pol.MinScore = p.MinScore
	if len(p.MRNFormats) > 8 {
		return pol, errs.Invalidf("policy.mrnFormats takes at most 8 formats")
	}
	for _, f := range p.MRNFormats {
		if len(f) > 200 {
			return pol, errs.Invalidf("policy.mrnFormats: a format is at most 200 characters")
		}
	}
	if err := CompileMRNFormats(p.MRNFormats); err != nil {
		return pol, errs.Invalidf("policy.mrnFormats: %v", err)
	}
	pol.MRNFormats = p.MRNFormats
	if len(p.Operators) > 0 {
		pol.Operators = map[Type]Operator{}
		keys := make([]string, 0, len(p.Operators))
		for k := range p.Operators {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			t, ok := ParseType(k)
			if !ok {
				return pol, errs.Invalidf("policy.operators: unknown entity type %q (known: %s)", k, typeNames())
			}
			op, ok := ParseOperator(p.Operators[k])
			if !ok {
				return pol, errs.Invalidf("policy.operators.%s: unknown operator %q (placeholder, mask, hash, block)", k, p.Operators[k])
			}
			pol.Operators[t] = op
		}
	}
	return pol, nil
}

// ParseTypes reads a list of type names (nil for none given: every type).
func ParseTypes(names []string) ([]Type, error) { return parseTypes(names, "entities") }

func parseTypes(names []string, field string) ([]Type, error) {
	if len(names) == 0 {
		return nil, nil
	}
	out := make([]Type, 0, len(names))
	for _, n := range names {
		t, ok := ParseType(n)
		if !ok {
			return nil, errs.Invalidf("%s: unknown entity type %q (known: %s)", field, n, typeNames())
		}
		if !containsType(out, t) {
			out = append(out, t)
		}
	}
	return out, nil
}

func typeNames() string {
	s := make([]string, len(Types))
	for i, t := range Types {
		s[i] = string(t)
	}
	return strings.Join(s, ", ")
}

// hashKey: the hash operator's key per account, so hashes join within an
// account and not across accounts. It is a pseudonym, not a secret: a
// low-entropy value (a phone number) can be guessed by hashing candidates
// under the same account.
func hashKey(account string) []byte {
	k := sha256.Sum256([]byte("conduit/redact/hash/v1|" + account))
	return k[:]
}
