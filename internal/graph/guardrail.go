package graph

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"unicode/utf8"

	"conduit/internal/redact"
)

// Rule is one check a guardrail applies to its input value.
type Rule struct {
	// Kind: maxLength, minLength, regex (must match), deny (no pattern may
	// match), pii (no personal data), requiredFields (a JSON object with
	// these non-empty fields).
	Kind     string   `json:"kind"`
	Value    int      `json:"value,omitempty"`
	Pattern  string   `json:"pattern,omitempty"`
	Patterns []string `json:"patterns,omitempty"`
	Fields   []string `json:"fields,omitempty"`
}

// Guardrail actions.
const (
	ActionBlock    = "block"
	ActionFallback = "fallback"
)

// GuardrailResult is a guardrail's verdict.
type GuardrailResult struct {
	Passed     bool
	Value      string // the input when it passed; the fallback when replaced
	Violations []string
	Blocked    bool
}

// EvalOptions are the choices a run's recorded history fixes: a run
// started before a change evaluates as it did then (workflows/names.go).
type EvalOptions struct {
	// LegacyPII: the pii rule uses the guardrail's own first patterns
	// (email, SSN, card, phone) instead of internal/redact.
	LegacyPII bool
	// PIIRules is the detector's rule set for the pii rule
	// (redact.Options.Rules; 0: the newest).
	PIIRules int
}

// CheckGuardrail applies every rule to value; on a violation the node
// either blocks the run or passes its fallback on.
func (n *Node) CheckGuardrail(value string) (GuardrailResult, error) {
	return n.CheckGuardrailWith(value, EvalOptions{})
}

// HasRule reports whether the guardrail has a rule of kind.
func (n *Node) HasRule(kind string) bool {
	for _, r := range n.Rules {
		if r.Kind == kind {
			return true
		}
	}
	return false
}

// CheckGuardrailWith is CheckGuardrail under a run's options.
func (n *Node) CheckGuardrailWith(value string, o EvalOptions) (GuardrailResult, error) {
	var violations []string
	for i, r := range n.Rules {
		v, err := r.check(value, o)
		if err != nil {
			return GuardrailResult{}, fmt.Errorf("rule %d (%s): %v", i+1, r.Kind, err)
		}
		if v != "" {
			violations = append(violations, v)
		}
	}
	if len(violations) == 0 {
		return GuardrailResult{Passed: true, Value: value}, nil
	}
	if n.Action == ActionFallback {
		return GuardrailResult{Value: n.Fallback, Violations: violations}, nil
	}
	return GuardrailResult{Violations: violations, Blocked: true}, nil
}

// check returns a violation message, or "" when value passes.
func (r Rule) check(value string, o EvalOptions) (string, error) {
	switch r.Kind {
	case "maxLength":
		if n := utf8.RuneCountInString(value); n > r.Value {
			return fmt.Sprintf("maxLength: %d characters exceed the limit of %d", n, r.Value), nil
		}
	case "minLength":
		if n := utf8.RuneCountInString(value); n < r.Value {
			return fmt.Sprintf("minLength: %d characters are fewer than %d", n, r.Value), nil
		}
	case "regex":
		re, err := regexp.Compile(r.Pattern)
		if err != nil {
			return "", err
		}
		if !re.MatchString(value) {
			return fmt.Sprintf("regex: value does not match %s", r.Pattern), nil
		}
	case "deny":
		for _, p := range r.Patterns {
			re, err := regexp.Compile(p)
			if err != nil {
				return "", err
			}
			if re.MatchString(value) {
				return fmt.Sprintf("deny: value matches the denied pattern %s", p), nil
			}
		}
	case "pii":
		var found []string
		if o.LegacyPII {
			found = legacyDetectPII(value)
		} else {
			var err error
			// a detection error fails the rule, and so the run: nothing
			// passes unchecked
			if found, err = DetectPIIWith(value, o.PIIRules); err != nil {
				return "", err
			}
		}
		if len(found) > 0 {
			return "pii: value contains " + strings.Join(found, ", "), nil
		}
	case "requiredFields":
		var obj map[string]any
		if err := json.Unmarshal([]byte(value), &obj); err != nil || obj == nil {
			return "requiredFields: value is not a JSON object", nil
		}
		var missing []string
		for _, f := range r.Fields {
			if v, ok := obj[f]; !ok || v == nil || v == "" {
				missing = append(missing, f)
			}
		}
		if len(missing) > 0 {
			return "requiredFields: missing " + strings.Join(missing, ", "), nil
		}
	default:
		return "", fmt.Errorf("unknown rule kind %q", r.Kind)
	}
	return "", nil
}

