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
	"conduit/internal/enclave"
	"conduit/internal/enclaves"
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
	EnclaveQuery     = "state"
)

// Search attributes of enclave workflows.
var (
	AttrEnclaveID     = temporal.NewSearchAttributeKeyKeyword("EnclaveId")
	AttrEnclaveStatus = temporal.NewSearchAttributeKeyKeyword("EnclaveStatus")
	AttrAccount       = temporal.NewSearchAttributeKeyKeyword("Account")
)

// EnclaveWorkflowID is the lifecycle workflow of one enclave.
func EnclaveWorkflowID(id string) string { return "enclave/" + id }

// EnclaveInput is one enclave's lifecycle.
type EnclaveInput struct {
	ID      string
	Account string
	Ref     string
	// HeartbeatTimeout bounds the provider's long steps between heartbeats
	// (0: a minute); LogEvery is how often application output is copied
	// into the enclave's log (0: 5 seconds).
	HeartbeatTimeout time.Duration
	LogEvery         time.Duration
	// Carried is set when the workflow continued as new while running.
	Carried *EnclaveState
}

// EnclaveState is the live state the query answers.
type EnclaveState struct {
	Status        enclaves.Status
	ErrorMessage  string
	Endpoint      string
	WalletAddress string
	PCRs          map[string]string
}

// Enclave runs one enclave's lifecycle (registry sources): PENDING_DEPLOY
// → DEPLOYING → DEPLOYED (or FAILED with the reason), then pause, resume
// and terminate as updates, until DESTROYED. The PostgreSQL record is
// written through activities at every step.
func Enclave(ctx workflow.Context, in EnclaveInput) error {
	// deploying is set before the update handlers exist: an update that
	// arrived with the start runs as soon as its handler is registered,
	// and a terminate must wait for the deployment step.
	lc := &lifecycle{in: in, deploying: in.Carried == nil}
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
	if err := workflow.SetQueryHandler(ctx, EnclaveQuery, func() (EnclaveState, error) { return lc.st, nil }); err != nil {
		return err
	}
	if err := lc.handlers(ctx); err != nil {
		return err
	}
	if err := lc.signingHandlers(ctx); err != nil {
		return err
	}

	if in.Carried == nil {
		if err := lc.move(ctx, enclaves.PendingDeploy, "stepfunctions", "deployment queued"); err != nil {
			return err
		}
		lc.deploy(ctx)
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
		lc.copyLogs(ctx)
		if workflow.GetInfo(ctx).GetContinueAsNewSuggested() && lc.busy == 0 && workflow.AllHandlersFinished(ctx) {
			next := in
			st := lc.st
			next.Carried = &st
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

type lifecycle struct {
	in          EnclaveInput
	st          EnclaveState
	short, long workflow.Context
	// deploying is true until the deploy step has ended; terminate waits
	// for it so an instance is never started after it was terminated.
	deploying   bool
	terminating bool
	busy        int
}

// move changes the state along the §3.3 table and writes the projection
// with a log entry of typ.
func (lc *lifecycle) move(ctx workflow.Context, to enclaves.Status, typ, msg string) error {
	from := lc.st.Status
	if from == "" && to != enclaves.PendingDeploy || from != "" && !enclaves.CanMove(from, to) {
		return fmt.Errorf("enclave %s: %s → %s is not in the state table", lc.in.ID, from, to)
	}
	lc.st.Status = to
	_ = workflow.UpsertTypedSearchAttributes(ctx, AttrEnclaveStatus.ValueSet(string(to)))
	logs := []store.EnclaveLog{{Type: "stepfunctions", Source: EnclaveWorkflowID(lc.in.ID), Message: fmt.Sprintf("%s → %s", orNone(from), to)}}
	if typ != "stepfunctions" || msg != "" {
		logs = append(logs, store.EnclaveLog{Type: typ, Source: "provider/" + enclaves.ProviderLocal, Message: msg})
	}
	if to == enclaves.Failed {
		logs = append(logs, store.EnclaveLog{Type: "errors", Source: "provider/" + enclaves.ProviderLocal, Stream: "stderr", Message: lc.st.ErrorMessage})
	}
	return workflow.ExecuteActivity(lc.short, ActEnclaveProject, activities.EnclaveStep{
		Projection: store.EnclaveProjection{
			ID: lc.in.ID, Status: to, ErrorMessage: lc.st.ErrorMessage, WalletAddress: lc.st.WalletAddress,
			PCRs: lc.st.PCRs, Endpoint: lc.st.Endpoint,
		},
		Logs: logs,
	}).Get(ctx, nil)
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
	var prep activities.Prepared
	if err := workflow.ExecuteActivity(lc.long, ActEnclavePrepare, lc.in.ID).Get(ctx, &prep); err != nil {
		lc.fail(ctx, "the image could not be prepared: "+cause(err))
		return
	}
	if lc.terminating {
		return
	}
	var inst enclave.Instance
	if err := workflow.ExecuteActivity(lc.long, ActEnclaveDeploy, activities.DeployInput{ID: lc.in.ID, Image: prep.Image, Config: prep.Config}).Get(ctx, &inst); err != nil {
		lc.fail(ctx, "the enclave could not be started: "+cause(err))
		return
	}
	lc.st.Endpoint = inst.Addr
	lc.st.WalletAddress = inst.EVMAddress
	lc.st.PCRs = map[string]string{}
	for i, v := range inst.PCRs {
		lc.st.PCRs[strconv.Itoa(i)] = hex.EncodeToString(v)
	}
	isolated := "isolated network"
	if !inst.NetworkIsolated {
		isolated = "host network (not isolated)"
	}
	if err := lc.move(ctx, enclaves.Deployed, "ecs", fmt.Sprintf("running %s (%s) at %s; %s", prep.Image.Ref, prep.Image.ManifestDigest, inst.Addr, isolated)); err != nil {
		workflow.GetLogger(ctx).Error("recording the deployment failed", "err", err)
	}
}

// cause is an activity failure's own message.
func cause(err error) string {
	var app *temporal.ApplicationError
	if errors.As(err, &app) {
		return app.Message()
	}
	var timeout *temporal.TimeoutError
	if errors.As(err, &timeout) {
		return "the provider did not answer in time"
	}
	return err.Error()
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
			return conflict(enclaves.Allowed(a, cur), cur)
		}
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
func EnclaveSearchAttributes(id, account string, st enclaves.Status) temporal.SearchAttributes {
	return temporal.NewSearchAttributes(AttrEnclaveID.ValueSet(id), AttrAccount.ValueSet(account), AttrEnclaveStatus.ValueSet(string(st)))
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
