package pricing

import (
	"time"

	"conduit/internal/money"
)

// Metering is the price list of metered use (docs/accounts.md,
// "Metering"): a minute of a DEPLOYED enclave and one firing of a
// scheduled task. A zero price meters nothing and writes no ledger entry.
type Metering struct {
	EnclaveMinute money.Micros
	TaskFiring    money.Micros
}

// EnclavePeriod is the price of one metering period of uptime: the
// minute's price pro rata, rounded up to a whole micro-USD (a period is
// charged when it starts, so a started period costs the whole period).
func (m Metering) EnclavePeriod(d time.Duration) money.Micros {
	if m.EnclaveMinute <= 0 || d <= 0 {
		return 0
	}
	// Milliseconds keep the product far from int64's limit (an hour's
	// period at 1,000 USD a minute is 3.6e15).
	ms := int64(d / time.Millisecond)
	if ms == 0 {
		ms = 1
	}
	const minute = int64(time.Minute / time.Millisecond)
	return money.Micros((int64(m.EnclaveMinute)*ms + minute - 1) / minute)
}
