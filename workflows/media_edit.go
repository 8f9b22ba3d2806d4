package workflows

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"conduit/activities"
	"conduit/internal/media"
	"conduit/internal/money"
	"conduit/internal/pricing"
	"conduit/internal/store"
)

// MediaEditWorkflowID is the workflow of one library job (an import, an
// assembly or an edit): derived from the job id, so Temporal refuses a
// second workflow for the same job.
func MediaEditWorkflowID(jobID string) string { return "media-edit/" + jobID }

// Job stages, answered by StageQuery while a job runs.
const (
	StageOpening = "opening"
	StageWorking = "working"
)

// MediaJobInput is one library job, as checked by the library
// (internal/library): the row to record with its hold, the item it makes
// and its work.
type MediaJobInput struct {
	Job    MediaJob
	ItemID string
	URL    string
	Spec   media.EditSpec
	// Timeout bounds the work across attempts; HeartbeatTimeout is how
	// long an attempt may go silent before another worker takes over.
	Timeout          time.Duration
	HeartbeatTimeout time.Duration
	// Rate prices the job by the seconds of media it makes (the held
	// Job.Price is the Rate of the longest output it may make); unset on
	// jobs admitted before jobs were metered, which cost Job.Price.
	Rate pricing.JobRate
	// MaxBytes and MaxSeconds cap the output while the job works (the
	// library refused requests over them before admitting the job).
	MaxBytes   int64   `json:",omitempty"`
	MaxSeconds float64 `json:",omitempty"`
}

// MediaJob is the job a media edit records: the workflow's own type,
// with the fields of store.NewMediaJob in its order, so its JSON — what
// recorded histories hold — is the same (the conversion to it in admit
// stops compiling if the two ever differ).
type MediaJob struct {
	ID          string
	AccountID   string
	Kind        string
	Operation   string
	SourceItems []string
	SourceURL   string
	Params      json.RawMessage
	// Price is held from the account's credit with the job.
	Price          money.Micros
	IdempotencyKey string
	RequestHash    string
	CreatedAt      time.Time
	// ReserveBytes, QuotaBytes and MaxRunning are the account's share of
	// the library the job is admitted within (store.NewMediaJob).
	ReserveBytes int64 `json:",omitempty"`
	QuotaBytes   int64 `json:",omitempty"`
	MaxRunning   int   `json:",omitempty"`
}

// JobRequest is what each caller's admission update carries: the hash of
// its request, which an Idempotency-Key is bound to.
type JobRequest struct {
	RequestHash string
}

// JobAdmission answers the admission update: accepted (Job, possibly an
// Existing one), or why not.
type JobAdmission struct {
	Accepted bool
	Existing bool
	Job      store.MediaJob
	// Conflict: the Idempotency-Key names another request's job.
	Conflict bool
	// Insufficient: the balance (Balance) cannot cover Price.
	Insufficient bool
	Balance      money.Micros
	Price        money.Micros
	// Missing source items (not the account's, or deleted meanwhile).
	Missing []string
	// Expired: the workflow ran too late to admit (AdmitWithin).
	Expired bool
	// Busy: the account has its share of jobs running already.
	Busy bool `json:",omitempty"`
	// OverQuota: the job's output could overrun the account's library
	// quota (Used bytes stored, Reserved by running jobs, of Quota).
	OverQuota *store.OverQuota `json:",omitempty"`
}

