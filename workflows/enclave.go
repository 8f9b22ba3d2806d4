package workflows

import (
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"conduit/activities"
	"conduit/internal/enclaves"
	"conduit/internal/enclaves/provider"
	"conduit/internal/errs"
	"conduit/internal/store"
)

// EnclaveQueue carries the enclave lifecycle workflows and their activities.
const EnclaveQueue = "enclaves"

// Enclave updates (validated against the live state, so a refused update
// changes nothing and the caller's answer is the real outcome) and the
// query that answers the live state (EnclaveState).
const (
	EnclavePause     = "pause"
	EnclaveResume    = "resume"
	EnclaveTerminate = "terminate"
	// EnclaveRetry makes a provisioning step that is waiting to be retried
	// (a registry down) run again now: the SRE's "resume a stuck build".
	EnclaveRetry = "retry"
	EnclaveQuery = "state"
)

// Search attributes of enclave workflows.
var (
	AttrEnclaveID     = temporal.NewSearchAttributeKeyKeyword("EnclaveId")
	AttrEnclaveStatus = temporal.NewSearchAttributeKeyKeyword("EnclaveStatus")
	AttrAccount       = temporal.NewSearchAttributeKeyKeyword("Account")
	// AttrEnclaveStatusSince is when EnclaveStatus last changed, so an
	// operator finds enclaves stuck in a state (conduit enclave stuck).
	AttrEnclaveStatusSince = temporal.NewSearchAttributeKeyTime("EnclaveStatusSince")
)

// EnclaveWorkflowID is the lifecycle workflow of one enclave.
func EnclaveWorkflowID(id string) string { return "enclave/" + id }

// EnclaveInput is one enclave's lifecycle.
type EnclaveInput struct {
	ID      string
	Account string
	Ref     string
	// Provider is the enclave's providerId (empty in histories from before
	// AWS: the local provider); it names the source of provisioning logs.
	Provider string
	// Source is the source type; "github" builds the image first
	// (enclave_build.go). Empty in histories from before builds: a
	// registry source.
	Source string
	// HeartbeatTimeout bounds the provider's long steps between heartbeats
	// (0: a minute); LogEvery is how often application output is copied
	// into the enclave's log (0: 5 seconds).
	HeartbeatTimeout time.Duration
	LogEvery         time.Duration
	// RetryMax is the longest wait between attempts of a provisioning step
	// whose failure may pass (0: 5 minutes); GiveUpAfter is how long such
	// a step is retried before the enclave fails (0: 24 hours).
	RetryMax    time.Duration
	GiveUpAfter time.Duration
	// Carried is set when the workflow continued as new while running.
	Carried *EnclaveState
	// Admit is the record the lifecycle writes as its first step (nil in
	// histories from before ChangeEnclaveAdmission, whose record the API
	// wrote before starting it).
	Admit *activities.NewEnclave `json:",omitempty"`
	// MeterEvery is how often uptime is metered while DEPLOYED (0: never;
	// histories from before ChangeEnclaveMetering). MeterFrom is the
	// start of the next period to meter, carried across continue-as-new.
	MeterEvery time.Duration `json:",omitempty"`
	MeterFrom  *time.Time    `json:",omitempty"`
}

// EnclaveState is the live state the query answers.
type EnclaveState struct {
	Status        enclaves.Status
	ErrorMessage  string
	Endpoint      string
	WalletAddress string
	PCRs          map[string]string
	// Waiting names the provisioning step being retried, if any.
	Waiting string `json:",omitempty"`
}

