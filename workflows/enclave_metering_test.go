package workflows

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/testsuite"

	"conduit/activities"
	"conduit/internal/enclaves"
)

// Each started period of a DEPLOYED enclave is metered once, periods
// follow each other without gaps or repeats, and a period the balance
// cannot cover pauses the enclave with the reason in its log; a paused
// enclave is not metered.
func TestEnclaveMetersUptimeAndPausesUnpaid(t *testing.T) {
	w := &enclaveWorld{}
	var periods []time.Time
	in := EnclaveInput{ID: "enc_1", Account: "acct_1", Ref: "r/app:1", LogEvery: time.Second, MeterEvery: 10 * time.Second}
	st := w.runWith(t, in, func(env *testsuite.TestWorkflowEnvironment) {
		env.RegisterActivityWithOptions((&activities.Metering{}).MeterEnclave, activity.RegisterOptions{Name: ActEnclaveMeter})
		env.OnActivity(ActEnclaveMeter, mock.Anything, mock.Anything).Return(func(_ context.Context, m activities.UptimeMeter) (activities.UptimeMetered, error) {
			w.mu.Lock()
			defer w.mu.Unlock()
			if m.EnclaveID != "enc_1" || m.Account != "acct_1" || m.Period != 10*time.Second {
				t.Errorf("metered %+v", m)
			}
			if n := len(periods); n > 0 && m.From.Equal(periods[n-1]) {
				return activities.UptimeMetered{Refused: "no credit left"}, nil // the same period asked again
			}
			periods = append(periods, m.From)
			if len(periods) == 4 {
				return activities.UptimeMetered{Refused: "no credit left"}, nil
			}
			return activities.UptimeMetered{Amount: 10}, nil
		})
		terminateAt(env, 2*time.Minute, t)
	})
	if len(periods) != 4 {
		t.Fatalf("%d periods metered, want 4 (the fourth refused): %v", len(periods), periods)
	}
	for i := 1; i < len(periods); i++ {
		if d := periods[i].Sub(periods[i-1]); d != 10*time.Second {
			t.Fatalf("period %d starts %s after the one before", i, d)
		}
	}
	want := []enclaves.Status{enclaves.PendingDeploy, enclaves.Deploying, enclaves.Deployed, enclaves.Pausing, enclaves.Paused,
		enclaves.PendingDestroy, enclaves.Destroying, enclaves.Destroyed}
	if strings.Join(statusNames(w.statuses), ",") != strings.Join(statusNames(want), ",") {
		t.Fatalf("statuses %v, want %v", w.statuses, want)
	}
	if !strings.Contains(strings.Join(w.notes, "\n"), "paused by the platform: no credit left") || st.Status != enclaves.Destroyed {
		t.Fatalf("notes %q, final %+v", w.notes, st)
	}
}

// Without a metering period (a zero price, or a history from before
// metering) nothing is metered.
func TestEnclaveWithoutMeteringMetersNothing(t *testing.T) {
	w := &enclaveWorld{}
	w.run(t, func(env *testsuite.TestWorkflowEnvironment) {
		env.RegisterActivityWithOptions((&activities.Metering{}).MeterEnclave, activity.RegisterOptions{Name: ActEnclaveMeter})
		env.OnActivity(ActEnclaveMeter, mock.Anything, mock.Anything).Return(func(context.Context, activities.UptimeMeter) (activities.UptimeMetered, error) {
			t.Error("an unmetered enclave was metered")
			return activities.UptimeMetered{}, nil
		})
		terminateAt(env, 30*time.Second, t)
	})
}
