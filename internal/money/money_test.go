package money

import (
	"encoding/json"
	"testing"
)

func TestStringAndJSON(t *testing.T) {
	cases := map[Micros]string{0: "0", 5 * USD: "5", 5_250_000: "5.25", 1: "0.000001", 52_500_000: "52.5", -1_500_000: "-1.5", 420_000: "0.42"}
	for m, want := range cases {
		if got := m.String(); got != want {
			t.Errorf("%d: got %s want %s", m, got, want)
		}
		b, _ := json.Marshal(struct{ V Micros }{m})
		if string(b) != `{"V":`+want+`}` {
			t.Errorf("%d json: %s", m, b)
		}
	}
}

func TestParseUSD(t *testing.T) {
	ok := map[string]Micros{"52.50": 52_500_000, "0.000001": 1, "5": 5 * USD, "0.42": 420_000, "-1.5": -1_500_000}
	for s, want := range ok {
		got, err := ParseUSD(s)
		if err != nil || got != want {
			t.Errorf("%s: got %d %v want %d", s, got, err, want)
		}
	}
	for _, s := range []string{"", "abc", "1.0000001", "1e3", ".5", "1.-5", "+3", "99999999999999999999"} {
		if _, err := ParseUSD(s); err == nil {
			t.Errorf("%q accepted", s)
		}
	}
}

func FuzzParseUSDRoundTrip(f *testing.F) {
	for _, s := range []string{"52.50", "0.000001", "5", "-1.25"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		m, err := ParseUSD(s)
		if err != nil {
			return
		}
		back, err := ParseUSD(m.String())
		if err != nil || back != m {
			t.Fatalf("%q → %d → %q → %d (%v)", s, m, m.String(), back, err)
		}
	})
}
