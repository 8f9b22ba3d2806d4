package workflows

import (
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"conduit/activities"
	"conduit/internal/enclaves"
	"conduit/internal/signer"
)

// Enclave updates that reach the enclave's agent, which lives with the
// provider in the worker: a fresh attestation document, and a signature
// preceded by one (docs/enclaves.md, "Signing"). Both are refused (409
// naming the state) unless the enclave is DEPLOYED. They write nothing
// but their activity to history: the document and the signature, never a
// key.
const (
	EnclaveAttest = "attest"
	EnclaveSign   = "sign"
)

// signingHandlers registers the attest and sign updates. Registering a
// handler adds no command, so histories recorded before them replay
// unchanged.
func (lc *lifecycle) signingHandlers(ctx workflow.Context) error {
	agent := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: 30 * time.Second,
		// A transient failure (a worker stopping mid-call) is retried
		// briefly; a permanent one (no instance) answers at once.
		RetryPolicy: &temporal.RetryPolicy{InitialInterval: 500 * time.Millisecond, MaximumInterval: 2 * time.Second, MaximumAttempts: 3},
	})
	running := func() error {
		cur := lc.st.Status
		if lc.terminating {
			cur = enclaves.PendingDestroy
		}
		if cur == enclaves.Deployed {
			return nil
		}
		if cur == "" {
			cur = enclaves.PendingDeploy
		}
		return conflict(signer.NotRunning(cur), cur)
	}
	if err := workflow.SetUpdateHandlerWithOptions(ctx, EnclaveAttest, func(ctx workflow.Context, nonce []byte) (signer.Evidence, error) {
		var ev signer.Evidence
		err := workflow.ExecuteActivity(agent, ActEnclaveAttest, activities.AttestInput{ID: lc.in.ID, Nonce: nonce}).Get(ctx, &ev)
		return ev, err
	}, workflow.UpdateHandlerOptions{Validator: func(nonce []byte) error { return running() }}); err != nil {
		return err
	}
	return workflow.SetUpdateHandlerWithOptions(ctx, EnclaveSign, func(ctx workflow.Context, r signer.Request) (signer.Signed, error) {
		var out signer.Signed
		err := workflow.ExecuteActivity(agent, ActEnclaveSign, activities.SignInput{ID: lc.in.ID, Request: r}).Get(ctx, &out)
		return out, err
	}, workflow.UpdateHandlerOptions{Validator: func(r signer.Request) error {
		if err := running(); err != nil {
			return err
		}
		if err := r.Validate(); err != nil {
			return temporal.NewNonRetryableApplicationError(err.Error(), activities.ErrSignerInvalid, nil)
		}
		return nil
	}})
}
