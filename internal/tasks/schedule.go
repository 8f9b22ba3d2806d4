package tasks

import (
	"fmt"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
)

// Parsed is a validated schedule string: a cron expression, or a fixed
// interval.
type Parsed struct {
	// Cron is a five-field expression or a descriptor (@hourly, …).
	Cron string
	// Every is the interval of "@every <duration>".
	Every time.Duration
}

// MaxEvery bounds "@every": longer periods read better as cron.
const MaxEvery = 366 * 24 * time.Hour

var standard = cron.NewParser(cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// ParseSchedule checks a schedule string. It accepts the five-field cron
// format (minute hour day-of-month month day-of-week, with names, ranges,
// lists and steps), the descriptors @yearly (@annually), @monthly,
// @weekly, @daily (@midnight) and @hourly, and "@every <duration>" with a
// whole number of seconds, at least one ("@every 1s", "@every 90s",
// "@every 1h30m"). The time zone is the task's timezone field, never a
// prefix in the string. The error says what is wrong in a sentence.
func ParseSchedule(s string) (Parsed, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return Parsed{}, fmt.Errorf("is empty")
	}
	if strings.HasPrefix(s, "TZ=") || strings.HasPrefix(s, "CRON_TZ=") {
		return Parsed{}, fmt.Errorf("give the time zone in the timezone field, not as a TZ= prefix")
	}
	if rest, ok := strings.CutPrefix(s, "@every"); ok {
		d, err := time.ParseDuration(strings.TrimSpace(rest))
		switch {
		case strings.TrimSpace(rest) == "":
			return Parsed{}, fmt.Errorf(`"@every" needs a duration, e.g. "@every 30s" or "@every 1h"`)
		case err != nil:
			return Parsed{}, fmt.Errorf("%q is not a duration (use s, m, h: \"@every 90s\", \"@every 1h30m\")", strings.TrimSpace(rest))
		case d < time.Second:
			return Parsed{}, fmt.Errorf("the interval must be at least 1s")
		case d%time.Second != 0:
			return Parsed{}, fmt.Errorf("the interval must be a whole number of seconds")
		case d > MaxEvery:
			return Parsed{}, fmt.Errorf("the interval must be at most %s; use a cron expression for longer periods", MaxEvery)
		}
		return Parsed{Every: d}, nil
	}
	if strings.HasPrefix(s, "@") {
		switch s {
		case "@yearly", "@annually", "@monthly", "@weekly", "@daily", "@midnight", "@hourly":
			return Parsed{Cron: s}, nil
		}
		return Parsed{}, fmt.Errorf("%q is not a descriptor (@yearly, @annually, @monthly, @weekly, @daily, @midnight, @hourly, @every <duration>)", s)
	}
	if n := len(strings.Fields(s)); n != 5 {
		return Parsed{}, fmt.Errorf("%q has %d fields; a cron expression has 5: minute hour day-of-month month day-of-week (e.g. \"*/15 * * * *\")", s, n)
	}
	if _, err := standard.Parse(s); err != nil {
		return Parsed{}, fmt.Errorf("%q is not a valid cron expression: %v", s, err)
	}
	return Parsed{Cron: strings.Join(strings.Fields(s), " ")}, nil
}

// Shortest is the shortest time between two firings of a parsed schedule:
// the interval of "@every", or the smallest gap among a cron expression's
// next firings (a five-field cron fires at most once a minute, so this
// only matters for a minimum above a minute; the sample covers more than
// a day of the densest expressions).
func (p Parsed) Shortest() time.Duration {
	if p.Every > 0 {
		return p.Every
	}
	sched, err := standard.Parse(p.Cron)
	if err != nil {
		return 0
	}
	// Gaps are measured from a firing, never from an arbitrary start.
	at := sched.Next(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	shortest := time.Duration(0)
	for range 2000 {
		next := sched.Next(at)
		if next.IsZero() {
			break
		}
		if gap := next.Sub(at); shortest == 0 || gap < shortest {
			shortest = gap
		}
		at = next
	}
	return shortest
}

// CheckInterval refuses a schedule that can fire more often than min
// (quota.min_task_interval), as the schedule field's 400.
func CheckInterval(schedule string, min time.Duration) error {
	p, err := ParseSchedule(schedule)
	if err != nil || min <= 0 {
		return nil // the schedule's own check says what is wrong
	}
	if s := p.Shortest(); s > 0 && s < min {
		return Invalid("schedule", fmt.Sprintf("fires every %s; the shortest interval allowed on this deployment is %s (quota.min_task_interval)", s, min))
	}
	return nil
}