// MediaEdit runs one library job: its first step records the job and holds
// its price (answering the admission update the API started it with), the
// work runs on the bounded render work queue with heartbeats and bounded
// retries, and the last step records the outcome with its money in one
// transaction — the item in the library and the price charged, or the
// error and the hold released. A success that cannot be recorded is
// recorded as a failure and its file removed: nothing is half-written.
func MediaEdit(ctx workflow.Context, in MediaJobInput) error {
	var admission *JobAdmission
	var admitErr error
	if err := workflow.SetUpdateHandler(ctx, AdmissionUpdate, func(ctx workflow.Context, req JobRequest) (JobAdmission, error) {
		if err := workflow.Await(ctx, func() bool { return admission != nil || admitErr != nil }); err != nil {
			return JobAdmission{}, err
		}
		if admitErr != nil {
			return JobAdmission{}, admitErr
		}
		// A retry with the same Idempotency-Key but another request,
		// while this job runs.
		if req.RequestHash != in.Job.RequestHash {
			return JobAdmission{Conflict: true, Job: admission.Job}, nil
		}
		return *admission, nil
	}); err != nil {
		return err
	}
	stage := StageOpening
	if err := workflow.SetQueryHandler(ctx, StageQuery, func() (string, error) { return stage, nil }); err != nil {
		return err
	}
	defer func() { _ = workflow.Await(ctx, func() bool { return workflow.AllHandlersFinished(ctx) }) }()

	short := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: time.Minute, RetryPolicy: ShortRetry})
	adm, err := admitJob(ctx, short, in)
	if err != nil {
		admitErr = err
		return err
	}
	admission = &adm
	if !adm.Accepted || adm.Existing {
		status := StatusRefused
		if adm.Existing {
			status = StatusDuplicate
		}
		_ = workflow.UpsertTypedSearchAttributes(ctx, AttrRunStatus.ValueSet(status))
		return nil
	}

	stage = StageWorking
	// Version 1: the library's own work queue, and metering.
	queue, metered := RenderWorkQueue, false
	if workflow.GetVersion(ctx, ChangeMeteredMediaJobs, workflow.DefaultVersion, 1) >= 1 {
		queue, metered = LibraryWorkQueue, !in.Rate.Zero()
	}
	work := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		TaskQueue:              queue,
		ScheduleToCloseTimeout: in.Timeout,
		StartToCloseTimeout:    in.Timeout,
		HeartbeatTimeout:       in.HeartbeatTimeout,
		RetryPolicy: &temporal.RetryPolicy{InitialInterval: time.Second, MaximumInterval: 10 * time.Second, MaximumAttempts: 3,
			NonRetryableErrorTypes: []string{activities.ErrTypeMediaJob}},
	})
	var item store.MediaItem
	workErr := workflow.ExecuteActivity(work, ActRunMediaJob, activities.MediaJobWork{
		JobID: in.Job.ID, AccountID: in.Job.AccountID, ItemID: in.ItemID, Kind: in.Job.Kind, URL: in.URL, Sources: in.Job.SourceItems, Spec: in.Spec,
		MaxBytes: in.MaxBytes, MaxSeconds: in.MaxSeconds,
	}).Get(ctx, &item)

	stage = StageRecording
	res := store.MediaJobResult{JobID: in.Job.ID, FinishedAt: workflow.Now(ctx)}
	status := StatusSuccess
	if workErr != nil {
		res.Error, status = jobFailure(workErr), StatusError
		// A job that ran out its time has used its slot all along: it
		// pays for what it encoded (at least the minimum), not nothing.
		if secs, ok := timedOut(workErr); ok && metered {
			c := min(in.Rate.Charge(secs), in.Job.Price)
			res.Charge = &c
			res.Error += fmt.Sprintf("; charged %s USD for the work done before the deadline (%.1f s of media encoded)", c, secs)
		}
	} else {
		res.Item = &item
		if metered {
			secs := 0.0
			if item.Duration != nil {
				secs = item.Duration.Seconds()
			}
			c := min(in.Rate.Charge(secs), in.Job.Price)
			res.Charge = &c
		}
	}
	if err := workflow.ExecuteActivity(short, ActFinishMediaJob, activities.FinishJobInput{Result: res}).Get(ctx, nil); err != nil {
		// The outcome cannot be recorded as it is: record a failure, which
		// releases the hold, and remove the file nobody will list.
		status = StatusError
		failed := store.MediaJobResult{JobID: in.Job.ID, Error: "the job's result could not be recorded; nothing was charged", FinishedAt: res.FinishedAt}
		if err := workflow.ExecuteActivity(short, ActFinishMediaJob, activities.FinishJobInput{Result: failed, Discard: item.BlobKey}).Get(ctx, nil); err != nil {
			_ = workflow.UpsertTypedSearchAttributes(ctx, AttrRunStatus.ValueSet(status))
			return err
		}
	}
	_ = workflow.UpsertTypedSearchAttributes(ctx, AttrRunStatus.ValueSet(status))
	return nil
}

// admitJob records the job and its hold, or says why not.
func admitJob(ctx, short workflow.Context, in MediaJobInput) (JobAdmission, error) {
	if workflow.Now(ctx).Sub(in.Job.CreatedAt) > AdmitWithin {
		return JobAdmission{Expired: true}, nil
	}
	var opened activities.OpenedJob
	if err := workflow.ExecuteActivity(short, ActOpenMediaJob, store.NewMediaJob(in.Job)).Get(ctx, &opened); err != nil {
		return JobAdmission{}, err
	}
	switch {
	case opened.Busy:
		return JobAdmission{Busy: true}, nil
	case opened.OverQuota != nil:
		return JobAdmission{OverQuota: opened.OverQuota}, nil
	case opened.Insufficient:
		return JobAdmission{Insufficient: true, Balance: opened.Balance, Price: in.Job.Price}, nil
	case len(opened.Missing) > 0:
		return JobAdmission{Missing: opened.Missing}, nil
	case opened.Conflict:
		return JobAdmission{Conflict: true, Job: opened.Job}, nil
	}
	return JobAdmission{Accepted: true, Existing: opened.Existing, Job: opened.Job}, nil
}

// timedOut says the work reached the job's own deadline (not a lost
// worker's heartbeat timeout), and how many seconds of media its attempts
// encoded by then, as their last heartbeat said (activities.JobProgress;
// 0 without one).
func timedOut(err error) (float64, bool) {
	var te *temporal.TimeoutError
	if !errors.As(err, &te) {
		return 0, false
	}
	switch te.TimeoutType() {
	case enumspb.TIMEOUT_TYPE_SCHEDULE_TO_CLOSE, enumspb.TIMEOUT_TYPE_START_TO_CLOSE:
	default:
		return 0, false
	}
	var p activities.JobProgress
	if te.HasLastHeartbeatDetails() && te.LastHeartbeatDetails(&p) != nil {
		p = activities.JobProgress{}
	}
	return p.Done(), true
}

// jobFailure is the failure in the job's own words, without Temporal's
// wrapping.
func jobFailure(err error) string { return failureText(err, "the job did not finish in time") }
