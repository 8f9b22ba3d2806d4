// Package schedules keeps each task's Temporal Schedule (task/<id>) in
// step with its record: it creates, updates, pauses, unpauses, triggers,
// backfills and deletes schedules, and moves the record's status with
// them. The frontend and the worker's activities share it, so one set of
// rules decides whether a schedule fires: it is unpaused exactly while the
// task is running, and a task runs only while its enclave is DEPLOYED.
package schedules

import (
	"context"
	"errors"
	"fmt"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"conduit/internal/enclaves"
	"conduit/internal/errs"
	"conduit/internal/quota"
	"conduit/internal/store"
	"conduit/internal/tasks"
)

// Service is the task rules on the store and a Temporal client.
type Service struct {
	Store    *store.Store
	Temporal client.Client
	// Workflow and Queue name the TaskRun workflow and its task queue
	// (workflows.WfTaskRun, workflows.TaskQueue).
	Workflow string
	Queue    string
}

// Search attributes the schedules and their runs carry (registered with
// the enclave workflows' attributes).
var (
	attrEnclave = temporal.NewSearchAttributeKeyKeyword("EnclaveId")
	attrAccount = temporal.NewSearchAttributeKeyKeyword("Account")
)

var overlaps = map[string]enumspb.ScheduleOverlapPolicy{
	"skip":            enumspb.SCHEDULE_OVERLAP_POLICY_SKIP,
	"buffer_one":      enumspb.SCHEDULE_OVERLAP_POLICY_BUFFER_ONE,
	"buffer_all":      enumspb.SCHEDULE_OVERLAP_POLICY_BUFFER_ALL,
	"cancel_other":    enumspb.SCHEDULE_OVERLAP_POLICY_CANCEL_OTHER,
	"terminate_other": enumspb.SCHEDULE_OVERLAP_POLICY_TERMINATE_OTHER,
	"allow_all":       enumspb.SCHEDULE_OVERLAP_POLICY_ALLOW_ALL,
}

// Overlap is an overlap policy by its API name (false when unknown).
func Overlap(name string) (enumspb.ScheduleOverlapPolicy, bool) {
	p, ok := overlaps[name]
	return p, ok
}

// Spec is a task's schedule spec: its cron expression or interval, in
// its time zone, with its jitter.
func Spec(t tasks.Task) (client.ScheduleSpec, error) {
	p, err := tasks.ParseSchedule(t.Schedule)
	if err != nil {
		return client.ScheduleSpec{}, tasks.Invalid("schedule", err.Error())
	}
	s := client.ScheduleSpec{TimeZoneName: t.Timezone, Jitter: time.Duration(t.JitterSeconds) * time.Second}
	if p.Every > 0 {
		s.Intervals = []client.ScheduleIntervalSpec{{Every: p.Every}}
	} else {
		s.CronExpressions = []string{p.Cron}
	}
	return s, nil
}

// action is what every firing starts: the TaskRun workflow, its memo
// naming the task.
func (s *Service) action(t tasks.Task) *client.ScheduleWorkflowAction {
	return &client.ScheduleWorkflowAction{
		ID: tasks.RunWorkflowID(t.ID), Workflow: s.Workflow, Args: []any{tasks.RunInput{TaskID: t.ID}}, TaskQueue: s.Queue,
		// The request's own timeout bounds the call; this bounds the run.
		WorkflowExecutionTimeout: time.Duration(t.Request.TimeoutSeconds)*time.Second + 5*time.Minute,
		Memo:                     map[string]any{"taskId": t.ID, "taskName": t.Name, "enclaveId": t.EnclaveID},
		TypedSearchAttributes:    temporal.NewSearchAttributes(attrEnclave.ValueSet(t.EnclaveID), attrAccount.ValueSet(t.AccountID)),
	}
}

func policy(t tasks.Task) (enumspb.ScheduleOverlapPolicy, time.Duration) {
	return overlaps[t.Overlap], time.Duration(t.CatchupSeconds) * time.Second
}