// Enclave runs one enclave's lifecycle (registry sources): PENDING_DEPLOY
// → DEPLOYING → DEPLOYED (or FAILED with the reason), then pause, resume
// and terminate as updates, until DESTROYED. The PostgreSQL record is
// written through activities at every step.
func Enclave(ctx workflow.Context, in EnclaveInput) error {
	// deploying is set before the update handlers exist: an update that
	// arrived with the start runs as soon as its handler is registered,
	// and a terminate must wait for the deployment step.
	lc := &lifecycle{in: in, deploying: in.Carried == nil, meterFrom: in.MeterFrom}
	if in.Carried != nil {
		lc.st = *in.Carried
	}
	hb := in.HeartbeatTimeout
	if hb <= 0 {
		hb = time.Minute
	}
	lc.short = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: time.Minute, RetryPolicy: ShortRetry})
	lc.long = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: 30 * time.Minute, HeartbeatTimeout: hb,
		// The provider's transient failures (a registry down) are retried a
		// few times; permanent ones (no such image) not at all.
		RetryPolicy: &temporal.RetryPolicy{InitialInterval: time.Second, MaximumInterval: 20 * time.Second, MaximumAttempts: 5},
	})
	lc.v = workflow.GetVersion(ctx, ChangeEnclaveResumableSteps, workflow.DefaultVersion, 1)
	retryMax, giveUp := in.RetryMax, in.GiveUpAfter
	if retryMax <= 0 {
		retryMax = 5 * time.Minute
	}
	if giveUp <= 0 {
		giveUp = 24 * time.Hour
	}
	lc.resumable = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: 30 * time.Minute, HeartbeatTimeout: hb, ScheduleToCloseTimeout: giveUp,
		// Unbounded attempts within giveUp; permanent errors are not retried.
		RetryPolicy: &temporal.RetryPolicy{InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: retryMax},
	})
	if err := workflow.SetQueryHandler(ctx, EnclaveQuery, func() (EnclaveState, error) { return lc.st, nil }); err != nil {
		return err
	}
	if err := lc.handlers(ctx); err != nil {
		return err
	}
	if err := lc.signingHandlers(ctx); err != nil {
		return err
	}
	if in.Carried == nil && in.Admit != nil {
		if err := lc.admit(ctx); err != nil {
			return err
		}
	}

	if in.Carried == nil {
		if lc.builds(ctx) {
			if lc.build(ctx) {
				lc.deploy(ctx)
			}
		} else {
			if err := lc.move(ctx, enclaves.PendingDeploy, "stepfunctions", "deployment queued"); err != nil {
				return err
			}
			lc.deploy(ctx)
		}
	}
	every := in.LogEvery
	if every <= 0 {
		every = 5 * time.Second
	}
	for lc.st.Status != enclaves.Destroyed && lc.st.Status != enclaves.Failed {
		_, err := workflow.AwaitWithTimeout(ctx, every, func() bool {
			return lc.terminating || lc.st.Status == enclaves.Destroyed
		})
		if err != nil {
			return err
		}
		if lc.terminating || lc.st.Status == enclaves.Destroyed {
			break
		}
		if lc.v >= 1 {
			lc.watch(ctx)
		} else {
			lc.copyLogs(ctx)
		}
		lc.meter(ctx)
		if workflow.GetInfo(ctx).GetContinueAsNewSuggested() && lc.busy == 0 && workflow.AllHandlersFinished(ctx) {
			next := in
			st := lc.st
			next.Carried = &st
			next.MeterFrom = lc.meterFrom
			return workflow.NewContinueAsNewError(ctx, WfEnclave, next)
		}
	}
	if err := workflow.Await(ctx, func() bool {
		return (lc.st.Status == enclaves.Destroyed || lc.st.Status == enclaves.Failed) && workflow.AllHandlersFinished(ctx)
	}); err != nil {
		return err
	}
	return nil
}

// admit writes the enclave's record as the lifecycle's first step (a
// local activity), so the record never exists without its workflow: its
// creator starts the workflow first and only then writes the same record
// itself (so that it can answer at once, even while no worker runs; the
// write is idempotent, whichever comes first). A creator that dies between
// the two leaves a lifecycle that still writes the record and runs; one
// whose start failed wrote nothing. The step retries until the database
// takes it: a lifecycle without its record cannot go on.
func (lc *lifecycle) admit(ctx workflow.Context) error {
	if workflow.GetVersion(ctx, ChangeEnclaveAdmission, workflow.DefaultVersion, 1) == workflow.DefaultVersion {
		return nil
	}
	lctx := workflow.WithLocalActivityOptions(ctx, workflow.LocalActivityOptions{
		StartToCloseTimeout: 30 * time.Second,
		RetryPolicy:         &temporal.RetryPolicy{InitialInterval: time.Second, MaximumInterval: time.Minute},
	})
	return workflow.ExecuteLocalActivity(lctx, ActEnclaveOpen, *lc.in.Admit).Get(ctx, nil)
}

