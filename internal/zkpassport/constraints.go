package zkpassport

import (
	"encoding/json"
	"fmt"
	"slices"
)

// resultEntry is one operator's outcome in the SDK's QueryResult.
type resultEntry struct {
	Expected json.RawMessage `json:"expected"`
	Result   json.RawMessage `json:"result"`
}

// checkConstraints: every constraint of the request has its result in the
// query result, for the value asked (expected) and true; disclosed values
// meet the request's other constraints on the same field; the submitted
// originalQuery is the request's; and the inputs the proofs commit to
// (age bounds, country lists) are the ones asked. It answers the
// disclosed values.
func checkConstraints(q Query, s Submission, ps []parsed) (Level, map[string]any) {
	l := Level{Checks: []string{"originalQuery is the request's query", "a true result for every constraint, for the value asked", "disclosed values meet the request's constraints", "committed age bounds and country lists are the ones asked"}}
	disclosed := map[string]any{}
	if len(s.OriginalQuery) > 0 {
		var oq any
		if err := json.Unmarshal(s.OriginalQuery, &oq); err != nil || !equalJSON(oq, q) {
			l.fail("originalQuery is not the request's query")
		}
	}
	for _, field := range sortedKeys(q) {
		ops := q[field]
		res := s.QueryResult[field]
		switch field {
		case "facematch":
			var mode string
			var passed bool
			_ = json.Unmarshal(res["mode"], &mode)
			_ = json.Unmarshal(res["passed"], &passed)
			if mode != ops["mode"] || !passed {
				l.fail("facematch: wanted mode %v passed, got mode %q passed %v", ops["mode"], mode, passed)
			}
			continue
		case "sanctions":
			var passed bool
			_ = json.Unmarshal(res["passed"], &passed)
			if !passed {
				l.fail("sanctions: the result does not say passed")
			}
			continue
		case "bind":
			for _, k := range sortedKeys(ops) {
				var got any
				_ = json.Unmarshal(res[k], &got)
				if !equalJSON(got, ops[k]) {
					l.fail("bind.%s: bound %v, asked %v", k, got, ops[k])
				}
			}
			continue
		}
		k := fields[field]
		for _, op := range sortedKeys(ops) {
			raw, ok := res[op]
			if !ok {
				l.fail("%s.%s: no result", field, op)
				continue
			}
			var e resultEntry
			if err := json.Unmarshal(raw, &e); err != nil {
				l.fail("%s.%s: the result is not {expected, result}", field, op)
				continue
			}
			if op == OpDisclose {
				var v any
				if json.Unmarshal(e.Result, &v) != nil || v == nil || v == "" {
					l.fail("%s.disclose: nothing disclosed", field)
					continue
				}
				disclosed[field] = v
				continue
			}
			var ok2 bool
			if json.Unmarshal(e.Result, &ok2) != nil || !ok2 {
				l.fail("%s.%s: the result is not true", field, op)
			}
			var exp any
			if json.Unmarshal(e.Expected, &exp) != nil || !sameValue(k, exp, ops[op]) {
				l.fail("%s.%s: the result is for %s, not the %v asked", field, op, string(e.Expected), ops[op])
			}
		}
		if v, ok := disclosed[field]; ok {
			for _, op := range sortedKeys(ops) {
				if op != OpDisclose && !meets(k, op, v, ops[op]) {
					l.fail("%s: the disclosed %v does not meet %s %v", field, v, op, ops[op])
				}
			}
		}
	}
	checkCommitted(&l, q, ps)
	l.close()
	return l, disclosed
}

// sameValue compares an expected value with the asked one: dates by day
// (the SDK sends them as ISO timestamps), the rest as JSON.
func sameValue(k kind, got, want any) bool {
	if k != kDate {
		return equalJSON(got, want)
	}
	gl, gok := got.([]any)
	wl, wok := want.([]any)
	if gok || wok {
		return gok && wok && len(gl) == 2 && len(wl) == 2 && sameValue(k, gl[0], wl[0]) && sameValue(k, gl[1], wl[1])
	}
	a, err1 := scalar("", k, got)
	b, err2 := scalar("", k, want)
	return err1 == nil && err2 == nil && a == b
}

