package graph

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"unicode/utf8"
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

// CheckGuardrail applies every rule to value; on a violation the node
// either blocks the run or passes its fallback on.
func (n *Node) CheckGuardrail(value string) (GuardrailResult, error) {
	var violations []string
	for i, r := range n.Rules {
		v, err := r.check(value)
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
func (r Rule) check(value string) (string, error) {
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
		if found := DetectPII(value); len(found) > 0 {
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

// DetectPII names the kinds of personal data found in s: email, phone,
// ssn, credit card (Luhn-checked, so order numbers do not count).
func DetectPII(s string) []string {
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