type lifecycle struct {
	in          EnclaveInput
	st          EnclaveState
	short, long workflow.Context
	// deploying is true until the deploy step has ended; terminate waits
	// for it so an instance is never started after it was terminated.
	deploying   bool
	terminating bool
	busy        int

	// v is the workflow's version of ChangeEnclaveResumableSteps.
	v         workflow.Version
	resumable workflow.Context
	// cancelStep cancels the provisioning step under way; retryNow says
	// the cancellation is a retry, not a terminate.
	cancelStep func()
	retryNow   bool
	// restarting is true while a lost instance is started again.
	restarting bool
	// meterFrom is the start of the next period of uptime to charge (nil:
	// not DEPLOYED, or not metered; enclave_metering.go).
	meterFrom *time.Time
}

// move changes the state along the §3.3 table and writes the projection
// with a log entry of typ.
func (lc *lifecycle) move(ctx workflow.Context, to enclaves.Status, typ, msg string) error {
	from := lc.st.Status
	first := to == enclaves.PendingDeploy || to == enclaves.PendingBuild
	if from == "" && !first || from != "" && !enclaves.CanMove(from, to) {
		return fmt.Errorf("enclave %s: %s → %s is not in the state table", lc.in.ID, from, to)
	}
	lc.st.Status = to
	if lc.v >= 1 {
		_ = workflow.UpsertTypedSearchAttributes(ctx, AttrEnclaveStatus.ValueSet(string(to)), AttrEnclaveStatusSince.ValueSet(workflow.Now(ctx)))
	} else {
		_ = workflow.UpsertTypedSearchAttributes(ctx, AttrEnclaveStatus.ValueSet(string(to)))
	}
	// The transition is an ecs entry; the stepfunctions log is this
	// workflow's history, read from Temporal (lifecycle.History).
	logs := []store.EnclaveLog{{Type: "ecs", Source: EnclaveWorkflowID(lc.in.ID), Message: fmt.Sprintf("status %s → %s", orNone(from), to)}}
	src := lc.providerSource()
	if typ == "build" {
		src = "build"
	}
	if typ != "stepfunctions" || msg != "" {
		logs = append(logs, store.EnclaveLog{Type: typ, Source: src, Message: msg})
	}
	if to == enclaves.Failed || to == enclaves.BuildFailed {
		logs = append(logs, store.EnclaveLog{Type: "errors", Source: lc.providerSource(), Stream: "stderr", Message: lc.st.ErrorMessage})
	}
	err := workflow.ExecuteActivity(lc.short, ActEnclaveProject, activities.EnclaveStep{
		Projection: store.EnclaveProjection{
			ID: lc.in.ID, Status: to, ErrorMessage: lc.st.ErrorMessage, WalletAddress: lc.st.WalletAddress,
			PCRs: lc.st.PCRs, Endpoint: lc.st.Endpoint,
		},
		Logs: logs,
	}).Get(ctx, nil)
	if err == nil {
		lc.syncTasks(ctx, to) // the enclave's scheduled tasks follow it (task_run.go)
	}
	return err
}

func orNone(s enclaves.Status) string {
	if s == "" {
		return "created"
	}
	return string(s)
}

// fail moves to FAILED with the reason and removes whatever the provider
// kept: a failed enclave runs nothing.
func (lc *lifecycle) fail(ctx workflow.Context, reason string) {
	lc.st.ErrorMessage = reason
	lc.st.Endpoint = ""
	_ = workflow.ExecuteActivity(lc.long, ActEnclaveTerminate, lc.in.ID).Get(ctx, nil)
	if err := lc.move(ctx, enclaves.Failed, "ecs", "provisioning failed: "+reason); err != nil {
		workflow.GetLogger(ctx).Error("recording the failure failed", "err", err)
	}
}

