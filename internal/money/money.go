// Package money is integer micro-USD (the 6-decimal atomic unit of the
// payment token) inside the service and an exact JSON number in USD at the
// wire. No float64 ever holds money.
package money

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Micros is an amount in millionths of a US dollar.
type Micros int64

// USD is one dollar in micros.
const USD Micros = 1_000_000

// Cents returns n cents in micros.
func Cents(n int64) Micros { return Micros(n * 10_000) }

// String formats the amount as a decimal USD number with no trailing zeros
// beyond the cents ("5", "5.25", "0.000001", "-1.5").
func (m Micros) String() string {
	neg := m < 0
	u := uint64(m)
	if neg {
		u = uint64(-m)
	}
	whole, frac := u/1_000_000, u%1_000_000
	s := strconv.FormatUint(whole, 10)
	if frac != 0 {
		f := strings.TrimRight(fmt.Sprintf("%06d", frac), "0")
		s += "." + f
	}
	if neg {
		s = "-" + s
	}
	return s
}

// MarshalJSON writes the amount as a JSON number in USD, exactly.
func (m Micros) MarshalJSON() ([]byte, error) { return []byte(m.String()), nil }

// UnmarshalJSON reads a JSON number in USD with at most 6 decimals.
func (m *Micros) UnmarshalJSON(b []byte) error {
	v, err := ParseUSD(strings.Trim(string(b), `"`))
	if err != nil {
		return err
	}
	*m = v
	return nil
}

// ParseUSD reads a decimal USD amount ("52.50", "0.000001") exactly;
// more than 6 decimals or anything that is not a plain decimal is an error.
func ParseUSD(s string) (Micros, error) {
	s = strings.TrimSpace(s)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	whole, frac, _ := strings.Cut(s, ".")
	if whole == "" || len(frac) > 6 || strings.ContainsAny(whole+frac, "+-eE ") {
		return 0, fmt.Errorf("%q is not a USD amount with at most 6 decimals", s)
	}
	w, err := strconv.ParseUint(whole, 10, 63)
	if err != nil {
		return 0, fmt.Errorf("%q is not a USD amount", s)
	}
	var f uint64
	if frac != "" {
		if f, err = strconv.ParseUint(frac+strings.Repeat("0", 6-len(frac)), 10, 32); err != nil {
			return 0, fmt.Errorf("%q is not a USD amount", s)
		}
	}
	if w > (1<<63-1-f)/1_000_000 {
		return 0, errors.New("amount too large")
	}
	v := Micros(w*1_000_000 + f)
	if neg {
		v = -v
	}
	return v, nil
}