func (s *Service) handle(id string) client.ScheduleHandle {
	return s.Temporal.ScheduleClient().GetHandle(context.Background(), tasks.ScheduleID(id))
}

// unavailable is the 503 of a Temporal call that failed.
func unavailable(what string, err error) error {
	e := &errs.Error{Kind: errs.Unavailable, Msg: "the task's schedule could not be " + what + " now; try again shortly", RetryAfter: 5 * time.Second}
	return errors.Join(e, err)
}

// scheduleInvalid maps Temporal's refusal of a spec (a cron expression
// its parser rejects) to the caller's 400 on the schedule field.
func scheduleInvalid(err error) error {
	var bad *serviceerror.InvalidArgument
	if errors.As(err, &bad) {
		return tasks.Invalid("schedule", "Temporal refused it: "+bad.Message)
	}
	return nil
}

// desired is the status a task that should run has while its enclave is
// in st, with the reason when it cannot run.
func desired(st enclaves.Status) (tasks.Status, string) {
	switch st {
	case enclaves.Deployed:
		return tasks.Running, ""
	case enclaves.Destroyed, enclaves.Failed:
		return tasks.Pending, fmt.Sprintf("the enclave is %s; this task can never run again (delete it)", st)
	case "":
		return tasks.Pending, "the enclave no longer exists; this task can never run again (delete it)"
	}
	return tasks.Pending, fmt.Sprintf("waiting for the enclave to be DEPLOYED (it is %s)", st)
}

// New validates c against the account's enclave and answers the task it
// would create (a fresh id, its status from the enclave's state), without
// writing anything: the task admits itself (workflows.TaskAdmit) by
// writing the record (Open) and then its schedule (Establish).
func (s *Service) New(ctx context.Context, account string, c tasks.Create) (tasks.Task, error) {
	if err := c.Validate(); err != nil {
		return tasks.Task{}, err
	}
	e, err := s.Store.Enclave(ctx, c.EnclaveID)
	if errors.Is(err, store.ErrNotFound) || err == nil && e.AccountID != account {
		return tasks.Task{}, tasks.Invalid("enclaveId", fmt.Sprintf("you have no enclave %q", c.EnclaveID))
	}
	if err != nil {
		return tasks.Task{}, err
	}
	if e.Status == enclaves.Destroyed || e.Status == enclaves.Failed {
		x := errs.Conflictf("the enclave is %s: a task on it could never run", e.Status)
		x.Extra = map[string]any{"enclaveStatus": string(e.Status)}
		return tasks.Task{}, x
	}
	t := tasks.Task{ID: store.NewTaskID(), AccountID: account, EnclaveID: c.EnclaveID, Name: c.Name, Description: c.Description,
		Schedule: c.Schedule, Timezone: c.Timezone, Request: *c.Request, Overlap: c.Overlap, CatchupSeconds: *c.CatchupWindowSeconds,
		JitterSeconds: *c.JitterSeconds, FailureThreshold: *c.FailureThreshold}
	t.Status, t.StatusReason = desired(e.Status)
	if c.Status == string(tasks.Stopped) {
		t.Status, t.StatusReason = tasks.Stopped, "created stopped"
	}
	if _, err := Spec(t); err != nil {
		return tasks.Task{}, err
	}
	return t, nil
}

// ErrAdmitTooLate says Open came after its creator stopped waiting and
// wrote nothing.
var ErrAdmitTooLate = errors.New("the task was admitted after its creator stopped waiting; nothing was made")

// Open writes the task's record (the admission's first step). Run again it
// answers the record already written; a record not yet written after
// admitBy (zero: any time) is not written (ErrAdmitTooLate), nor one
// past the account's limit of tasks (limit 0: none), which is refused
// with quota.Exceeded: the count and the insert share one transaction,
// so two creates cannot both take the last place.
func (s *Service) Open(ctx context.Context, t tasks.Task, admitBy time.Time, limit int64) (tasks.Task, error) {
	got, err := s.Store.Task(ctx, t.ID)
	if err == nil || !errors.Is(err, store.ErrNotFound) {
		return got, err
	}
	if !admitBy.IsZero() && time.Now().After(admitBy) {
		return got, ErrAdmitTooLate
	}
	slot, err := s.Store.TakeSlot(ctx, t.AccountID, quota.Tasks, limit)
	if err != nil {
		return got, err
	}
	defer slot.Release(ctx)
	return slot.CreateTask(ctx, t)
}

