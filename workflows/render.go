package workflows

import (
	"errors"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"conduit/activities"
	"conduit/internal/mediakind"
	"conduit/internal/money"
	"conduit/internal/store"
	"conduit/internal/x402"
)

// RenderQueue carries pay-per-call render workflows and their short
// activities; RenderWorkQueue carries the render activity itself, which
// workers run a bounded number of at once.
const (
	RenderQueue     = "renders"
	RenderWorkQueue = "renders-work"
)

// AdmissionUpdate is the update the frontend starts a render with and
// waits on: it completes once the payment is settled (or refused) and the
// run is recorded, so the caller learns at once whether it bought
// anything.
const AdmissionUpdate = "admission"

// StageQuery answers where an open render is: settling (the payment, or
// opening a retry), rendering, collecting (past its deadline), recording.
const StageQuery = "stage"

// Render stages.
const (
	StageSettling   = "settling"
	StageRendering  = "rendering"
	StageCollecting = "collecting"
	StageRecording  = "recording"
)

// RenderWorkflowID is the workflow of one run.
func RenderWorkflowID(runID string) string { return "render/" + runID }

// LateNote is the run's note once its render outlasted the deadline.
const LateNote = "The render is taking longer than usual; it is still being collected and this run will finish on its own. Poll statusUrl; retry is not possible meanwhile."

// RenderInput is one pay-per-call run: paid (Payment set) or a retry of a
// failed run (RetryOf set).
type RenderInput struct {
	Run RenderRun

	Payment      *x402.PaymentPayload
	Requirements x402.PaymentRequirements
	Resource     string

	RetryOf string

	// Deadline is when the render counts as late; Collect is how long a
	// late render is still waited for.
	Deadline         time.Duration
	Collect          time.Duration
	HeartbeatTimeout time.Duration
}

// RenderRun is the run a render opens: its request as sold and, for a
// paid run, who paid what. It is the workflow's own type, not the store's
// row: its fields (and so its JSON in recorded histories) are those the
// inputs always had, and it converts to the row the activities write.
type RenderRun struct {
	RunID       string
	Kind        string
	Request     mediakind.Request
	RequestHash string
	Network     string
	Payer       string
	Transaction string // the settled payment (paid runs)
	Paid        money.Micros
	Price       money.Micros
	StartedAt   time.Time
}

// Admission is the frontend's answer: accepted with the run, or why not.
type Admission struct {
	Accepted bool
	Run      store.MediaRun
	// Payment refusals (402 with the challenge), or the payment already
	// redeemed by another purchase (409, with its transaction when settled).
	PaymentReason   string
	PaymentMessage  string
	AlreadyRedeemed bool
	Transaction     string
	// Retry refusals (409 or 402).
	Retry *store.RetryRefusal
	// Failed says the payment was settled but the run could not be
	// opened; its value was credited to the wallet's balance (503).
	Failed string
}

// RenderOutcome is a render's result as the workflow returns it, so the
// Temporal UI shows on the workflow's page how the render ended. A failed
// or refused render still completes: the platform handled it (nothing
// charged, the retry open), so it is not a workflow failure for the
// Failures view; RunStatus (error, partial, refused) finds them.
type RenderOutcome struct {
	RunID  string `json:"runId"`
	Status string `json:"status"`
	Reason string `json:"reason,omitempty"`
	Error  string `json:"error,omitempty"`
}

// Render settles the payment (paid runs), records the run, renders the
// file and records the outcome with its money: the price is captured on
// success and released on failure, so a failed render is never charged.
func Render(ctx workflow.Context, in RenderInput) (RenderOutcome, error) {
	out, err := renderRun(ctx, in)
	if out.RunID == "" {
		out.RunID = in.Run.RunID
	}
	return out, err
}