func (lc *lifecycle) deploy(ctx workflow.Context) {
	lc.deploying = true
	defer func() { lc.deploying = false }()
	if err := lc.move(ctx, enclaves.Deploying, "ecs", "pulling and measuring "+lc.in.Ref); err != nil {
		lc.fail(ctx, "the enclave's record could not be written: "+err.Error())
		return
	}
	// A terminate that arrived meanwhile stops the deployment between
	// steps; its handler removes what was prepared.
	if lc.terminating {
		return
	}
	prep, inst, err := lc.start(ctx)
	switch {
	case errors.Is(err, errStopped):
		return // a terminate stopped the deployment between its steps
	case err != nil && lc.terminating && lc.v >= 1:
		return // the terminate cancelled the step; its handler cleans up
	case err != nil:
		lc.fail(ctx, err.Error())
		return
	}
	lc.running(inst)
	isolated := "isolated network"
	if !inst.NetworkIsolated {
		isolated = "host network (not isolated)"
	}
	if err := lc.move(ctx, enclaves.Deployed, "ecs", fmt.Sprintf("running %s (%s) at %s; %s", prep.Image.Ref, prep.Image.ManifestDigest, inst.Addr, isolated)); err != nil {
		workflow.GetLogger(ctx).Error("recording the deployment failed", "err", err)
	}
}

// errStopped: a terminate arrived between two provisioning steps.
var errStopped = errors.New("the deployment was stopped by a terminate")

// start prepares and deploys the image the record names; its error is the
// reason the enclave fails.
func (lc *lifecycle) start(ctx workflow.Context) (activities.Prepared, provider.Instance, error) {
	var prep activities.Prepared
	var inst provider.Instance
	if err := lc.provision(ctx, ActEnclavePrepare, lc.in.ID, &prep); err != nil {
		return prep, inst, errors.New("the image could not be prepared: " + cause(err))
	}
	if lc.terminating {
		return prep, inst, errStopped
	}
	if err := lc.provision(ctx, ActEnclaveDeploy, activities.DeployInput{ID: lc.in.ID, Image: prep.Image, Config: prep.Config}, &inst); err != nil {
		return prep, inst, errors.New("the enclave could not be started: " + cause(err))
	}
	return prep, inst, nil
}

// provision runs a provisioning step. Before ChangeEnclaveResumableSteps it is
// one activity with a few attempts; since, the step is retried with
// backoff until it succeeds, fails permanently or gives up, and the retry
// update (or a terminate) cancels the attempt or the wait under way: a
// retry issues the step again at once.
func (lc *lifecycle) provision(ctx workflow.Context, act string, arg, out any) error {
	if lc.v < 1 {
		return workflow.ExecuteActivity(lc.long, act, arg).Get(ctx, out)
	}
	for {
		actx, cancel := workflow.WithCancel(lc.resumable)
		lc.cancelStep, lc.st.Waiting = cancel, act
		err := workflow.ExecuteActivity(actx, act, arg).Get(ctx, out)
		lc.cancelStep, lc.st.Waiting = nil, ""
		cancel()
		var canceled *temporal.CanceledError
		if err != nil && errors.As(err, &canceled) && lc.retryNow && !lc.terminating {
			lc.retryNow = false
			continue
		}
		lc.retryNow = false
		return err
	}
}

// running takes a started instance's public facts into the state.
func (lc *lifecycle) running(inst provider.Instance) {
	lc.st.Endpoint = inst.Addr
	lc.st.WalletAddress = inst.EVMAddress
	lc.st.PCRs = map[string]string{}
	for i, v := range inst.PCRs {
		lc.st.PCRs[strconv.Itoa(i)] = hex.EncodeToString(v)
	}
}

// providerSource is the source of the provider's log entries.
func (lc *lifecycle) providerSource() string {
	if lc.in.Provider == "" {
		return "provider/" + enclaves.ProviderLocal
	}
	return "provider/" + lc.in.Provider
}

// cause is an activity failure's own message.
func cause(err error) string { return failureText(err, "the provider did not answer in time") }

