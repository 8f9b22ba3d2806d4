package workflows

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"

	"conduit/activities"
	"conduit/internal/enclaves"
	"conduit/internal/tasks"
)

// The lifecycle admits itself: its first step writes the record, before
// any projection or provider step, so a creator that died after starting
// it still gets its enclave. A record write that fails at first is
// retried until it is taken.
func TestEnclaveAdmissionWritesTheRecordFirst(t *testing.T) {
	w := &enclaveWorld{}
	var order []string
	opens := 0
	in := EnclaveInput{ID: "enc_1", Account: "acct_1", Ref: "r/app:1", LogEvery: time.Second,
		Admit: &activities.NewEnclave{ID: "enc_1", Account: "acct_1", Status: enclaves.PendingDeploy}}
	st := w.runWith(t, in, func(env *testsuite.TestWorkflowEnvironment) {
		env.OnActivity(ActEnclaveOpen, mock.Anything, mock.Anything).Return(func(_ context.Context, n activities.NewEnclave) error {
			w.mu.Lock()
			defer w.mu.Unlock()
			opens++
			if opens == 1 {
				return errors.New("the database is restarting")
			}
			if n.ID != "enc_1" || n.Status != enclaves.PendingDeploy {
				t.Errorf("record %+v", n)
			}
			order = append(order, "open")
			return nil
		})
		env.OnActivity(ActEnclaveProject, mock.Anything, mock.Anything).Return(func(_ context.Context, s activities.EnclaveStep) error {
			w.mu.Lock()
			defer w.mu.Unlock()
			order = append(order, string(s.Projection.Status))
			return nil
		})
		terminateAt(env, 20*time.Second, t)
	})
	if len(order) < 2 || order[0] != "open" || order[1] != string(enclaves.PendingDeploy) || strings.Count(strings.Join(order, ","), "open") != 1 {
		t.Fatalf("steps %v: the record must be written first, once", order)
	}
	if st.Status != enclaves.Destroyed {
		t.Fatalf("final %+v", st)
	}
}

// A lifecycle from before admission (no record in its input) writes none.
func TestEnclaveWithoutAdmissionWritesNoRecord(t *testing.T) {
	w := &enclaveWorld{}
	w.run(t, func(env *testsuite.TestWorkflowEnvironment) {
		env.OnActivity(ActEnclaveOpen, mock.Anything, mock.Anything).Return(func(context.Context, activities.NewEnclave) error {
			t.Error("a lifecycle without an admission wrote a record")
			return nil
		})
		terminateAt(env, 10*time.Second, t)
	})
}

// taskAdmit runs TaskAdmit with open and schedule as its steps and answers
// the admission update's outcome and the withdrawals.
func taskAdmit(t *testing.T, open func(context.Context, activities.TaskOpen) (tasks.Task, error), schedule func(context.Context, string) (tasks.Task, error)) (tasks.Task, error, []string) {
	t.Helper()
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	a := &activities.Tasks{}
	env.RegisterActivityWithOptions(a.Open, activity.RegisterOptions{Name: ActTaskOpen})
	env.RegisterActivityWithOptions(a.Schedule, activity.RegisterOptions{Name: ActTaskSchedule})
	env.RegisterActivityWithOptions(a.Withdraw, activity.RegisterOptions{Name: ActTaskWithdraw})
	var steps []string
	env.OnActivity(ActTaskOpen, mock.Anything, mock.Anything).Return(func(ctx context.Context, in activities.TaskOpen) (tasks.Task, error) {
		steps = append(steps, "open")
		return open(ctx, in)
	})
	env.OnActivity(ActTaskSchedule, mock.Anything, mock.Anything).Return(func(ctx context.Context, id string) (tasks.Task, error) {
		steps = append(steps, "schedule")
		return schedule(ctx, id)
	})
	env.OnActivity(ActTaskWithdraw, mock.Anything, mock.Anything).Return(func(context.Context, string) error {
		steps = append(steps, "withdraw")
		return nil
	})
	var got tasks.Task
	var gotErr error
	answered := false
	env.RegisterDelayedCallback(func() {
		env.UpdateWorkflow(TaskAdmitUpdate, "admit", &testsuite.TestUpdateCallback{
			OnReject: func(err error) { gotErr, answered = err, true },
			OnComplete: func(v any, err error) {
				answered, gotErr = true, err
				if err == nil {
					got = v.(tasks.Task)
				}
			},
		})
	}, 0)
	env.ExecuteWorkflow(TaskAdmit, TaskAdmission{Task: tasks.Task{ID: "tsk_1", Status: tasks.Running}, AskedAt: time.Now()})
	if !env.IsWorkflowCompleted() || env.GetWorkflowError() != nil {
		t.Fatalf("workflow: %v", env.GetWorkflowError())
	}
	if !answered {
		t.Fatal("the admission was not answered")
	}
	return got, gotErr, steps
}

// A task's record and its schedule come into being together: the record
// first, then the schedule (retried until made), and only then is the
// creator answered.
func TestTaskAdmissionWritesTheRecordThenTheSchedule(t *testing.T) {
	tries := 0
	got, err, steps := taskAdmit(t,
		func(_ context.Context, in activities.TaskOpen) (tasks.Task, error) {
			if in.AdmitBy.IsZero() {
				t.Error("the record may be written at any time; want a deadline")
			}
			return in.Task, nil
		},
		func(_ context.Context, id string) (tasks.Task, error) {
			if tries++; tries == 1 {
				return tasks.Task{}, errors.New("Temporal is busy") // a worker died here, say
			}
			return tasks.Task{ID: id, Status: tasks.Running}, nil
		})
	if err != nil || got.ID != "tsk_1" {
		t.Fatalf("admission answered %+v, %v", got, err)
	}
	if strings.Join(steps, ",") != "open,schedule,schedule" {
		t.Fatalf("steps %v", steps)
	}
}

// A schedule Temporal refuses leaves no task (its step removed the
// record); the creator is told why.
func TestTaskAdmissionRefusedScheduleMakesNothing(t *testing.T) {
	_, err, steps := taskAdmit(t,
		func(_ context.Context, in activities.TaskOpen) (tasks.Task, error) { return in.Task, nil },
		func(context.Context, string) (tasks.Task, error) {
			return tasks.Task{}, temporal.NewNonRetryableApplicationError("bad cron", activities.ErrTaskScheduleRefused, nil)
		})
	var app *temporal.ApplicationError
	if !errors.As(err, &app) || app.Type() != activities.ErrTaskScheduleRefused {
		t.Fatalf("admission answered %v", err)
	}
	if strings.Join(steps, ",") != "open,schedule" {
		t.Fatalf("steps %v", steps)
	}
}

// A record written too late (its creator stopped waiting) is not written,
// and no schedule is made.
func TestTaskAdmissionTooLateMakesNothing(t *testing.T) {
	_, err, steps := taskAdmit(t,
		func(context.Context, activities.TaskOpen) (tasks.Task, error) {
			return tasks.Task{}, temporal.NewNonRetryableApplicationError("too late", activities.ErrTaskAdmitTooLate, nil)
		},
		func(context.Context, string) (tasks.Task, error) {
			t.Error("a schedule was made for a task without its record")
			return tasks.Task{}, nil
		})
	if err == nil || strings.Join(steps, ",") != "open" {
		t.Fatalf("answered %v after %v", err, steps)
	}
}
