package workflows

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"

	"conduit/activities"
	"conduit/internal/store"
)

// renderInput is a paid speech run (or, with retryOf, a retry) as the
// frontend starts it, written as its JSON so these tests read the input's
// wire shape, which recorded histories also hold.
func renderInput(t *testing.T, retryOf string) RenderInput {
	t.Helper()
	raw := `{"Run": {"RunID": "r1", "Kind": "speech", "Request": {"model": "speech-v3", "text": "Hello."},
		"Network": "eip155:8453", "Payer": "0x00000000000000000000000000000000000000aa", "Price": 20000},
		"Payment": {}, "Resource": "/api/x402/speech",
		"Deadline": 45000000000, "Collect": 90000000000, "HeartbeatTimeout": 10000000000}`
	if retryOf != "" {
		raw = `{"Run": {"RunID": "r2", "Kind": "speech", "Request": {"model": "speech-v3", "text": "Hello."}, "Price": 20000},
			"RetryOf": "` + retryOf + `", "Deadline": 45000000000, "Collect": 90000000000, "HeartbeatTimeout": 10000000000}`
	}
	var in RenderInput
	if err := json.Unmarshal([]byte(raw), &in); err != nil {
		t.Fatal(err)
	}
	return in
}

// renderEnv is a test environment with the render's activities registered
// under their names; every test mocks the ones its path reaches, and the
// record of what FinishRender and MarkLate were given.
type renderEnv struct {
	*testsuite.TestWorkflowEnvironment
	finished []store.MediaResult
	marked   []string
}

func newRenderEnv() *renderEnv {
	var s testsuite.WorkflowTestSuite
	e := &renderEnv{TestWorkflowEnvironment: s.NewTestWorkflowEnvironment()}
	r, p := &activities.Renders{}, &activities.Payments{}
	for name, fn := range map[string]any{
		ActSettle: p.Settle, ActOpenPaid: r.OpenPaid, ActCreditPayment: r.CreditPayment, ActOpenRetry: r.OpenRetry,
		ActMarkLate: r.MarkLate, ActFinishRender: r.Finish, ActRender: r.Render,
	} {
		e.RegisterActivityWithOptions(fn, activity.RegisterOptions{Name: name})
	}
	e.OnActivity(ActFinishRender, mock.Anything, mock.Anything).Return(func(_ context.Context, res store.MediaResult) error {
		e.finished = append(e.finished, res)
		return nil
	})
	e.OnActivity(ActMarkLate, mock.Anything, mock.Anything, mock.Anything).Return(func(_ context.Context, runID, note string) error {
		e.marked = append(e.marked, runID)
		return nil
	})
	return e
}

// paid mocks a settled payment and the run it opens.
func (e *renderEnv) paid() {
	e.OnActivity(ActSettle, mock.Anything, mock.Anything).Return(activities.SettleOutcome{Success: true, Transaction: "0xtx", Payer: "0xAA"}, nil)
	e.OnActivity(ActOpenPaid, mock.Anything, mock.Anything).Return(store.MediaRun{RunID: "r1", Kind: "speech", Status: "running", Network: "eip155:8453"}, nil)
}

// admitted asks the admission update as a caller does and returns its
// answer as JSON fields (the answer's wire shape).
func (e *renderEnv) admitted(t *testing.T) map[string]any {
	got := map[string]any{}
	e.RegisterDelayedCallback(func() {
		e.UpdateWorkflow(AdmissionUpdate, "caller", &testsuite.TestUpdateCallback{
			OnAccept: func() {},
			OnReject: func(err error) { t.Errorf("admission rejected: %v", err) },
			OnComplete: func(v any, err error) {
				if err != nil {
					t.Errorf("admission: %v", err)
					return
				}
				b, _ := json.Marshal(v)
				_ = json.Unmarshal(b, &got)
			},
		})
	}, 0)
	return got
}

func (e *renderEnv) run(t *testing.T, in RenderInput) map[string]any {
	t.Helper()
	adm := e.admitted(t)
	e.ExecuteWorkflow(Render, in)
	if !e.IsWorkflowCompleted() || e.GetWorkflowError() != nil {
		t.Fatalf("workflow: %v", e.GetWorkflowError())
	}
	return adm
}

// A render that finishes inside its deadline is recorded a success and
// never marked late.
func TestRenderWithinItsDeadline(t *testing.T) {
	e := newRenderEnv()
	e.paid()
	e.OnActivity(ActRender, mock.Anything, mock.Anything).After(30*time.Second).Return(activities.Rendered{FileKey: "speech/r1.mp3"}, nil)
	adm := e.run(t, renderInput(t, ""))
	if adm["Accepted"] != true || len(e.marked) != 0 || len(e.finished) != 1 ||
		e.finished[0].Status != "success" || e.finished[0].FileKey != "speech/r1.mp3" {
		t.Fatalf("admission %v, marked %v, finished %+v", adm, e.marked, e.finished)
	}
}

// Past its deadline the run is marked late and the render still
// collected: a late file is a success.
func TestRenderPastItsDeadlineIsCollected(t *testing.T) {
	e := newRenderEnv()
	e.paid()
	var stage string
	e.RegisterDelayedCallback(func() {
		v, err := e.QueryWorkflow(StageQuery)
		if err == nil {
			err = v.Get(&stage)
		}
		if err != nil {
			t.Errorf("stage: %v", err)
		}
	}, time.Minute)
	e.OnActivity(ActRender, mock.Anything, mock.Anything).After(2*time.Minute).Return(activities.Rendered{FileKey: "speech/r1.mp3"}, nil)
	e.run(t, renderInput(t, ""))
	if stage != StageCollecting || len(e.marked) != 1 || len(e.finished) != 1 || e.finished[0].Status != "success" {
		t.Fatalf("stage %q, marked %v, finished %+v", stage, e.marked, e.finished)
	}
}