// watch copies new application output and checks that the instance is
// what the state says: an application that exited fails the enclave (its
// last lines are in the log); an instance lost with its worker process is
// started again, with the same image and keys.
func (lc *lifecycle) watch(ctx workflow.Context) {
	was := lc.st.Status
	if was != enclaves.Deployed && was != enclaves.Paused || lc.busy > 0 {
		return
	}
	var w activities.Watched
	if err := workflow.ExecuteActivity(lc.short, ActEnclaveWatch, lc.in.ID).Get(ctx, &w); err != nil {
		return
	}
	if lc.st.Status != was || lc.busy > 0 || lc.terminating {
		return // an update moved it meanwhile; look again next time
	}
	switch w.Status.Phase {
	case provider.PhaseExited:
		lc.fail(ctx, "the application exited: "+w.Status.Detail)
	case provider.PhaseAbsent, provider.PhasePrepared:
		lc.restart(ctx, was)
	}
}

// restart starts a lost instance again; the state stays as it was.
func (lc *lifecycle) restart(ctx workflow.Context, was enclaves.Status) {
	lc.restarting, lc.deploying = true, true
	defer func() { lc.restarting, lc.deploying = false, false }()
	lc.note(ctx, "ecs", "the instance is gone (its worker process ended); starting it again")
	_, inst, err := lc.start(ctx)
	switch {
	case errors.Is(err, errStopped) || err != nil && lc.terminating:
		return
	case err != nil:
		lc.fail(ctx, err.Error())
		return
	}
	lc.running(inst)
	if was == enclaves.Paused {
		if err := workflow.ExecuteActivity(lc.long, ActEnclavePause, lc.in.ID).Get(ctx, nil); err != nil {
			lc.fail(ctx, "the enclave could not be paused again: "+cause(err))
			return
		}
	}
	lc.note(ctx, "ecs", "running again at "+inst.Addr)
}

// note writes the projection unchanged with one log entry.
func (lc *lifecycle) note(ctx workflow.Context, typ, msg string) {
	_ = workflow.ExecuteActivity(lc.short, ActEnclaveProject, activities.EnclaveStep{
		Projection: store.EnclaveProjection{
			ID: lc.in.ID, Status: lc.st.Status, ErrorMessage: lc.st.ErrorMessage, WalletAddress: lc.st.WalletAddress,
			PCRs: lc.st.PCRs, Endpoint: lc.st.Endpoint,
		},
		Logs: []store.EnclaveLog{{Type: typ, Source: lc.providerSource(), Message: msg}},
	}).Get(ctx, nil)
}

func (lc *lifecycle) copyLogs(ctx workflow.Context) {
	if lc.st.Status != enclaves.Deployed && lc.st.Status != enclaves.Paused {
		return
	}
	_ = workflow.ExecuteActivity(lc.short, ActEnclaveCopyLogs, lc.in.ID).Get(ctx, nil)
}

