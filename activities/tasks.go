package activities

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"conduit/internal/enclaves"
	"conduit/internal/errs"
	"conduit/internal/quota"
	"conduit/internal/store"
	"conduit/internal/tasks"
	"conduit/internal/tasks/schedules"
	"conduit/internal/telemetry"
)

// Tasks are the side effects of scheduled tasks (docs/tasks.md): the call
// into the enclave's application, the run's record, and keeping the
// schedules of an enclave's tasks in step with the enclave.
type Tasks struct {
	Store     *store.Store
	Schedules *schedules.Service
	// HTTP calls the applications (nil: a client that follows no
	// redirects: a task calls its own enclave and nothing else).
	HTTP *http.Client
}

// TaskCall is one firing to carry out.
type TaskCall struct {
	TaskID      string
	RunID       string
	ScheduledAt time.Time
}

// Call sends the task's request to its enclave's application and answers
// the run: success on a 2xx within the timeout, timeout when it took
// longer, failure otherwise, skipped when the enclave is not DEPLOYED or
// the task was deleted. It never retries (a request to an application
// need not be idempotent): the workflow records whatever happened.
func (a *Tasks) Call(ctx context.Context, in TaskCall) (tasks.Run, error) {
	run := tasks.Run{ID: in.RunID, TaskID: in.TaskID, ScheduledAt: in.ScheduledAt, StartedAt: time.Now().UTC()}
	skip := func(why string) (tasks.Run, error) {
		run.Outcome, run.Result = tasks.Skipped, why
		return run, nil
	}
	t, err := a.Store.Task(ctx, in.TaskID)
	if errors.Is(err, store.ErrNotFound) {
		return skip("the task does not exist")
	}
	if err != nil {
		return run, err
	}
	if t.Deleted {
		return skip("the task was deleted")
	}
	e, err := a.Store.Enclave(ctx, t.EnclaveID)
	if errors.Is(err, store.ErrNotFound) {
		return skip("the enclave no longer exists")
	}
	if err != nil {
		return run, err
	}
	if e.Status != enclaves.Deployed || e.Endpoint == "" {
		return skip(fmt.Sprintf("the enclave is %s, not DEPLOYED; nothing was called", e.Status))
	}
	r := t.Request
	timeout := time.Duration(r.TimeoutSeconds) * time.Second
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var body io.Reader
	if r.Body != "" {
		body = strings.NewReader(r.Body)
	}
	req, err := http.NewRequestWithContext(cctx, r.Method, "http://"+e.Endpoint+r.Path, body)
	if err != nil {
		run.Outcome, run.Result = tasks.Failure, "the request could not be built: "+err.Error()
		return run, nil
	}
	for k, v := range r.Headers {
		req.Header.Set(k, v)
	}
	if r.Body != "" && req.Header.Get("Content-Type") == "" {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("User-Agent", "conduit-tasks/1")
	req.Header.Set("X-Conduit-Task-Id", t.ID)
	req.Header.Set("X-Conduit-Run-Id", in.RunID)
	req.Header.Set("X-Conduit-Scheduled-Time", in.ScheduledAt.UTC().Format(time.RFC3339))
	// Heartbeats tell Temporal the worker still waits on the app: a lost
	// worker's call is recorded as failed within the heartbeat timeout,
	// not after the longest request timeout.
	stop := heartbeat(ctx)
	defer stop()
	start := time.Now()
	resp, err := a.client().Do(req)
	if err == nil {
		var b []byte
		b, err = io.ReadAll(io.LimitReader(resp.Body, 4*tasks.MaxResult+4))
		resp.Body.Close()
		run.HTTPStatus = resp.StatusCode
		run.Result, run.Truncated = tasks.Truncate(string(b))
		if len(b) > 4*tasks.MaxResult {
			run.Truncated = true
		}
	}
	run.DurationMs = time.Since(start).Milliseconds()
	switch {
	case err != nil && errors.Is(cctx.Err(), context.DeadlineExceeded):
		run.Outcome, run.Result = tasks.Timeout, fmt.Sprintf("no answer within %ds", r.TimeoutSeconds)
	case err != nil:
		run.Outcome, run.Result = tasks.Failure, "the application could not be reached: "+err.Error()
	case run.HTTPStatus >= 200 && run.HTTPStatus < 300:
		run.Outcome = tasks.Success
	default:
		run.Outcome = tasks.Failure
	}
	return run, nil
}

func (a *Tasks) client() *http.Client {
	if a.HTTP != nil {
		return a.HTTP
	}
	return &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

// Record writes the run (once), the task's lastRun, and the enclave's
// lambda log entry; when the task's consecutive failures reach its
// threshold it moves the task to failed and pauses its schedule with a
// note. It answers the task's status after the run.
func (a *Tasks) Record(ctx context.Context, run tasks.Run) (tasks.Status, error) {
	t, err := a.Store.Task(ctx, run.TaskID)
	if errors.Is(err, store.ErrNotFound) {
		return "", nil // nothing to record against
	}
	if err != nil {
		return "", err
	}
	what := run.Outcome
	if run.HTTPStatus != 0 {
		what += fmt.Sprintf(", HTTP %d", run.HTTPStatus)
	}
	msg := fmt.Sprintf("task %q (%s) run %s: %s in %d ms", t.Name, t.ID, run.ID, what, run.DurationMs)
	if run.Result != "" {
		short, _ := tasks.Truncate(run.Result)
		if len(short) > 200 {
			short = short[:200] + "…"
		}
		msg += ": " + short
	}
	stream := "stdout"
	if tasks.Counts(run.Outcome) {
		stream = "stderr"
	}
	t, recorded, err := a.Store.RecordTaskRun(ctx, run, t.EnclaveID, store.EnclaveLog{Source: tasks.ScheduleID(t.ID), Stream: stream, Message: msg})
	if err != nil {
		return "", err
	}
	if recorded {
		telemetry.TaskFiring(run.Outcome)
	}
	// Checked on a retried step too: moving to failed happens once.
	if tasks.Counts(run.Outcome) && t.Status == tasks.Running && t.ConsecutiveFailures >= t.FailureThreshold {
		reason := fmt.Sprintf("paused after %d consecutive failed runs (the last: %s)", t.ConsecutiveFailures, what)
		failed, moved, err := a.Schedules.Fail(ctx, t.ID, reason)
		if err != nil {
			return "", err
		}
		if moved {
			activity.GetLogger(ctx).Warn("a task failed and its schedule paused", "task", t.ID, "failures", t.ConsecutiveFailures)
		}
		t = failed
	}
	return t.Status, nil
}

// TaskSync is an enclave's move.
type TaskSync struct {
	EnclaveID string
	Status    enclaves.Status
}

// SyncEnclave moves the enclave's tasks with it: running while it is
// DEPLOYED (their schedules unpaused), pending otherwise (paused).
func (a *Tasks) SyncEnclave(ctx context.Context, in TaskSync) (int, error) {
	return a.Schedules.SyncEnclave(ctx, in.EnclaveID, in.Status)
}

// TaskOpen is the admission's first step: the task's record, written
// until AdmitBy.
type TaskOpen struct {
	Task    tasks.Task
	AdmitBy time.Time
	// Limit is the account's limit of tasks (0: none; histories from
	// before quotas).
	Limit int64 `json:",omitempty"`
}

// Error types of the task admission's steps.
const (
	// ErrTaskAdmitTooLate: the record was not written in time; nothing
	// was made.
	ErrTaskAdmitTooLate = "TaskAdmissionExpired"
	// ErrTaskScheduleRefused: Temporal refused the schedule's spec; the
	// record was removed.
	ErrTaskScheduleRefused = "TaskScheduleRefused"
	// ErrTaskQuota: the account holds its limit of tasks; nothing was
	// written. Its details are the use and the limit.
	ErrTaskQuota = "TaskQuotaExceeded"
)

// Open writes the task's record (schedules.Service.Open).
func (a *Tasks) Open(ctx context.Context, in TaskOpen) (tasks.Task, error) {
	t, err := a.Schedules.Open(ctx, in.Task, in.AdmitBy, in.Limit)
	if errors.Is(err, schedules.ErrAdmitTooLate) {
		return t, temporal.NewNonRetryableApplicationError(err.Error(), ErrTaskAdmitTooLate, nil)
	}
	if e, ok := errs.As(err); ok && e.Code == quota.Code {
		return t, temporal.NewNonRetryableApplicationError(e.Msg, ErrTaskQuota, nil, e.Extra["used"], e.Extra["limit"])
	}
	return t, err
}

// Schedule makes the schedule of the task Open wrote
// (schedules.Service.Establish).
func (a *Tasks) Schedule(ctx context.Context, id string) (tasks.Task, error) {
	t, err := a.Schedules.Establish(ctx, id)
	var refused *schedules.ErrScheduleRefused
	if errors.As(err, &refused) {
		return t, temporal.NewNonRetryableApplicationError(refused.Reason, ErrTaskScheduleRefused, nil)
	}
	return t, err
}

// Withdraw removes the record of a task whose schedule could not be made.
func (a *Tasks) Withdraw(ctx context.Context, id string) error { return a.Schedules.Withdraw(ctx, id) }
