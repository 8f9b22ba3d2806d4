package tasks_test

import (
	"strings"
	"testing"
	"time"

	"conduit/internal/tasks"
)

// FuzzParseSchedule: any string is answered without a panic; what is
// accepted is either a five-field expression, a known descriptor, or an
// interval of whole seconds within the bounds.
func FuzzParseSchedule(f *testing.F) {
	for _, s := range []string{"*/5 * * * *", "@daily", "@every 1s", "@every 1h30m", "0 9 * * MON-FRI", "TZ=UTC * * * * *", "@every -1s", "* * * * * * *", "@every 9999999h"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		p, err := tasks.ParseSchedule(s)
		if err != nil {
			return
		}
		switch {
		case p.Every > 0:
			if p.Cron != "" || p.Every < time.Second || p.Every%time.Second != 0 || p.Every > tasks.MaxEvery {
				t.Fatalf("%q accepted as %+v", s, p)
			}
		case strings.HasPrefix(p.Cron, "@"):
		default:
			if len(strings.Fields(p.Cron)) != 5 {
				t.Fatalf("%q accepted as %+v", s, p)
			}
		}
	})
}