func renderRun(ctx workflow.Context, in RenderInput) (RenderOutcome, error) {
	var admission *Admission
	var admitErr error
	if err := workflow.SetUpdateHandler(ctx, AdmissionUpdate, func(ctx workflow.Context) (Admission, error) {
		err := workflow.Await(ctx, func() bool { return admission != nil || admitErr != nil })
		switch {
		case admitErr != nil:
			return Admission{}, admitErr
		case admission == nil:
			return Admission{}, err
		}
		return *admission, err
	}); err != nil {
		return RenderOutcome{}, err
	}
	stage := StageSettling
	if err := workflow.SetQueryHandler(ctx, StageQuery, func() (string, error) { return stage, nil }); err != nil {
		return RenderOutcome{}, err
	}
	// Let the admission update read its answer before the workflow ends.
	defer func() { _ = workflow.Await(ctx, func() bool { return workflow.AllHandlersFinished(ctx) }) }()

	// Renders started since ChangeRenderLocalSteps run their short
	// database steps as local activities: the caller waits on them.
	short := shortSteps{ctx: workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: time.Minute, RetryPolicy: ShortRetry})}
	if workflow.GetVersion(ctx, ChangeRenderLocalSteps, workflow.DefaultVersion, 1) >= 1 {
		short = shortSteps{ctx: shortLocal(ctx), local: true}
	}
	adm, err := admit(ctx, short, in)
	if err != nil {
		admitErr = err // the waiting update fails too, so the workflow can end
		return RenderOutcome{}, err
	}
	admission = &adm
	if !adm.Accepted {
		_ = workflow.UpsertTypedSearchAttributes(ctx, AttrRunStatus.ValueSet(StatusRefused))
		out := RenderOutcome{Status: StatusRefused, Reason: adm.PaymentReason, Error: adm.PaymentMessage}
		switch {
		case adm.Retry != nil:
			out.Reason, out.Error = "retry_refused", adm.Retry.Error()
		case adm.Failed != "":
			out.Error = adm.Failed
		}
		return out, nil
	}
	// A retry learns its wallet only now, from the run it retries.
	_ = workflow.UpsertTypedSearchAttributes(ctx, AttrPayer.ValueSet(x402.DisplayAddress(adm.Run.Network, adm.Run.Payer)), AttrNetwork.ValueSet(adm.Run.Network))

	res := store.MediaResult{RunID: in.Run.RunID}
	stage = StageRendering
	late, rendered, renderErr := render(ctx, short, in, &stage)
	switch {
	case renderErr == nil:
		res.Status, res.FileKey = "success", rendered.FileKey
	default:
		res.Status, res.Reason, res.FailedStep, res.Error = "error", activities.ReasonRenderFailed, "render", renderErr.Error()
		if late {
			// It outlasted its deadline and then produced nothing.
			res.Status = "partial"
		}
		var app *temporal.ApplicationError
		if errors.As(renderErr, &app) {
			res.Error = app.Message()
			if app.Type() == activities.ReasonPromptRefused {
				res.Reason = activities.ReasonPromptRefused
			}
			var step string
			if app.Details(&step) == nil && step != "" {
				res.FailedStep = step
			}
		}
		res.Message = failureMessage(res.Reason)
	}
	res.FinishedAt = workflow.Now(ctx)
	stage = StageRecording
	// A failed render is findable as such in the Temporal UI:
	// RunStatus = 'error' (or 'partial').
	_ = workflow.UpsertTypedSearchAttributes(ctx, AttrRunStatus.ValueSet(res.Status))
	if err := short.run(ActFinishRender, res).Get(ctx, nil); err != nil {
		_ = workflow.UpsertTypedSearchAttributes(ctx, AttrRunStatus.ValueSet(StatusError))
		// The outcome cannot be recorded as it is: record a failure with
		// only the reason, which releases the price (nothing charged; the
		// retry stays open).
		failed := store.MediaResult{
			RunID: in.Run.RunID, Status: "error", Reason: activities.ReasonRenderFailed, FailedStep: "record",
			Error: "the render's outcome could not be recorded", Message: failureMessage(activities.ReasonRenderFailed), FinishedAt: res.FinishedAt,
		}
		return RenderOutcome{Status: failed.Status, Reason: failed.Reason, Error: failed.Error}, short.run(ActFinishRender, failed).Get(ctx, nil)
	}
	return RenderOutcome{Status: res.Status, Reason: res.Reason, Error: res.Error}, nil
}

// shortSteps runs a render's short database steps: local activities
// (local) or, for renders started before ChangeRenderLocalSteps, regular
// ones; ctx carries the options.
type shortSteps struct {
	ctx   workflow.Context
	local bool
}

func (s shortSteps) run(name string, args ...any) workflow.Future {
	if s.local {
		return workflow.ExecuteLocalActivity(s.ctx, name, args...)
	}
	return workflow.ExecuteActivity(s.ctx, name, args...)
}