// A late render that then fails ends partial, its price released, and
// says why in the model's words.
func TestRenderLateThenFailedIsPartial(t *testing.T) {
	e := newRenderEnv()
	e.paid()
	e.OnActivity(ActRender, mock.Anything, mock.Anything).After(time.Minute).
		Return(activities.Rendered{}, temporal.NewNonRetryableApplicationError("the voice engine stopped", activities.ReasonRenderFailed, nil, "synthesize"))
	e.run(t, renderInput(t, ""))
	if len(e.marked) != 1 || len(e.finished) != 1 {
		t.Fatalf("marked %v, finished %+v", e.marked, e.finished)
	}
	if f := e.finished[0]; f.Status != "partial" || f.Error != "the voice engine stopped" || f.FailedStep != "synthesize" || f.Message == "" {
		t.Fatalf("%+v", f)
	}
	// The workflow's result names the outcome for the Temporal UI.
	var out RenderOutcome
	if err := e.GetWorkflowResult(&out); err != nil || out != (RenderOutcome{RunID: "r1", Status: "partial", Reason: activities.ReasonRenderFailed, Error: "the voice engine stopped"}) {
		t.Fatalf("result %+v, %v", out, err)
	}
}

// A refused payment is answered as such and nothing runs.
func TestRenderRefusedPayment(t *testing.T) {
	e := newRenderEnv()
	e.OnActivity(ActSettle, mock.Anything, mock.Anything).Return(activities.SettleOutcome{Reason: "insufficient_funds", Message: "invalid_payload: execution reverted"}, nil)
	adm := e.run(t, renderInput(t, ""))
	if adm["Accepted"] != false || adm["PaymentMessage"] != "invalid_payload: execution reverted" || len(e.finished) != 0 {
		t.Fatalf("admission %v, finished %+v", adm, e.finished)
	}
	var out RenderOutcome
	if err := e.GetWorkflowResult(&out); err != nil || out.Status != StatusRefused || out.Reason != "insufficient_funds" {
		t.Fatalf("result %+v, %v", out, err)
	}
}

// Settled but not recordable: the payment's value goes to the wallet and
// the caller is told so.
func TestRenderUnrecordableRunCreditsThePayment(t *testing.T) {
	e := newRenderEnv()
	e.OnActivity(ActSettle, mock.Anything, mock.Anything).Return(activities.SettleOutcome{Success: true, Transaction: "0xtx"}, nil)
	e.OnActivity(ActOpenPaid, mock.Anything, mock.Anything).Return(store.MediaRun{}, temporal.NewNonRetryableApplicationError("no", activities.ErrPermanent, nil))
	credited := 0
	e.OnActivity(ActCreditPayment, mock.Anything, mock.Anything).Return(func(context.Context, store.NewMediaRun) error { credited++; return nil })
	adm := e.run(t, renderInput(t, ""))
	if adm["Accepted"] != false || adm["Failed"] == "" || credited != 1 || len(e.finished) != 0 {
		t.Fatalf("admission %v, credited %d", adm, credited)
	}
}

// A retry opens from the old run (no payment) and renders; a refused
// retry says why and renders nothing.
func TestRenderRetry(t *testing.T) {
	e := newRenderEnv()
	e.OnActivity(ActOpenRetry, mock.Anything, mock.Anything).Return(func(_ context.Context, in activities.RetryInput) (activities.OpenedRetry, error) {
		if in.OldRunID != "r1" {
			t.Errorf("retry of %q", in.OldRunID)
		}
		return activities.OpenedRetry{Run: store.MediaRun{RunID: "r2", Kind: "speech", Status: "running", Network: "eip155:8453"}}, nil
	})
	e.OnActivity(ActRender, mock.Anything, mock.Anything).Return(activities.Rendered{FileKey: "speech/r2.mp3"}, nil)
	adm := e.run(t, renderInput(t, "r1"))
	if adm["Accepted"] != true || len(e.finished) != 1 || e.finished[0].Status != "success" || e.finished[0].RunID != "r2" {
		t.Fatalf("admission %v, finished %+v", adm, e.finished)
	}

	e = newRenderEnv()
	e.OnActivity(ActOpenRetry, mock.Anything, mock.Anything).Return(activities.OpenedRetry{Refusal: &store.RetryRefusal{Why: "retried", RetriedBy: "r3"}}, nil)
	adm = e.run(t, renderInput(t, "r1"))
	retry, _ := adm["Retry"].(map[string]any)
	if adm["Accepted"] != false || retry["Why"] != "retried" || len(e.finished) != 0 {
		t.Fatalf("admission %v, finished %+v", adm, e.finished)
	}
}

// A step that gives up fails the admission as well, so the caller is not
// left waiting and the workflow can end.
func TestRenderAdmissionFailureReachesTheCaller(t *testing.T) {
	e := newRenderEnv()
	e.OnActivity(ActSettle, mock.Anything, mock.Anything).Return(activities.SettleOutcome{}, temporal.NewNonRetryableApplicationError("facilitator gone", activities.ErrPermanent, nil))
	var admErr error
	e.RegisterDelayedCallback(func() {
		e.UpdateWorkflow(AdmissionUpdate, "caller", &testsuite.TestUpdateCallback{
			OnAccept: func() {}, OnReject: func(err error) { admErr = err },
			OnComplete: func(_ any, err error) { admErr = err },
		})
	}, 0)
	e.ExecuteWorkflow(Render, renderInput(t, ""))
	if e.GetWorkflowError() == nil || admErr == nil || !errors.As(admErr, new(*temporal.ActivityError)) {
		t.Fatalf("workflow %v, admission %v", e.GetWorkflowError(), admErr)
	}
}
