package zkpassport

import (
	"bytes"
	"encoding/json"
	"math"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	"conduit/internal/errs"
)

// Query is a request's claim constraints in zkPassport's query language
// (the SDK's QueryBuilder output, the JSON its URL carries in c=): field →
// operator → value, e.g. {"age":{"gte":18},"nationality":{"out":["AFG"]}}.
// Special fields: facematch {"mode"}, sanctions {"strict"?}, bind
// {"user_address"?, "chain"?, "custom_data"?}.
type Query map[string]map[string]any

// Operators.
const (
	OpDisclose = "disclose"
	OpEq       = "eq"
	OpGte      = "gte"
	OpGt       = "gt"
	OpLte      = "lte"
	OpLt       = "lt"
	OpRange    = "range"
	OpIn       = "in"
	OpOut      = "out"
)

type kind int

const (
	kString  kind = iota
	kNumber       // age
	kDate         // birthdate, expiry_date
	kCountry      // nationality, issuing_country
)

// fields are the credential fields and what each takes (§C: disclose for
// the document's data, comparisons for age and the dates, in/out for the
// countries, eq for any).
var fields = map[string]kind{
	"age": kNumber, "birthdate": kDate, "expiry_date": kDate,
	"nationality": kCountry, "issuing_country": kCountry,
	"fullname": kString, "firstname": kString, "lastname": kString,
	"document_number": kString, "document_type": kString, "gender": kString,
}

var specials = []string{"facematch", "sanctions", "bind"}

func allowed(field string, k kind) []string {
	switch k {
	case kNumber:
		return []string{OpEq, OpGte, OpGt, OpLte, OpLt, OpRange}
	case kDate:
		return []string{OpDisclose, OpEq, OpGte, OpGt, OpLte, OpLt, OpRange}
	case kCountry:
		return []string{OpDisclose, OpEq, OpIn, OpOut}
	}
	return []string{OpDisclose, OpEq}
}

var allOps = []string{OpDisclose, OpEq, OpGte, OpGt, OpLte, OpLt, OpRange, OpIn, OpOut}

// countryCode is an ISO 3166-1 alpha-3 code as documents write it (a few
// use '<' padding, e.g. Germany's "D<<").
var countryCode = regexp.MustCompile(`^[A-Z][A-Z<]{2}$`)

// MaxCountries bounds an in/out list (the world has under 300 codes).
const MaxCountries = 300

// MaxBindBytes is the SDK's bound on bound data.
const MaxBindBytes = 500

func fieldNames() string {
	names := make([]string, 0, len(fields)+len(specials))
	for f := range fields {
		names = append(names, f)
	}
	names = append(names, specials...)
	sort.Strings(names)
	return strings.Join(names, ", ")
}

// Validate checks every field and operator: an unknown one, one a field
// does not take, or a malformed value is Invalid and names it.
func (q Query) Validate() error {
	if len(q) == 0 {
		return errs.Invalidf("query must name at least one field (%s)", fieldNames())
	}
	for _, field := range sortedKeys(q) {
		ops := q[field]
		if slices.Contains(specials, field) {
			if err := validateSpecial(field, ops); err != nil {
				return err
			}
			continue
		}
		k, ok := fields[field]
		if !ok {
			return errs.Invalidf("query: unknown field %q (fields: %s)", field, fieldNames())
		}
		if len(ops) == 0 {
			return errs.Invalidf("query.%s: name at least one operator (%s)", field, strings.Join(allowed(field, k), ", "))
		}
		for _, op := range sortedKeys(ops) {
			if !slices.Contains(allOps, op) {
				return errs.Invalidf("query.%s: unknown operator %q (operators: %s)", field, op, strings.Join(allOps, ", "))
			}
			if !slices.Contains(allowed(field, k), op) {
				return errs.Invalidf("query.%s: %s does not take %q (it takes %s)", field, field, op, strings.Join(allowed(field, k), ", "))
			}
			if err := validateValue(field, op, k, ops[op]); err != nil {
				return err
			}
		}
		if err := consistent(field, k, ops); err != nil {
			return err
		}
	}
	return nil
}

func validateValue(field, op string, k kind, v any) error {
	where := "query." + field + "." + op
	switch op {
	case OpDisclose:
		if b, ok := v.(bool); !ok || !b {
			return errs.Invalidf("%s must be true", where)
		}
		return nil
	case OpIn, OpOut:
		list, ok := v.([]any)
		if !ok || len(list) == 0 || len(list) > MaxCountries {
			return errs.Invalidf("%s must be a list of 1 to %d ISO 3166-1 alpha-3 country codes", where, MaxCountries)
		}
		seen := map[string]bool{}
		for _, c := range list {
			s, ok := c.(string)
			if !ok || !countryCode.MatchString(s) {
				return errs.Invalidf("%s: %v is not an ISO 3166-1 alpha-3 country code (e.g. \"FRA\")", where, c)
			}
			if seen[s] {
				return errs.Invalidf("%s lists %s twice", where, s)
			}
			seen[s] = true
		}
		return nil
	case OpRange:
		pair, ok := v.([]any)
		if !ok || len(pair) != 2 {
			return errs.Invalidf("%s must be [start, end] (both inclusive)", where)
		}
		a, err := scalar(where+"[0]", k, pair[0])
		if err != nil {
			return err
		}
		b, err := scalar(where+"[1]", k, pair[1])
		if err != nil {
			return err
		}
		if a > b {
			return errs.Invalidf("%s: start is after end", where)
		}
		return nil
	}
	if k == kCountry && op == OpEq {
		if s, ok := v.(string); !ok || !countryCode.MatchString(s) {
			return errs.Invalidf("%s must be an ISO 3166-1 alpha-3 country code", where)
		}
		return nil
	}
	if k == kString {
		s, ok := v.(string)
		if !ok || s == "" || len(s) > 200 {
			return errs.Invalidf("%s must be a string of 1 to 200 characters", where)
		}
		return nil
	}
	_, err := scalar(where, k, v)
	return err
}

