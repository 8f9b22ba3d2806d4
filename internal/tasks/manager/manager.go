// Package manager is the scheduled-task API's one domain service: it
// creates tasks (each admits itself, workflows.TaskAdmit: the record, then
// its schedule), reads them for their owner, changes, deletes, triggers
// them and lists their runs. The rules of keeping a schedule in step with
// its record are package schedules' (which the worker's activities share);
// the HTTP handlers decode, call one method here, encode.
//
// Like frontend/, it uses workflows/ only for names and inputs.
package manager

import (
	"context"
	"errors"
	"slices"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"conduit/activities"
	"conduit/internal/errs"
	"conduit/internal/logging"
	"conduit/internal/quota"
	"conduit/internal/store"
	"conduit/internal/tasks"
	"conduit/internal/tasks/schedules"
	"conduit/internal/temporalx"
	"conduit/workflows"
)

// Service is the task rules on the store and a Temporal client.
type Service struct {
	Schedules *schedules.Service
	// Limit bounds the tasks an account holds (quota.tasks; 0: none);
	// MinInterval is the shortest interval a schedule may fire at
	// (quota.min_task_interval; 0: the parser's one second).
	Limit       int64
	MinInterval time.Duration
}

// New is the service on st and tc.
func New(st *store.Store, tc client.Client) *Service {
	return &Service{Schedules: &schedules.Service{Store: st, Temporal: tc, Workflow: workflows.WfTaskRun, Queue: workflows.TaskQueue}}
}

// admitWait bounds how long a creator waits for its task.
const admitWait = 30 * time.Second

// Create validates c and has the task admit itself: TaskAdmit is started
// with its admission update (Update-with-Start), writes the record, makes
// the schedule and answers the task (running on a DEPLOYED enclave,
// pending with its schedule paused on one that is not yet).
func (s *Service) Create(ctx context.Context, account string, c tasks.Create) (tasks.Task, error) {
	t, err := s.Schedules.New(ctx, account, c)
	if err != nil {
		return t, err
	}
	if err := tasks.CheckInterval(t.Schedule, s.MinInterval); err != nil {
		return tasks.Task{}, err
	}
	// A full account is refused before anything starts; the record's
	// write checks again in its transaction (two creates at once).
	if s.Limit > 0 {
		n, err := s.Schedules.Store.Count(ctx, account, quota.Tasks)
		if err != nil {
			return tasks.Task{}, err
		}
		if n >= s.Limit {
			return tasks.Task{}, quota.Exceeded(quota.Tasks, n, s.Limit)
		}
	}
	tc := s.Schedules.Temporal
	waitCtx, cancel := context.WithTimeout(ctx, admitWait)
	defer cancel()
	start := tc.NewWithStartWorkflowOperation(client.StartWorkflowOptions{
		ID: workflows.TaskAdmitWorkflowID(t.ID), TaskQueue: workflows.TaskQueue,
		WorkflowIDReusePolicy:    enumspb.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE,
		WorkflowIDConflictPolicy: enumspb.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING,
	}, workflows.WfTaskAdmit, workflows.TaskAdmission{Task: t, AskedAt: time.Now(), Limit: s.Limit})
	out, err := temporalx.Admit[tasks.Task](waitCtx, tc, start, client.UpdateWorkflowOptions{UpdateName: workflows.TaskAdmitUpdate})
	var app *temporal.ApplicationError
	switch {
	case err == nil:
		return out, nil
	case errors.As(err, &app) && app.Type() == activities.ErrTaskScheduleRefused:
		return out, tasks.Invalid("schedule", "Temporal refused it: "+app.Message())
	case errors.As(err, &app) && app.Type() == activities.ErrTaskQuota:
		var used, limit int64
		_ = app.Details(&used, &limit)
		return out, quota.Exceeded(quota.Tasks, used, limit)
	default:
		logging.From(ctx).Error("a task could not be admitted", "task", t.ID, "err", err)
		return out, &errs.Error{Kind: errs.Unavailable, Msg: "the task's schedule could not be created now; try again shortly", RetryAfter: 5 * time.Second}
	}
}

// Load reads task id for account: another account's task does not exist
// for the caller, nor a deleted one unless deleted is allowed (a deleted
// task's runs stay readable).
func (s *Service) Load(ctx context.Context, account, id string, deleted bool) (tasks.Task, error) {
	t, err := s.Schedules.Store.Task(ctx, id)
	if errors.Is(err, store.ErrNotFound) || err == nil && (t.AccountID != account || t.Deleted && !deleted) {
		return t, tasks.NotFound(id)
	}
	return t, err
}

// List is the account's tasks, on one enclave and in one status when
// those are given.
func (s *Service) List(ctx context.Context, account, enclaveID, status string) ([]tasks.Task, error) {
	f := store.TaskFilter{EnclaveID: enclaveID, Status: tasks.Status(status)}
	if f.Status != "" && !slices.Contains(tasks.Statuses, f.Status) {
		return nil, errs.Invalidf("status must be running, stopped, failed or pending")
	}
	return s.Schedules.Store.Tasks(ctx, account, f)
}

// NextRuns answers the task's next fire times (none unless it runs); a
// schedule that cannot be read now leaves them unknown (empty), logged.
func (s *Service) NextRuns(ctx context.Context, t tasks.Task) []time.Time {
	next, err := s.Schedules.NextRuns(ctx, t)
	if err != nil {
		logging.From(ctx).Warn("a task's schedule could not be read", "task", t.ID, "err", err)
	}
	return next
}

// Update applies a patch (schedules.Service.Update).
func (s *Service) Update(ctx context.Context, t tasks.Task, pt tasks.Patch) (tasks.Task, error) {
	if pt.Schedule != nil {
		if err := tasks.CheckInterval(*pt.Schedule, s.MinInterval); err != nil {
			return t, err
		}
	}
	return s.Schedules.Update(ctx, t, pt)
}

// Delete removes the schedule and marks the task deleted; its runs stay.
func (s *Service) Delete(ctx context.Context, t tasks.Task) error {
	return s.Schedules.Delete(ctx, t.ID)
}

// Run fires the task once now, whatever its status (a stopped or failed
// task too, to try a fix), except while its enclave is not DEPLOYED.
func (s *Service) Run(ctx context.Context, t tasks.Task) error {
	if t.Status == tasks.Pending {
		e := errs.Conflictf("the task cannot run now: %s", t.StatusReason)
		e.Extra = map[string]any{"status": string(t.Status)}
		return e
	}
	return s.Schedules.Trigger(ctx, t, "")
}

// MaxRuns bounds a page of runs.
const MaxRuns = 500

// Runs lists the task's runs, newest first, of one outcome when given.
func (s *Service) Runs(ctx context.Context, t tasks.Task, outcome string, limit int) ([]tasks.Run, error) {
	if limit < 1 || limit > MaxRuns {
		return nil, errs.Invalidf("limit must be a whole number from 1 to %d", MaxRuns)
	}
	if outcome != "" && !slices.Contains(tasks.Outcomes, outcome) {
		return nil, errs.Invalidf("outcome must be success, failure, timeout or skipped")
	}
	return s.Schedules.Store.TaskRuns(ctx, t.ID, outcome, limit)
}