// ErrScheduleRefused wraps Temporal's refusal of a task's spec (a cron
// expression its parser rejects): Establish removed the record.
type ErrScheduleRefused struct{ Reason string }

func (e *ErrScheduleRefused) Error() string { return "Temporal refused the schedule: " + e.Reason }

// Establish makes the schedule of the task Open wrote (paused unless the
// task runs; one already made by an earlier attempt is kept) and brings
// the task in line with its enclave, which may have moved since New read
// it. A spec Temporal refuses removes the record: no schedule, no task.
func (s *Service) Establish(ctx context.Context, id string) (tasks.Task, error) {
	t, err := s.Store.Task(ctx, id)
	if err != nil {
		return t, err
	}
	spec, err := Spec(t)
	if err == nil {
		err = s.create(ctx, t, spec)
	}
	var bad *serviceerror.InvalidArgument
	switch {
	case err == nil, errors.Is(err, temporal.ErrScheduleAlreadyRunning):
	case errors.As(err, &bad):
		if err := s.Store.PurgeTask(ctx, id); err != nil {
			return t, err
		}
		return t, &ErrScheduleRefused{Reason: bad.Message}
	default:
		return t, err
	}
	return s.Reconcile(ctx, id)
}

// Withdraw removes the record of a task whose schedule could not be made.
func (s *Service) Withdraw(ctx context.Context, id string) error { return s.Store.PurgeTask(ctx, id) }

// create makes the task's schedule, paused unless the task runs.
func (s *Service) create(ctx context.Context, t tasks.Task, spec client.ScheduleSpec) error {
	overlap, catchup := policy(t)
	_, err := s.Temporal.ScheduleClient().Create(ctx, client.ScheduleOptions{
		ID: tasks.ScheduleID(t.ID), Spec: spec, Action: s.action(t), Overlap: overlap, CatchupWindow: catchup,
		Paused: t.Status != tasks.Running, Note: note(t),
		Memo:                  map[string]any{"taskId": t.ID, "taskName": t.Name, "enclaveId": t.EnclaveID, "account": t.AccountID},
		TypedSearchAttributes: temporal.NewSearchAttributes(attrEnclave.ValueSet(t.EnclaveID), attrAccount.ValueSet(t.AccountID)),
	})
	return err
}

func note(t tasks.Task) string {
	if t.StatusReason != "" {
		return string(t.Status) + ": " + t.StatusReason
	}
	return string(t.Status)
}

// Reconcile brings a running or pending task in line with its enclave's
// current state (running while DEPLOYED, pending otherwise) and makes its
// schedule's paused state follow. stopped and failed tasks stay as they
// are: only their owner moves them.
func (s *Service) Reconcile(ctx context.Context, id string) (tasks.Task, error) {
	t, err := s.Store.Task(ctx, id)
	if err != nil || t.Deleted {
		return t, err
	}
	var st enclaves.Status
	if e, err := s.Store.Enclave(ctx, t.EnclaveID); err == nil {
		st = e.Status
	} else if !errors.Is(err, store.ErrNotFound) {
		return t, err
	}
	return s.follow(ctx, t, st)
}

func (s *Service) follow(ctx context.Context, t tasks.Task, st enclaves.Status) (tasks.Task, error) {
	if t.Status == tasks.Running || t.Status == tasks.Pending {
		to, reason := desired(st)
		if to != t.Status || reason != t.StatusReason {
			moved, ok, err := s.Store.MoveTask(ctx, t.ID, []tasks.Status{t.Status}, to, reason, false)
			if err != nil {
				return t, err
			}
			if !ok { // another writer moved it first; its own sync follows
				return moved, nil
			}
			t = moved
		}
	}
	return t, s.apply(ctx, t)
}

