package pricing

import (
	"math"

	"conduit/internal/money"
)

// JobRate prices a media library job (an import, assembly or edit) by
// the work it does: the seconds of media it produces, at PerSecond each,
// never less than Minimum. It travels in the job's workflow input, so a
// change of the configured prices never alters a job already admitted
// (nor the replay of one); it is pure and safe inside workflows.
type JobRate struct {
	PerSecond money.Micros `json:"perSecond"`
	Minimum   money.Micros `json:"minimum"`
}

// Charge is the price of seconds of media: PerSecond per second, counted
// by the millisecond and rounded up to the micro-USD, at least Minimum.
// Integer arithmetic only (the float is read once, to whole milliseconds),
// so the workflow computes the same figure on every replay.
func (r JobRate) Charge(seconds float64) money.Micros {
	if math.IsNaN(seconds) || seconds < 0 {
		seconds = 0
	}
	ms := int64(math.Ceil(seconds * 1000))
	per := int64(r.PerSecond)
	var c int64
	if per > 0 && ms > 0 {
		// Overflow is out of reach: seconds are capped long before
		// 2^63 / (per × 1000).
		c = (ms*per + 999) / 1000
	}
	return max(money.Micros(c), r.Minimum)
}

// Zero says the rate was never set (a job admitted before jobs were
// metered: it costs its flat price).
func (r JobRate) Zero() bool { return r.PerSecond == 0 && r.Minimum == 0 }
