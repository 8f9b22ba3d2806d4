package workflows

import (
	"errors"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"conduit/activities"
	"conduit/internal/tasks"
)

// TaskAdmitUpdate answers a task's creator with the task (the update it
// starts TaskAdmit with).
const TaskAdmitUpdate = "admit"

// TaskAdmitWithin is how late a task's record may still be written after
// its creator asked: the creator waits 30 s and is then told that nothing
// was made.
const TaskAdmitWithin = 20 * time.Second

// TaskAdmitWorkflowID is the admission workflow of task id.
func TaskAdmitWorkflowID(id string) string { return "task-admit/" + id }

// TaskAdmission is TaskAdmit's input: the validated task, its id fixed,
// and when its creator asked.
type TaskAdmission struct {
	Task    tasks.Task
	AskedAt time.Time
	// Limit is the account's limit of tasks the record's write checks
	// (0: none; histories from before quotas).
	Limit int64 `json:",omitempty"`
}

// TaskAdmit creates a task the way a pipeline run admits itself: its
// creator starts it with TaskAdmitUpdate (Update-with-Start), its first
// step (a local activity) writes the record, its second makes the
// schedule task/<id> and brings the task in line with its enclave, and
// the update answers the task. A crash between the two steps leaves
// nothing half-made: the workflow runs the second step when a worker is
// back, and a schedule that cannot be made removes the record. The
// schedule's own life is Temporal's; this workflow ends once it exists.
func TaskAdmit(ctx workflow.Context, in TaskAdmission) (tasks.Task, error) {
	answer, err := answerUpdate[tasks.Task](ctx, TaskAdmitUpdate)
	if err != nil {
		return tasks.Task{}, err
	}
	// Let the creator read the answer before the workflow ends.
	defer func() { _ = workflow.Await(ctx, func() bool { return workflow.AllHandlersFinished(ctx) }) }()

	lctx := workflow.WithLocalActivityOptions(ctx, workflow.LocalActivityOptions{
		StartToCloseTimeout: 10 * time.Second, ScheduleToCloseTimeout: TaskAdmitWithin, RetryPolicy: ShortRetry,
	})
	var t tasks.Task
	open := activities.TaskOpen{Task: in.Task, AdmitBy: in.AskedAt.Add(TaskAdmitWithin), Limit: in.Limit}
	if err := workflow.ExecuteLocalActivity(lctx, ActTaskOpen, open).Get(ctx, &t); err != nil {
		answer.refuse(err)
		return tasks.Task{}, nil // nothing was written
	}
	sctx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: time.Minute, RetryPolicy: ShortRetry})
	if err := workflow.ExecuteActivity(sctx, ActTaskSchedule, in.Task.ID).Get(ctx, &t); err != nil {
		answer.refuse(err)
		var app *temporal.ApplicationError
		if !errors.As(err, &app) || app.Type() != activities.ErrTaskScheduleRefused {
			// Retries ran out: the record goes, so no task lives without
			// its schedule.
			if werr := workflow.ExecuteActivity(sctx, ActTaskWithdraw, in.Task.ID).Get(ctx, nil); werr != nil {
				return tasks.Task{}, werr
			}
		}
		return tasks.Task{}, nil
	}
	answer.give(t)
	return t, nil
}