func (lc *lifecycle) handlers(ctx workflow.Context) error {
	validator := func(a enclaves.Action) func() error {
		return func() error {
			if lc.terminating {
				return conflict(enclaves.Allowed(a, enclaves.PendingDestroy), enclaves.PendingDestroy)
			}
			cur := lc.st.Status
			if cur == "" {
				cur = enclaves.PendingDeploy // the record's state before the first step
			}
			if lc.restarting && a != enclaves.Terminate {
				return conflict(errs.Conflictf("the enclave's instance is being started again; try again in a moment"), cur)
			}
			return conflict(enclaves.Allowed(a, cur), cur)
		}
	}
	if err := workflow.SetUpdateHandlerWithOptions(ctx, EnclaveRetry, func(ctx workflow.Context) (EnclaveState, error) {
		st := lc.st
		lc.retryNow = true
		lc.cancelStep()
		return st, nil
	}, workflow.UpdateHandlerOptions{Validator: func() error {
		if lc.cancelStep == nil || lc.terminating {
			cur := lc.st.Status
			return conflict(errs.Conflictf("the enclave is %s and no step is waiting to be retried", cur), cur)
		}
		return nil
	}}); err != nil {
		return err
	}
	step := func(ctx workflow.Context, via, to enclaves.Status, act, what string) (EnclaveState, error) {
		lc.busy++
		defer func() { lc.busy-- }()
		if err := lc.move(ctx, via, "ecs", what); err != nil {
			return lc.st, err
		}
		if err := workflow.ExecuteActivity(lc.long, act, lc.in.ID).Get(ctx, nil); err != nil {
			lc.fail(ctx, "the enclave could not be "+what+": "+cause(err))
			return lc.st, nil
		}
		err := lc.move(ctx, to, "stepfunctions", "")
		return lc.st, err
	}
	if err := workflow.SetUpdateHandlerWithOptions(ctx, EnclavePause, func(ctx workflow.Context) (EnclaveState, error) {
		return step(ctx, enclaves.Pausing, enclaves.Paused, ActEnclavePause, "paused")
	}, workflow.UpdateHandlerOptions{Validator: validator(enclaves.Pause)}); err != nil {
		return err
	}
	if err := workflow.SetUpdateHandlerWithOptions(ctx, EnclaveResume, func(ctx workflow.Context) (EnclaveState, error) {
		return step(ctx, enclaves.Resuming, enclaves.Deployed, ActEnclaveResume, "resumed")
	}, workflow.UpdateHandlerOptions{Validator: validator(enclaves.Resume)}); err != nil {
		return err
	}
	return workflow.SetUpdateHandlerWithOptions(ctx, EnclaveTerminate, func(ctx workflow.Context) (EnclaveState, error) {
		lc.terminating = true
		if lc.cancelStep != nil {
			lc.cancelStep() // a step retried while a registry is down ends now
		}
		lc.busy++
		defer func() { lc.busy-- }()
		// A deployment under way ends first (at most one instance ever).
		if err := workflow.Await(ctx, func() bool { return !lc.deploying }); err != nil {
			return lc.st, err
		}
		if lc.st.Status == enclaves.Failed {
			return lc.st, nil // the deployment failed; nothing runs
		}
		if err := lc.move(ctx, enclaves.PendingDestroy, "stepfunctions", ""); err != nil {
			return lc.st, err
		}
		if err := lc.move(ctx, enclaves.Destroying, "ecs", "terminating the instance and removing its files"); err != nil {
			return lc.st, err
		}
		lc.copyFinalLogs(ctx)
		if err := workflow.ExecuteActivity(lc.long, ActEnclaveTerminate, lc.in.ID).Get(ctx, nil); err != nil {
			lc.st.ErrorMessage = "the enclave could not be terminated: " + cause(err)
			err2 := lc.move(ctx, enclaves.Failed, "ecs", lc.st.ErrorMessage)
			return lc.st, err2
		}
		lc.st.Endpoint = ""
		err := lc.move(ctx, enclaves.Destroyed, "ecs", "destroyed")
		return lc.st, err
	}, workflow.UpdateHandlerOptions{Validator: validator(enclaves.Terminate)})
}

func (lc *lifecycle) copyFinalLogs(ctx workflow.Context) {
	_ = workflow.ExecuteActivity(lc.short, ActEnclaveCopyLogs, lc.in.ID).Get(ctx, nil)
}

// EnclaveSearchAttributes are a new enclave workflow's attributes.
func EnclaveSearchAttributes(id, account string, st enclaves.Status, since time.Time) temporal.SearchAttributes {
	return temporal.NewSearchAttributes(AttrEnclaveID.ValueSet(id), AttrAccount.ValueSet(account), AttrEnclaveStatus.ValueSet(string(st)),
		AttrEnclaveStatusSince.ValueSet(since))
}

// ErrEnclaveConflict types an update a validator refused; its details are
// the current status.
const ErrEnclaveConflict = "EnclaveConflict"

func conflict(err error, st enclaves.Status) error {
	if err == nil {
		return nil
	}
	return temporal.NewNonRetryableApplicationError(err.Error(), ErrEnclaveConflict, nil, string(st))
}
