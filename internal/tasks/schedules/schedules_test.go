package schedules_test

import (
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"

	"conduit/internal/tasks"
	"conduit/internal/tasks/schedules"
)

func TestSpec(t *testing.T) {
	s, err := schedules.Spec(tasks.Task{Schedule: "@every 90s", Timezone: "UTC", JitterSeconds: 5})
	if err != nil || len(s.Intervals) != 1 || s.Intervals[0].Every != 90*time.Second || len(s.CronExpressions) != 0 || s.Jitter != 5*time.Second {
		t.Fatalf("interval: %+v %v", s, err)
	}
	s, err = schedules.Spec(tasks.Task{Schedule: "0  9 * * MON-FRI", Timezone: "America/New_York"})
	if err != nil || len(s.CronExpressions) != 1 || s.CronExpressions[0] != "0 9 * * MON-FRI" || s.TimeZoneName != "America/New_York" || len(s.Intervals) != 0 {
		t.Fatalf("cron: %+v %v", s, err)
	}
	if _, err := schedules.Spec(tasks.Task{Schedule: "0 9 * *", Timezone: "UTC"}); err == nil {
		t.Fatal("a four-field expression made a spec")
	}
	// Every overlap name the API accepts is one of Temporal's policies.
	for _, name := range tasks.Overlaps {
		if p, ok := schedules.Overlap(name); !ok || p == enumspb.SCHEDULE_OVERLAP_POLICY_UNSPECIFIED {
			t.Errorf("overlap %q: %v %v", name, p, ok)
		}
	}
}
