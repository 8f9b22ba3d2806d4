package pricing

import (
	"testing"
	"time"

	"conduit/internal/money"
)

func TestEnclavePeriod(t *testing.T) {
	m := Metering{EnclaveMinute: 200}
	for _, c := range []struct {
		d    time.Duration
		want money.Micros
	}{
		{time.Minute, 200}, {30 * time.Second, 100}, {time.Second, 4}, {time.Hour, 12_000}, {0, 0},
	} {
		if got := m.EnclavePeriod(c.d); got != c.want {
			t.Errorf("%s: %d, want %d", c.d, got, c.want)
		}
	}
	if got := (Metering{}).EnclavePeriod(time.Minute); got != 0 {
		t.Errorf("a zero price charged %d", got)
	}
}