var (
	emailRE = regexp.MustCompile(`[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,}`)
	phoneRE = regexp.MustCompile(`(?:\+?\d{1,3}[\s.-]?)?(?:\(\d{3}\)|\d{3})[\s.-]?\d{3}[\s.-]?\d{4}\b`)
	ssnRE   = regexp.MustCompile(`\b\d{3}-\d{2}-\d{4}\b`)
	cardRE  = regexp.MustCompile(`\b(?:\d[ -]?){13,19}\b`)
)

// piiKinds says what each type is, in the order messages list them (the
// first four as the rule has always named them). A date or a URL alone
// is not personal data; the rule leaves them out.
var piiKinds = []struct {
	t    redact.Type
	what string
}{
	{redact.Email, "an email address"},
	{redact.SSN, "a US social security number"},
	{redact.Card, "a credit card number"},
	{redact.Phone, "a phone number"},
	{redact.Name, "a person's name"},
	{redact.Address, "a street address"},
	{redact.DOB, "a date of birth"},
	{redact.MRN, "a medical record number"},
	{redact.Account, "a bank account number"},
	{redact.Secret, "a credential"},
}

var piiTypes = func() []redact.Type {
	out := make([]redact.Type, len(piiKinds))
	for i, k := range piiKinds {
		out[i] = k.t
	}
	return out
}()

// DetectPII names the kinds of personal data found in s, with the
// house's one detector (internal/redact: validated cards, SSNs, phones,
// names, addresses, …). Pure: no I/O, so a workflow may call it.
func DetectPII(s string) ([]string, error) { return DetectPIIWith(s, 0) }

// DetectPIIWith is DetectPII with the detector's rule set of a recorded run
// (EvalOptions.PIIRules).
func DetectPIIWith(s string, rules int) ([]string, error) {
	ents, err := redact.Detect(s, redact.Options{Types: piiTypes, Rules: rules})
	if err != nil {
		return nil, err
	}
	var found []string
	for _, k := range piiKinds {
		for _, e := range ents {
			if e.Type == k.t {
				found = append(found, k.what)
				break
			}
		}
	}
	return found, nil
}

// legacyDetectPII is the rule as it was before internal/redact, kept for
// runs whose history recorded it (EvalOptions.LegacyPII).
func legacyDetectPII(s string) []string {
	var found []string
	if emailRE.MatchString(s) {
		found = append(found, "an email address")
	}
	if ssnRE.MatchString(s) {
		found = append(found, "a US social security number")
	}
	card := false
	for _, m := range cardRE.FindAllString(s, -1) {
		if luhn(m) {
			card = true
			break
		}
	}
	if card {
		found = append(found, "a credit card number")
	}
	if phoneRE.MatchString(ssnRE.ReplaceAllString(s, "")) && !card {
		found = append(found, "a phone number")
	}
	return found
}

func luhn(s string) bool {
	var digits []int
	for _, r := range s {
		if r >= '0' && r <= '9' {
			digits = append(digits, int(r-'0'))
		}
	}
	if len(digits) < 13 || len(digits) > 19 {
		return false
	}
	sum := 0
	for i := len(digits) - 1; i >= 0; i-- {
		d := digits[i]
		if (len(digits)-1-i)%2 == 1 {
			d *= 2
			if d > 9 {
				d -= 9
			}
		}
		sum += d
	}
	return sum%10 == 0
}