// scalar reads an age (whole years, 0–150) or a date ("2006-01-02" or
// RFC 3339; compared by day) as a number to order.
func scalar(where string, k kind, v any) (float64, error) {
	if k == kNumber {
		n, ok := v.(float64)
		if !ok || n != math.Trunc(n) || n < 0 || n > 150 {
			return 0, errs.Invalidf("%s must be a whole number of years, 0 to 150", where)
		}
		return n, nil
	}
	s, ok := v.(string)
	if !ok {
		return 0, errs.Invalidf("%s must be a date (YYYY-MM-DD or RFC 3339)", where)
	}
	t, err := parseDate(s)
	if err != nil {
		return 0, errs.Invalidf("%s must be a date (YYYY-MM-DD or RFC 3339), not %q", where, s)
	}
	return float64(t.Unix()), nil
}

func parseDate(s string) (time.Time, error) {
	if t, err := time.Parse("2006-01-02", s); err == nil {
		return t, nil
	}
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return t, err
	}
	y, m, d := t.UTC().Date()
	return time.Date(y, m, d, 0, 0, 0, 0, time.UTC), nil
}

// consistent refuses bounds no document can meet (e.g. age gte 65 and
// lt 18): such a request could only fail.
func consistent(field string, k kind, ops map[string]any) error {
	if k != kNumber && k != kDate {
		return nil
	}
	lo, hi := math.Inf(-1), math.Inf(1)
	val := func(op string) (float64, bool) {
		v, ok := ops[op]
		if !ok {
			return 0, false
		}
		n, _ := scalar("", k, v)
		return n, true
	}
	if n, ok := val(OpGte); ok {
		lo = max(lo, n)
	}
	if n, ok := val(OpGt); ok {
		lo = max(lo, n+1)
	}
	if n, ok := val(OpLte); ok {
		hi = min(hi, n)
	}
	if n, ok := val(OpLt); ok {
		hi = min(hi, n-1)
	}
	if lo > hi {
		return errs.Invalidf("query.%s: the bounds exclude every value", field)
	}
	return nil
}

func validateSpecial(field string, ops map[string]any) error {
	switch field {
	case "facematch":
		m, _ := ops["mode"].(string)
		if len(ops) != 1 || (m != "regular" && m != "strict") {
			return errs.Invalidf("query.facematch must be {\"mode\": \"regular\"|\"strict\"}")
		}
	case "sanctions":
		for k, v := range ops {
			if _, ok := v.(bool); k != "strict" || !ok {
				return errs.Invalidf("query.sanctions takes only {\"strict\": true|false}, not %q", k)
			}
		}
	case "bind":
		if len(ops) == 0 {
			return errs.Invalidf("query.bind must name user_address, chain or custom_data")
		}
		size := 0
		for _, k := range sortedKeys(ops) {
			s, ok := ops[k].(string)
			if !ok || s == "" {
				return errs.Invalidf("query.bind.%s must be a non-empty string", k)
			}
			switch k {
			case "user_address":
				if !regexp.MustCompile(`^0x[0-9a-fA-F]{40}$`).MatchString(s) {
					return errs.Invalidf("query.bind.user_address must be a 0x-prefixed 20-byte address")
				}
			case "chain", "custom_data":
			default:
				return errs.Invalidf("query.bind: unknown key %q (user_address, chain, custom_data)", k)
			}
			size += len(s)
		}
		if size > MaxBindBytes {
			return errs.Invalidf("query.bind holds %d bytes; at most %d", size, MaxBindBytes)
		}
	}
	return nil
}

// ParseQuery decodes a query keeping numbers as float64 (JSON's own).
func ParseQuery(raw json.RawMessage) (Query, error) {
	if len(bytes.TrimSpace(raw)) == 0 || string(bytes.TrimSpace(raw)) == "null" {
		return nil, errs.Invalidf("query is required")
	}
	var q Query
	if err := json.Unmarshal(raw, &q); err != nil {
		return nil, errs.Invalidf("query must be an object of field → {operator: value}: %v", err)
	}
	return q, nil
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// equalJSON compares two values as JSON (numbers as numbers).
func equalJSON(a, b any) bool {
	ja, err1 := json.Marshal(a)
	jb, err2 := json.Marshal(b)
	return err1 == nil && err2 == nil && bytes.Equal(ja, jb)
}
