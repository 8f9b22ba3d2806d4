package workflows

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"

	"conduit/activities"
	"conduit/internal/enclaves/provider"
	"conduit/internal/signer"
)

// The attest and sign updates reach the agent only while the enclave is
// DEPLOYED; otherwise the validator refuses with the current state and
// nothing runs.
func TestEnclaveSigningUpdates(t *testing.T) {
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	e := &activities.Enclaves{}
	for name, fn := range map[string]any{
		ActEnclaveProject: e.Project, ActEnclavePrepare: e.Prepare, ActEnclaveDeploy: e.Deploy, ActEnclavePause: e.Pause,
		ActEnclaveResume: e.Resume, ActEnclaveTerminate: e.Terminate, ActEnclaveCopyLogs: e.CopyLogs,
		ActEnclaveAttest: e.Attest, ActEnclaveSign: e.Sign,
	} {
		env.RegisterActivityWithOptions(fn, activity.RegisterOptions{Name: name})
	}
	env.OnActivity(ActEnclaveProject, mock.Anything, mock.Anything).Return(nil)
	env.OnActivity(ActEnclavePrepare, mock.Anything, mock.Anything).Return(activities.Prepared{}, nil)
	env.OnActivity(ActEnclaveDeploy, mock.Anything, mock.Anything).After(time.Minute).Return(provider.Instance{Addr: "127.0.0.1:1", EVMAddress: "0xabc"}, nil)
	env.OnActivity(ActEnclaveCopyLogs, mock.Anything, mock.Anything).Return(0, nil)
	env.OnActivity(ActEnclavePause, mock.Anything, mock.Anything).Return(nil)
	env.OnActivity(ActEnclaveTerminate, mock.Anything, mock.Anything).Return(nil)
	attests, signs := 0, 0
	env.OnActivity(ActEnclaveAttest, mock.Anything, mock.Anything).Return(func(_ context.Context, in activities.AttestInput) (signer.Evidence, error) {
		attests++
		return signer.Evidence{Nonce: in.Nonce, State: signer.AttestationVerified}, nil
	})
	env.OnActivity(ActEnclaveSign, mock.Anything, mock.Anything).Return(func(_ context.Context, in activities.SignInput) (signer.Signed, error) {
		signs++
		if in.ID != "enc_1" || len(in.Request.Payload) != 32 {
			t.Errorf("sign input %+v", in)
		}
		return signer.Signed{Signature: []byte{1}, Signer: "0xabc"}, nil
	})

	type outcome struct {
		rejected error
		value    any
		err      error
	}
	got := map[string]*outcome{}
	send := func(at time.Duration, id, name string, arg any) {
		env.RegisterDelayedCallback(func() {
			o := &outcome{}
			got[id] = o
			env.UpdateWorkflow(name, id, &testsuite.TestUpdateCallback{
				OnAccept:   func() {},
				OnReject:   func(err error) { o.rejected = err },
				OnComplete: func(v any, err error) { o.value, o.err = v, err },
			}, arg)
		}, at)
	}
	hash := make([]byte, 32)
	send(10*time.Second, "attest-deploying", EnclaveAttest, []byte("n"))
	send(2*time.Minute, "attest", EnclaveAttest, []byte("n"))
	send(2*time.Minute+time.Second, "sign", EnclaveSign, signer.Request{Purpose: signer.PurposeEVMHash, Payload: hash})
	send(2*time.Minute+2*time.Second, "sign-short", EnclaveSign, signer.Request{Purpose: signer.PurposeEVMHash, Payload: hash[:3]})
	send(3*time.Minute, "pause", EnclavePause, nil)
	send(4*time.Minute, "sign-paused", EnclaveSign, signer.Request{Purpose: signer.PurposeEVMHash, Payload: hash})
	send(5*time.Minute, "terminate", EnclaveTerminate, nil)
	env.ExecuteWorkflow(Enclave, EnclaveInput{ID: "enc_1", Account: "acct_1", Ref: "r", LogEvery: time.Hour})
	if !env.IsWorkflowCompleted() || env.GetWorkflowError() != nil {
		t.Fatalf("workflow: %v", env.GetWorkflowError())
	}

	conflictIn := func(id, status string) {
		t.Helper()
		var app *temporal.ApplicationError
		o := got[id]
		if o == nil || !errors.As(o.rejected, &app) || app.Type() != ErrEnclaveConflict {
			t.Fatalf("%s: %+v, want a conflict", id, o)
		}
		var st string
		if err := app.Details(&st); err != nil || st != status {
			t.Fatalf("%s: status %q %v, want %s", id, st, err, status)
		}
	}
	conflictIn("attest-deploying", "DEPLOYING")
	conflictIn("sign-paused", "PAUSED")
	var app *temporal.ApplicationError
	if o := got["sign-short"]; o == nil || !errors.As(o.rejected, &app) || app.Type() != activities.ErrSignerInvalid {
		t.Fatalf("a malformed request: %+v", o)
	}
	if o := got["attest"]; o == nil || o.rejected != nil || o.err != nil || o.value.(signer.Evidence).State != signer.AttestationVerified {
		t.Fatalf("attest: %+v", o)
	}
	if o := got["sign"]; o == nil || o.rejected != nil || o.err != nil || o.value.(signer.Signed).Signer != "0xabc" {
		t.Fatalf("sign: %+v", o)
	}
	if attests != 1 || signs != 1 {
		t.Fatalf("the agent was asked %d attest and %d sign", attests, signs)
	}
}