// admit settles the payment and opens the run, or opens the retry.
func admit(ctx workflow.Context, short shortSteps, in RenderInput) (Admission, error) {
	if in.RetryOf != "" {
		var opened activities.OpenedRetry
		if err := short.run(ActOpenRetry, activities.RetryInput{OldRunID: in.RetryOf, Run: store.NewMediaRun(in.Run)}).Get(ctx, &opened); err != nil {
			return Admission{}, err
		}
		if opened.Refusal != nil {
			return Admission{Retry: opened.Refusal}, nil
		}
		return Admission{Accepted: true, Run: opened.Run}, nil
	}
	var settled activities.SettleOutcome
	sctx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: time.Minute, RetryPolicy: SettleRetry})
	if err := workflow.ExecuteActivity(sctx, ActSettle, activities.SettleInput{
		Payment: *in.Payment, Requirements: in.Requirements, Amount: in.Run.Price, Resource: in.Resource,
		Purpose: RenderWorkflowID(in.Run.RunID),
	}).Get(sctx, &settled); err != nil {
		return Admission{}, err
	}
	if !settled.Success {
		return Admission{PaymentReason: settled.Reason, PaymentMessage: settled.Message,
			AlreadyRedeemed: settled.AlreadyRedeemed, Transaction: settled.Transaction}, nil
	}
	n := store.NewMediaRun(in.Run)
	n.Transaction, n.Paid = settled.Transaction, in.Run.Price
	var run store.MediaRun
	if err := short.run(ActOpenPaid, n).Get(ctx, &run); err != nil {
		// Settled but not recorded: the money must not be lost, so its
		// value goes to the wallet's balance (once per transaction).
		if cerr := short.run(ActCreditPayment, n).Get(ctx, nil); cerr != nil {
			return Admission{}, cerr
		}
		return Admission{Failed: "the payment was settled but the run could not be recorded; its value was credited to the paying wallet's balance"}, nil
	}
	return Admission{Accepted: true, Run: run}, nil
}

// render runs the render activity; past the deadline it notes the run as
// late and keeps collecting.
func render(ctx workflow.Context, short shortSteps, in RenderInput, stage *string) (late bool, out activities.Rendered, err error) {
	// The deadline plus the collection window bounds the render as a
	// whole, across attempts: a worker lost mid-render costs its attempt,
	// not extra time.
	actx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		TaskQueue:              RenderWorkQueue,
		ScheduleToCloseTimeout: in.Deadline + in.Collect,
		StartToCloseTimeout:    in.Deadline + in.Collect,
		HeartbeatTimeout:       in.HeartbeatTimeout,
		RetryPolicy:            &temporal.RetryPolicy{InitialInterval: time.Second, MaximumInterval: 10 * time.Second, MaximumAttempts: 3},
		Summary:                in.Run.Kind + " render",
	})
	fut := workflow.ExecuteActivity(actx, ActRender, activities.RenderJob{RunID: in.Run.RunID, Kind: in.Run.Kind, Request: in.Run.Request})
	timerCtx, cancelTimer := workflow.WithCancel(ctx)
	defer cancelTimer()
	deadline := workflow.NewTimerWithOptions(timerCtx, in.Deadline, workflow.TimerOptions{Summary: "deadline"})
	done := false
	sel := workflow.NewSelector(ctx)
	sel.AddFuture(fut, func(workflow.Future) { done = true })
	sel.AddFuture(deadline, func(f workflow.Future) {
		if f.Get(ctx, nil) == nil {
			late = true
		}
	})
	sel.Select(ctx)
	if !done && late {
		*stage = StageCollecting
		if err := short.run(ActMarkLate, in.Run.RunID, LateNote).Get(ctx, nil); err != nil {
			return late, out, err
		}
	}
	err = fut.Get(ctx, &out)
	return late, out, err
}

func failureMessage(reason string) string {
	if reason == activities.ReasonPromptRefused {
		return "The model declined this prompt. The render was not charged: your payment settled and its value is held as credit for this render's retry; change the prompt and POST to retryUrl to use it."
	}
	return "The render did not finish. It was not charged: your payment settled and its value is held as credit for this render's retry; POST to retryUrl to render again at no further cost."
}
