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
)

type admitResult struct {
	got ZKPassportAdmitted
	err error
}

func (a *admitResult) Accept()          {}
func (a *admitResult) Reject(err error) { a.err = err }
func (a *admitResult) Complete(v any, err error) {
	if v != nil {
		a.got = v.(ZKPassportAdmitted)
	}
	a.err = err
}

func zkpEnv(t *testing.T) *testsuite.TestWorkflowEnvironment {
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	a := &activities.ZKPassport{}
	env.RegisterActivityWithOptions(a.Open, activity.RegisterOptions{Name: ActZKPassportOpen})
	env.RegisterActivityWithOptions(a.Expire, activity.RegisterOptions{Name: ActZKPassportExpire})
	return env
}

// Admitted, the request lives until its expiry, then is expired; a
// verification's signal ends it sooner without expiring it; a refusal
// is the admission's answer and ends it at once.
func TestZKPassportRequestLife(t *testing.T) {
	in := activities.ZKPassportOpen{ID: "zkp_1", MaxOpen: 1}

	env := zkpEnv(t)
	env.OnActivity(ActZKPassportOpen, mock.Anything, mock.Anything).Return(nil).Once()
	expired := false
	env.OnActivity(ActZKPassportExpire, mock.Anything, "zkp_1").Return(func(context.Context, string) error { expired = true; return nil }).Once()
	in.CreatedAt = env.Now()
	in.ExpiresAt = in.CreatedAt.Add(time.Hour)
	adm := &admitResult{}
	env.RegisterDelayedCallback(func() { env.UpdateWorkflow(UpdateZKPassportAdmit, "a", adm) }, 0)
	env.ExecuteWorkflow(ZKPassportRequest, in)
	if env.GetWorkflowError() != nil || adm.err != nil || adm.got.RequestID != "zkp_1" || !expired {
		t.Fatalf("expiry: %v %+v expired=%v", env.GetWorkflowError(), adm, expired)
	}

	env = zkpEnv(t)
	env.OnActivity(ActZKPassportOpen, mock.Anything, mock.Anything).Return(nil).Once()
	in.CreatedAt = env.Now()
	in.ExpiresAt = in.CreatedAt.Add(time.Hour)
	env.RegisterDelayedCallback(func() { env.SignalWorkflow(SignalZKPassportClosed, nil) }, time.Minute)
	env.ExecuteWorkflow(ZKPassportRequest, in)
	if env.GetWorkflowError() != nil {
		t.Fatal(env.GetWorkflowError())
	}
	env.AssertNotCalled(t, "Expire", mock.Anything, mock.Anything)

	env = zkpEnv(t)
	env.OnActivity(ActZKPassportOpen, mock.Anything, mock.Anything).Return(
		temporal.NewNonRetryableApplicationError("the account has 1 open zkPassport requests", activities.ErrZKPassportRefused, nil)).Once()
	adm = &admitResult{}
	env.RegisterDelayedCallback(func() { env.UpdateWorkflow(UpdateZKPassportAdmit, "a", adm) }, 0)
	env.ExecuteWorkflow(ZKPassportRequest, in)
	var app *temporal.ApplicationError
	if env.GetWorkflowError() != nil || adm.err == nil || !errors.As(adm.err, &app) || app.Type() != activities.ErrZKPassportRefused {
		t.Fatalf("refusal: %v %v", env.GetWorkflowError(), adm.err)
	}
}