// apply makes the schedule's paused state follow the task's status.
func (s *Service) apply(ctx context.Context, t tasks.Task) error {
	h := s.handle(t.ID)
	d, err := h.Describe(ctx)
	var nf *serviceerror.NotFound
	if errors.As(err, &nf) {
		// Deleted behind the record's back (in the Temporal UI, say): the
		// record is the truth, so the schedule is made again from it.
		spec, err := Spec(t)
		if err == nil {
			err = s.create(ctx, t, spec)
		}
		if err != nil {
			return unavailable("made again", err)
		}
		return nil
	}
	if err != nil {
		return unavailable("read", err)
	}
	want := t.Status != tasks.Running
	if d.Schedule.State.Paused == want && d.Schedule.State.Note == note(t) {
		return nil
	}
	if want {
		err = h.Pause(ctx, client.SchedulePauseOptions{Note: note(t)})
	} else {
		err = h.Unpause(ctx, client.ScheduleUnpauseOptions{Note: note(t)})
	}
	if err != nil {
		return unavailable("changed", err)
	}
	return nil
}

// SyncEnclave follows an enclave's move to st with every task on it (the
// enclave workflow calls it on DEPLOYED, PAUSING, PAUSED,
// PENDING_DESTROY, DESTROYED and FAILED).
func (s *Service) SyncEnclave(ctx context.Context, enclaveID string, st enclaves.Status) (int, error) {
	ts, err := s.Store.EnclaveTasks(ctx, enclaveID)
	if err != nil {
		return 0, err
	}
	var all []error
	for _, t := range ts {
		if _, err := s.follow(ctx, t, st); err != nil {
			all = append(all, fmt.Errorf("task %s: %w", t.ID, err))
		}
	}
	return len(ts), errors.Join(all...)
}

// Update applies a patch: the spec changes the schedule in place (its
// paused state untouched), status stopped pauses it, running resumes it
// (pending until the enclave is DEPLOYED; 409 when it never will be).
func (s *Service) Update(ctx context.Context, t tasks.Task, pt tasks.Patch) (tasks.Task, error) {
	if err := pt.Validate(); err != nil {
		return t, err
	}
	spec, err := pt.Apply(t)
	if err != nil {
		return t, err
	}
	next := t
	next.Name, next.Description, next.Schedule, next.Timezone, next.Request = spec.Name, spec.Description, spec.Schedule, spec.Timezone, *spec.Request
	next.Overlap, next.CatchupSeconds, next.JitterSeconds, next.FailureThreshold = spec.Overlap, *spec.CatchupWindowSeconds, *spec.JitterSeconds, *spec.FailureThreshold
	sspec, err := Spec(next)
	if err != nil {
		return t, err
	}
	if pt.Status != nil && *pt.Status == string(tasks.Running) {
		e, err := s.Store.Enclave(ctx, t.EnclaveID)
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			return t, err
		}
		if _, reason := desired(e.Status); e.Status == enclaves.Destroyed || e.Status == enclaves.Failed || errors.Is(err, store.ErrNotFound) {
			x := errs.Conflictf("the task cannot run: %s", reason)
			x.Extra = map[string]any{"status": string(t.Status)}
			return t, x
		}
	}
	if spec.Changed(t) {
		overlap, catchup := policy(next)
		err := s.handle(t.ID).Update(ctx, client.ScheduleUpdateOptions{DoUpdate: func(in client.ScheduleUpdateInput) (*client.ScheduleUpdate, error) {
			sch := in.Description.Schedule
			sch.Spec = &sspec
			sch.Action = s.action(next)
			if sch.Policy == nil {
				sch.Policy = &client.SchedulePolicies{}
			}
			sch.Policy.Overlap, sch.Policy.CatchupWindow = overlap, catchup
			return &client.ScheduleUpdate{Schedule: &sch}, nil
		}})
		var nf *serviceerror.NotFound
		gone := errors.As(err, &nf) // made again from the record below
		if err != nil && !gone {
			if bad := scheduleInvalid(err); bad != nil {
				return t, bad
			}
			return t, unavailable("updated", err)
		}
		if t, err = s.Store.SaveTaskSpec(ctx, next); err != nil {
			return t, err
		}
		if gone && pt.Status == nil {
			return t, s.apply(ctx, t)
		}
	}
	if pt.Status == nil {
		return t, nil
	}
	switch tasks.Status(*pt.Status) {
	case tasks.Stopped:
		moved, _, err := s.Store.MoveTask(ctx, t.ID, tasks.Statuses, tasks.Stopped, "stopped by its owner", false)
		if err != nil {
			return t, err
		}
		return moved, s.apply(ctx, moved)
	default: // running
		if t.Status != tasks.Running && t.Status != tasks.Pending {
			// Resuming starts a fresh count of failures.
			if t, _, err = s.Store.MoveTask(ctx, t.ID, []tasks.Status{tasks.Stopped, tasks.Failed}, tasks.Pending, "resuming", true); err != nil {
				return t, err
			}
		}
		return s.Reconcile(ctx, t.ID)
	}
}

