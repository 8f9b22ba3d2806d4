package workflows

import (
	"strings"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"conduit/activities"
	"conduit/internal/enclaves"
	"conduit/internal/tasks"
)

// TaskQueue carries the scheduled tasks' runs and their activities.
const TaskQueue = "tasks"

// ErrTaskRunFailed types a run whose call failed or timed out, so the
// schedule's recent actions in the Temporal UI show it as failed.
const ErrTaskRunFailed = "TaskRunFailed"

// TaskRun is one firing of a task's schedule (task/<id>): it calls the
// enclave's application once, then records the run, the task's lastRun
// and the enclave's lambda log entry; the record step moves the task to
// failed (pausing the schedule) when its consecutive failures reach the
// threshold. The workflow id is the schedule's "task-run/<id>" with the
// nominal fire time appended by Temporal ("-2026-11-23T20:30:05Z").
func TaskRun(ctx workflow.Context, in tasks.RunInput) error {
	id := workflow.GetInfo(ctx).WorkflowExecution.ID
	scheduled := workflow.Now(ctx).UTC()
	if at, err := time.Parse(time.RFC3339, strings.TrimPrefix(id, tasks.RunWorkflowID(in.TaskID)+"-")); err == nil {
		scheduled = at
	}
	call := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		// The request's own timeout (at most tasks.MaxTimeoutSeconds)
		// ends the call first; a request is never sent twice.
		StartToCloseTimeout: tasks.MaxTimeoutSeconds*time.Second + time.Minute,
		HeartbeatTimeout:    20 * time.Second,
		RetryPolicy:         &temporal.RetryPolicy{MaximumAttempts: 1},
	})
	short := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: time.Minute, RetryPolicy: ShortRetry})
	// The firing's price is held first, like a run's (docs/accounts.md,
	// "Metering"); a balance that cannot cover it skips the call.
	var held activities.FiringHeld
	metered := workflow.GetVersion(ctx, ChangeTaskMetering, workflow.DefaultVersion, 1) >= 1
	if metered {
		if err := workflow.ExecuteActivity(short, ActTaskHold, activities.FiringHold{TaskID: in.TaskID, RunID: id}).Get(ctx, &held); err != nil {
			held.Refused = "not called: the firing's price could not be held: " + cause(err)
		}
	}
	var run tasks.Run
	if held.Refused != "" {
		run = tasks.Run{ID: id, TaskID: in.TaskID, ScheduledAt: scheduled, StartedAt: workflow.Now(ctx).UTC(), Outcome: tasks.Skipped, Result: held.Refused}
	} else if err := workflow.ExecuteActivity(call, ActTaskCall, activities.TaskCall{TaskID: in.TaskID, RunID: id, ScheduledAt: scheduled}).Get(ctx, &run); err != nil {
		run = tasks.Run{ID: id, TaskID: in.TaskID, ScheduledAt: scheduled, StartedAt: workflow.Now(ctx).UTC(),
			Outcome: tasks.Failure, Result: "the call could not be carried out: " + cause(err)}
	}
	if held.HoldID != "" {
		// Captured whatever the application answered (the platform did
		// the work); released when nothing was called.
		settle := activities.FiringSettle{HoldID: held.HoldID, Amount: held.Amount, Charge: run.Outcome != tasks.Skipped}
		if err := workflow.ExecuteActivity(short, ActTaskSettle, settle).Get(ctx, nil); err != nil {
			workflow.GetLogger(ctx).Error("a firing's hold could not be settled", "task", in.TaskID, "hold", held.HoldID, "err", err)
		}
	}
	if err := workflow.ExecuteActivity(short, ActTaskRecord, run).Get(ctx, nil); err != nil {
		return err
	}
	if tasks.Counts(run.Outcome) {
		return temporal.NewNonRetryableApplicationError(run.Outcome+": "+run.Result, ErrTaskRunFailed, nil)
	}
	return nil
}

// syncTasks tells the tasks on the enclave where it moved: DEPLOYED lets
// them run, the other states below hold them pending (docs/tasks.md). A
// failed sync is logged, not fatal: the lifecycle never waits on tasks,
// and a run on an enclave that is not DEPLOYED is skipped anyway.
func (lc *lifecycle) syncTasks(ctx workflow.Context, to enclaves.Status) {
	switch to {
	case enclaves.Deployed, enclaves.Pausing, enclaves.Paused, enclaves.PendingDestroy, enclaves.Destroyed, enclaves.Failed:
	default:
		return
	}
	if workflow.GetVersion(ctx, ChangeEnclaveSyncTasks, workflow.DefaultVersion, 1) == workflow.DefaultVersion {
		return
	}
	actx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: 30 * time.Second,
		RetryPolicy: &temporal.RetryPolicy{InitialInterval: time.Second, MaximumInterval: 10 * time.Second, MaximumAttempts: 5}})
	if err := workflow.ExecuteActivity(actx, ActEnclaveSyncTasks, activities.TaskSync{EnclaveID: lc.in.ID, Status: to}).Get(ctx, nil); err != nil {
		workflow.GetLogger(ctx).Error("the enclave's tasks could not follow it", "enclave", lc.in.ID, "status", to, "err", err)
	}
}
