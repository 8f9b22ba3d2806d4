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
	rec, _, err := runMetered(t, call, callErr, activities.FiringHeld{})
	return rec, err
}

// runMetered is runTask with the firing's hold answering held; it returns
// the settlement asked for too (nil when none).
func runMetered(t *testing.T, call tasks.Run, callErr error, held activities.FiringHeld) (tasks.Run, *activities.FiringSettle, error) {
	t.Helper()
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	a := &activities.Tasks{}
	m := &activities.Metering{}
	env.RegisterActivityWithOptions(a.Call, activity.RegisterOptions{Name: ActTaskCall})
	env.RegisterActivityWithOptions(a.Record, activity.RegisterOptions{Name: ActTaskRecord})
	env.RegisterActivityWithOptions(m.HoldFiring, activity.RegisterOptions{Name: ActTaskHold})
	env.RegisterActivityWithOptions(m.SettleFiring, activity.RegisterOptions{Name: ActTaskSettle})
	env.OnActivity(ActTaskHold, mock.Anything, mock.Anything).Return(func(_ context.Context, in activities.FiringHold) (activities.FiringHeld, error) {
		if in.TaskID != "task_1" || in.RunID != "task-run/task_1-2026-11-23T20:30:05Z" {
			t.Errorf("the hold was asked %+v", in)
		}
		return held, nil
	})
	var settled *activities.FiringSettle
	env.OnActivity(ActTaskSettle, mock.Anything, mock.Anything).Return(func(_ context.Context, in activities.FiringSettle) error {
		settled = &in
		return nil
	})
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
	if held.Refused != "" {
		if asked != (activities.TaskCall{}) {
			t.Fatalf("a refused firing called the application: %+v", asked)
		}
	} else if asked.RunID != "task-run/task_1-2026-11-23T20:30:05Z" || asked.TaskID != "task_1" || !asked.ScheduledAt.Equal(want) {
		t.Fatalf("the call was asked %+v", asked)
	}
	return recorded, settled, env.GetWorkflowError()
}

// A firing's price is held before the call and captured after it,
// released when nothing was called; a refused hold skips the call.
func TestTaskRunIsMetered(t *testing.T) {
	ok := tasks.Run{ID: "task-run/task_1-2026-11-23T20:30:05Z", TaskID: "task_1", Outcome: tasks.Success, HTTPStatus: 200}
	held := activities.FiringHeld{HoldID: "hold_1", Amount: 100}
	rec, settled, err := runMetered(t, ok, nil, held)
	if err != nil || rec.Outcome != tasks.Success || settled == nil || !settled.Charge || settled.HoldID != "hold_1" || settled.Amount != 100 {
		t.Fatalf("success: %+v %+v %v", rec, settled, err)
	}
	bad := ok
	bad.Outcome, bad.HTTPStatus = tasks.Failure, 500
	if _, settled, _ = runMetered(t, bad, nil, held); settled == nil || !settled.Charge {
		t.Fatalf("a failed call (work done) was not charged: %+v", settled)
	}
	skipped := ok
	skipped.Outcome = tasks.Skipped
	if _, settled, _ = runMetered(t, skipped, nil, held); settled == nil || settled.Charge {
		t.Fatalf("a skipped call was charged: %+v", settled)
	}
	rec, settled, err = runMetered(t, ok, nil, activities.FiringHeld{Refused: "not called: no credit"})
	if err != nil || rec.Outcome != tasks.Skipped || rec.Result != "not called: no credit" || settled != nil {
		t.Fatalf("refused: %+v %+v %v", rec, settled, err)
	}
	// Free firings hold nothing and settle nothing.
	if _, settled, _ = runMetered(t, ok, nil, activities.FiringHeld{}); settled != nil {
		t.Fatalf("a free firing was settled: %+v", settled)
	}
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
