package workflows

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"

	"conduit/activities"
	"conduit/internal/enclaves"
)

func admitted() EnclaveInput {
	return EnclaveInput{ID: "enc_1", Account: "acct_1", Ref: "r/app:1", LogEvery: time.Second,
		Admit: &activities.NewEnclave{ID: "enc_1", Account: "acct_1", Status: enclaves.PendingDeploy, AskedAt: time.Now()}}
}

// The lifecycle admits itself: its first step writes the record, before
// any projection or provider step, and the admission update started with
// it answers that record. Record and workflow come into being together.
func TestEnclaveAdmissionWritesTheRecordFirst(t *testing.T) {
	w := &enclaveWorld{}
	var order []string
	var answer enclaves.Enclave
	w.runWith(t, admitted(), func(env *testsuite.TestWorkflowEnvironment) {
		env.OnActivity(ActEnclaveOpen, mock.Anything, mock.Anything).Return(func(_ context.Context, n activities.NewEnclave) (enclaves.Enclave, error) {
			w.mu.Lock()
			defer w.mu.Unlock()
			order = append(order, "open")
			if n.AdmitBy.IsZero() || !n.AdmitBy.Equal(n.AskedAt.Add(EnclaveAdmitWithin)) {
				t.Errorf("the step may write until %v; want %v", n.AdmitBy, n.AskedAt.Add(EnclaveAdmitWithin))
			}
			return enclaves.Enclave{ID: n.ID, AccountID: n.Account, Status: n.Status}, nil
		})
		env.OnActivity(ActEnclaveProject, mock.Anything, mock.Anything).Return(func(_ context.Context, s activities.EnclaveStep) error {
			w.mu.Lock()
			defer w.mu.Unlock()
			order = append(order, string(s.Projection.Status))
			return nil
		})
		env.RegisterDelayedCallback(func() {
			env.UpdateWorkflow(EnclaveAdmit, "admit", &testsuite.TestUpdateCallback{
				OnReject: func(err error) { t.Errorf("admission rejected: %v", err) },
				OnComplete: func(v any, err error) {
					if err != nil {
						t.Errorf("admission: %v", err)
						return
					}
					answer = v.(enclaves.Enclave)
				},
			})
		}, 0)
		terminateAt(env, 20*time.Second, t)
	})
	if len(order) == 0 || order[0] != "open" || strings.Count(strings.Join(order, ","), "open") != 1 {
		t.Fatalf("steps %v: the record must be written first, once", order)
	}
	if answer.ID != "enc_1" || answer.Status != enclaves.PendingDeploy {
		t.Fatalf("admission answered %+v", answer)
	}
}

// A record that cannot be written (its creator has stopped waiting) makes
// nothing: the admission answers the refusal and the lifecycle ends
// without a projection or a provider step.
func TestEnclaveAdmissionRefusedMakesNothing(t *testing.T) {
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	e := &activities.Enclaves{}
	env.RegisterActivityWithOptions(e.Open, activity.RegisterOptions{Name: ActEnclaveOpen})
	env.RegisterActivityWithOptions(e.Project, activity.RegisterOptions{Name: ActEnclaveProject})
	env.RegisterActivityWithOptions(e.Prepare, activity.RegisterOptions{Name: ActEnclavePrepare})
	env.OnActivity(ActEnclaveOpen, mock.Anything, mock.Anything).Return(enclaves.Enclave{},
		temporal.NewNonRetryableApplicationError("too late", activities.ErrEnclaveAdmitTooLate, nil))
	var refused error
	env.RegisterDelayedCallback(func() {
		env.UpdateWorkflow(EnclaveAdmit, "admit", &testsuite.TestUpdateCallback{
			OnReject:   func(err error) { refused = err },
			OnComplete: func(_ any, err error) { refused = err },
		})
	}, 0)
	env.ExecuteWorkflow(Enclave, admitted())
	if !env.IsWorkflowCompleted() || env.GetWorkflowError() != nil {
		t.Fatalf("workflow: %v", env.GetWorkflowError())
	}
	if refused == nil || !strings.Contains(refused.Error(), "too late") {
		t.Fatalf("admission answered %v, want the refusal", refused)
	}
	env.AssertNotCalled(t, "EnclaveProject", mock.Anything, mock.Anything)
	env.AssertNotCalled(t, "EnclavePrepare", mock.Anything, mock.Anything)
}
