package workflows

import (
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"conduit/activities"
	"conduit/internal/enclaves"
)

// meter charges each started period of uptime while the enclave is
// DEPLOYED (docs/accounts.md, "Metering"): the first period starts when it
// is first seen DEPLOYED, the next every MeterEvery after; a stretch that
// ends (pause, failure, terminate) ends its periods, and the next stretch
// starts a new one. A period is keyed by its start, so a retried or
// replayed step never charges twice. A balance that cannot cover a period
// pauses the enclave, the reason in its log.
func (lc *lifecycle) meter(ctx workflow.Context) {
	every := lc.in.MeterEvery
	if every <= 0 {
		return // not metered (and every history from before metering)
	}
	if lc.st.Status != enclaves.Deployed || lc.busy > 0 || lc.terminating {
		if lc.st.Status != enclaves.Deployed {
			lc.meterFrom = nil
		}
		return
	}
	if workflow.GetVersion(ctx, ChangeEnclaveMetering, workflow.DefaultVersion, 1) == workflow.DefaultVersion {
		return
	}
	now := workflow.Now(ctx)
	if lc.meterFrom == nil {
		lc.meterFrom = &now
	}
	if now.Before(*lc.meterFrom) {
		return // the current period is paid for
	}
	var m activities.UptimeMetered
	// A few quick attempts: the watch waits on this step, and a period
	// not charged now is asked again (same key) at the next look.
	actx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: 30 * time.Second,
		RetryPolicy: &temporal.RetryPolicy{InitialInterval: time.Second, MaximumInterval: 5 * time.Second, MaximumAttempts: 3}})
	err := workflow.ExecuteActivity(actx, ActEnclaveMeter, activities.UptimeMeter{
		EnclaveID: lc.in.ID, Account: lc.in.Account, From: *lc.meterFrom, Period: every,
	}).Get(ctx, &m)
	if err != nil {
		// Tried again at the next look, under the same key.
		workflow.GetLogger(ctx).Error("an enclave's uptime could not be metered", "enclave", lc.in.ID, "err", err)
		return
	}
	if m.Refused != "" {
		lc.pauseUnpaid(ctx, m.Refused)
		return
	}
	next := lc.meterFrom.Add(every)
	lc.meterFrom = &next
}

// pauseUnpaid pauses a DEPLOYED enclave whose account cannot pay for its
// uptime; its owner resumes it after topping up.
func (lc *lifecycle) pauseUnpaid(ctx workflow.Context, reason string) {
	if lc.st.Status != enclaves.Deployed || lc.busy > 0 || lc.terminating {
		return
	}
	lc.busy++
	defer func() { lc.busy-- }()
	if err := lc.move(ctx, enclaves.Pausing, "ecs", "paused by the platform: "+reason); err != nil {
		workflow.GetLogger(ctx).Error("recording the pause failed", "err", err)
		return
	}
	if err := workflow.ExecuteActivity(lc.long, ActEnclavePause, lc.in.ID).Get(ctx, nil); err != nil {
		lc.fail(ctx, "the enclave could not be paused: "+cause(err))
		return
	}
	lc.meterFrom = nil
	if err := lc.move(ctx, enclaves.Paused, "stepfunctions", ""); err != nil {
		workflow.GetLogger(ctx).Error("recording the pause failed", "err", err)
	}
}
