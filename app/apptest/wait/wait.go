// Package wait holds the one polling helper tests use instead of hand-written
// deadline loops. It imports nothing of ours, so a package's internal tests
// can use it even where the harness (app/apptest) would be an import cycle.
package wait

import (
	"testing"
	"time"
)

// Eventually calls cond until it returns nil, and fails the test after within
// with what it was waiting for and cond's last answer. cond's error says what
// it saw ("status running"), so a timeout reads like the assertion it is.
// Polls start at 10 ms and back off to 250 ms: quick for fast paths, cheap
// on the shared CI machine for slow ones.
func Eventually(t testing.TB, within time.Duration, what string, cond func() error) {
	t.Helper()
	deadline := time.Now().Add(within)
	tick := 10 * time.Millisecond
	for {
		err := cond()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("waited %s for %s: %v", within, what, err)
		}
		time.Sleep(tick)
		tick = min(tick*2, 250*time.Millisecond)
	}
}