// meets says whether a disclosed value satisfies op v.
func meets(k kind, op string, disclosed, v any) bool {
	switch op {
	case OpEq:
		return sameValue(k, disclosed, v)
	case OpIn, OpOut:
		list, _ := v.([]any)
		in := slices.ContainsFunc(list, func(c any) bool { return c == disclosed })
		return in == (op == OpIn)
	}
	d, err := scalar("", k, disclosed)
	if err != nil {
		return false
	}
	if op == OpRange {
		pair, _ := v.([]any)
		a, _ := scalar("", k, pair[0])
		b, _ := scalar("", k, pair[1])
		return a <= d && d <= b
	}
	n, _ := scalar("", k, v)
	switch op {
	case OpGte:
		return d >= n
	case OpGt:
		return d > n
	case OpLte:
		return d <= n
	case OpLt:
		return d < n
	}
	return false
}

// checkCommitted compares the inputs the proofs commit to with the
// request, where the proofs carry them (committedInputs, as the SDK
// reads them): compare_age's minAge/maxAge (0: no bound) and the
// inclusion/exclusion checks' country lists.
func checkCommitted(l *Level, q Query, ps []parsed) {
	committed := map[string]json.RawMessage{}
	for _, p := range ps {
		for k, v := range p.CommittedInputs {
			committed[k] = v
		}
	}
	if len(committed) == 0 {
		return // older proofs carry none; the cryptographic level reads them from the proofs
	}
	if age, ok := q["age"]; ok {
		if _, eq := age[OpEq]; !eq {
			lo, hi := ageBounds(age)
			var c struct {
				MinAge *float64 `json:"minAge"`
				MaxAge *float64 `json:"maxAge"`
			}
			raw, ok := committed["compare_age"]
			if !ok || json.Unmarshal(raw, &c) != nil || c.MinAge == nil || c.MaxAge == nil {
				l.fail("age: the proofs commit no age comparison")
			} else if *c.MinAge != lo || *c.MaxAge != hi {
				l.fail("age: the proofs compare with minAge %v maxAge %v, the request asks %v to %v", *c.MinAge, *c.MaxAge, lo, hi)
			}
		}
	}
	for _, field := range []string{"nationality", "issuing_country"} {
		for _, op := range []string{OpIn, OpOut} {
			want, ok := q[field][op]
			if !ok {
				continue
			}
			name := map[string]string{OpIn: "inclusion_check_", OpOut: "exclusion_check_"}[op] + field
			var c struct {
				Countries []any `json:"countries"`
			}
			raw, ok := committed[name]
			if !ok || json.Unmarshal(raw, &c) != nil {
				l.fail("%s.%s: the proofs commit no %s", field, op, name)
				continue
			}
			got := append([]any(nil), c.Countries...)
			asked := append([]any(nil), want.([]any)...)
			sortAny(got)
			sortAny(asked)
			if !equalJSON(got, asked) {
				l.fail("%s.%s: the proofs check %v, the request asks %v", field, op, c.Countries, want)
			}
		}
	}
}

// ageBounds is the request's age window as compare_age commits it: the
// least and the greatest age allowed, 0 for no bound.
func ageBounds(ops map[string]any) (lo, hi float64) {
	get := func(op string) (float64, bool) { v, ok := ops[op].(float64); return v, ok }
	if v, ok := get(OpGte); ok {
		lo = v
	}
	if v, ok := get(OpGt); ok {
		lo = max(lo, v+1)
	}
	if v, ok := get(OpLte); ok {
		hi = v
	}
	if v, ok := get(OpLt); ok {
		hi = v - 1
	}
	if pair, ok := ops[OpRange].([]any); ok {
		lo, hi = pair[0].(float64), pair[1].(float64)
	}
	return lo, hi
}

func sortAny(s []any) {
	slices.SortFunc(s, func(a, b any) int {
		x, y := fmt.Sprint(a), fmt.Sprint(b)
		switch {
		case x < y:
			return -1
		case x > y:
			return 1
		}
		return 0
	})
}
