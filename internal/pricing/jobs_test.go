package pricing

import (
	"math"
	"testing"

	"conduit/internal/money"
)

func TestJobRateCharge(t *testing.T) {
	r := JobRate{PerSecond: 200, Minimum: 10_000} // 0.0002 USD a second, at least 0.01
	for _, c := range []struct {
		secs float64
		want money.Micros
	}{
		{0, 10_000}, {2, 10_000}, {50, 10_000}, {50.001, 10_001}, {60, 12_000},
		{600, 120_000}, {1440, 288_000}, {0.0001, 10_000}, {-3, 10_000}, {math.NaN(), 10_000},
	} {
		if got := r.Charge(c.secs); got != c.want {
			t.Errorf("Charge(%v) = %d, want %d", c.secs, got, c.want)
		}
	}
	// Rounded up to the micro-USD, by the millisecond.
	if got := (JobRate{PerSecond: 3}).Charge(0.001); got != 1 {
		t.Errorf("a millisecond at 3 µUSD/s: %d", got)
	}
	if got := (JobRate{}).Charge(100); got != 0 || !(JobRate{}).Zero() {
		t.Errorf("a free rate charged %d", got)
	}
}