// Delete removes the schedule (runs under way finish) and marks the task
// deleted; its runs stay readable.
func (s *Service) Delete(ctx context.Context, id string) error {
	err := s.handle(id).Delete(ctx)
	var nf *serviceerror.NotFound
	if err != nil && !errors.As(err, &nf) {
		return unavailable("deleted", err)
	}
	_, err = s.Store.DeleteTask(ctx, id)
	return err
}

// Trigger fires the task now, whatever its state, with the given overlap
// policy ("" is the task's own).
func (s *Service) Trigger(ctx context.Context, t tasks.Task, overlap string) error {
	p, _ := policy(t)
	if overlap != "" {
		var ok bool
		if p, ok = overlaps[overlap]; !ok {
			return tasks.Invalid("overlap", "must be one of skip, buffer_one, buffer_all, cancel_other, terminate_other, allow_all")
		}
	}
	if err := s.handle(t.ID).Trigger(ctx, client.ScheduleTriggerOptions{Overlap: p}); err != nil {
		return unavailable("triggered", err)
	}
	return nil
}

// Backfill runs the firings the spec has in [from, to) now, as if they
// had happened ("" overlap: buffer_all, one after another). Temporal's
// range includes its end, so the end sent is to less a millisecond.
func (s *Service) Backfill(ctx context.Context, id string, from, to time.Time, overlap string) error {
	if overlap == "" {
		overlap = "buffer_all"
	}
	p, ok := overlaps[overlap]
	if !ok {
		return tasks.Invalid("overlap", "must be one of skip, buffer_one, buffer_all, cancel_other, terminate_other, allow_all")
	}
	if !from.Before(to) {
		return tasks.Invalid("from", "must be before to")
	}
	if err := s.handle(id).Backfill(ctx, client.ScheduleBackfillOptions{Backfill: []client.ScheduleBackfill{{Start: from, End: to.Add(-time.Millisecond), Overlap: p}}}); err != nil {
		return unavailable("backfilled", err)
	}
	return nil
}

// NextRuns answers the schedule's next n fire times (none unless it runs).
func (s *Service) NextRuns(ctx context.Context, t tasks.Task) ([]time.Time, error) {
	if t.Status != tasks.Running {
		return []time.Time{}, nil
	}
	d, err := s.handle(t.ID).Describe(ctx)
	if err != nil {
		return nil, err
	}
	out := d.Info.NextActionTimes
	if len(out) > tasks.NextRuns {
		out = out[:tasks.NextRuns]
	}
	return out, nil
}

// Fail moves a running task to failed and pauses its schedule with the
// reason (the run that reached the threshold calls it).
func (s *Service) Fail(ctx context.Context, id, reason string) (tasks.Task, bool, error) {
	t, ok, err := s.Store.MoveTask(ctx, id, []tasks.Status{tasks.Running}, tasks.Failed, reason, false)
	if err != nil || !ok {
		return t, ok, err
	}
	return t, true, s.apply(ctx, t)
}
