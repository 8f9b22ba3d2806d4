package workflows

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"

	"conduit/activities"
	"conduit/internal/tasks"
)

// runTask runs one TaskRun with the call answering call (or failing with
// callErr) and returns what was recorded and the workflow's error.
func runTask(t *testing.T, call tasks.Run, callErr error) (tasks.Run, error) {
	t.Helper()
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	a := &activities.Tasks{}
	env.RegisterActivityWithOptions(a.Call, activity.RegisterOptions{Name: ActTaskCall})
	env.RegisterActivityWithOptions(a.Record, activity.RegisterOptions{Name: ActTaskRecord})
	var asked activities.TaskCall
	env.OnActivity(ActTaskCall, mock.Anything, mock.Anything).Return(func(_ context.Context, in activities.TaskCall) (tasks.Run, error) {
		asked = in
		return call, callErr
	})
	var recorded tasks.Run
	env.OnActivity(ActTaskRecord, mock.Anything, mock.Anything).Return(func(_ context.Context, r tasks.Run) (tasks.Status, error) {
		recorded = r
		return tasks.Running, nil
	})
	env.SetStartWorkflowOptions(client.StartWorkflowOptions{ID: "task-run/task_1-2026-11-23T20:30:05Z"})
	env.ExecuteWorkflow(TaskRun, tasks.RunInput{TaskID: "task_1"})
	if !env.IsWorkflowCompleted() {
		t.Fatal("the run did not complete")
	}
	want := time.Date(2026, 11, 23, 20, 30, 5, 0, time.UTC)
	if asked.RunID != "task-run/task_1-2026-11-23T20:30:05Z" || asked.TaskID != "task_1" || !asked.ScheduledAt.Equal(want) {
		t.Fatalf("the call was asked %+v", asked)
	}
	return recorded, env.GetWorkflowError()
}

func TestTaskRunRecordsTheOutcome(t *testing.T) {
	ok := tasks.Run{ID: "task-run/task_1-2026-11-23T20:30:05Z", TaskID: "task_1", Outcome: tasks.Success, HTTPStatus: 200}
	if rec, err := runTask(t, ok, nil); err != nil || rec.Outcome != tasks.Success {
		t.Fatalf("success: %+v %v", rec, err)
	}
	skipped := ok
	skipped.Outcome = tasks.Skipped
	if rec, err := runTask(t, skipped, nil); err != nil || rec.Outcome != tasks.Skipped {
		t.Fatalf("skipped: %+v %v", rec, err)
	}
	// A failed call is recorded, then fails the workflow (red in the UI).
	bad := ok
	bad.Outcome, bad.HTTPStatus, bad.Result = tasks.Failure, 500, "boom"
	rec, err := runTask(t, bad, nil)
	var app *temporal.ApplicationError
	if rec.Outcome != tasks.Failure || !errors.As(err, &app) || app.Type() != ErrTaskRunFailed {
		t.Fatalf("failure: %+v %v", rec, err)
	}
	// The call step itself failing (a worker lost mid-call) is a failed
	// run, recorded with the reason.
	rec, err = runTask(t, tasks.Run{}, temporal.NewNonRetryableApplicationError("the worker went away", "x", nil))
	if rec.Outcome != tasks.Failure || rec.ID != "task-run/task_1-2026-11-23T20:30:05Z" || rec.Result == "" || !errors.As(err, &app) {
		t.Fatalf("call error: %+v %v", rec, err)
	}
}
