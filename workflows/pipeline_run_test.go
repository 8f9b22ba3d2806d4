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
	"conduit/internal/money"
	"conduit/internal/store"
)

const twoBranchGraph = `{
  "nodes": [
    {"id": "q", "type": "input", "key": "q"},
    {"id": "a", "type": "model", "model": "m", "prompt": "A {{q}}"},
    {"id": "b", "type": "model", "model": "m", "prompt": "B {{q}}"},
    {"id": "outA", "type": "output", "key": "a", "from": "a"},
    {"id": "outB", "type": "output", "key": "b", "from": "b"}
  ],
  "edges": [{"from": "q", "to": "a"}, {"from": "q", "to": "b"}, {"from": "a", "to": "outA"}, {"from": "b", "to": "outB"}]
}`

func runWorkflow(t *testing.T, generate func(context.Context, activities.GenerateInput) (activities.GenerateOutput, error)) (RunState, store.RunResult) {
	t.Helper()
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	env.RegisterActivityWithOptions((&activities.Models{}).Generate, activity.RegisterOptions{Name: ActGenerate})
	env.RegisterActivityWithOptions((&activities.Runs{}).Finish, activity.RegisterOptions{Name: ActFinishRun})
	env.RegisterActivityWithOptions((&activities.Runs{}).Open, activity.RegisterOptions{Name: ActOpenRun})
	env.OnActivity(ActOpenRun, mock.Anything, mock.Anything).Return(activities.OpenedRun{RunID: "r1", Status: StatusRunning}, nil)
	env.OnActivity(ActGenerate, mock.Anything, mock.Anything).Return(generate)
	var finished store.RunResult
	env.OnActivity(ActFinishRun, mock.Anything, mock.Anything).Return(func(_ context.Context, in store.RunResult) error {
		finished = in
		return nil
	})
	t0 := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	env.SetStartTime(t0)
	env.ExecuteWorkflow(PipelineRun, RunInput{
		RunID: "r1", Graph: json.RawMessage(twoBranchGraph), Inputs: map[string]string{"q": "x"},
		Held: 100, ModelTimeout: time.Minute, ModelAttempts: 2, StartedAt: t0, InlineNodes: []string{"a"},
	})
	if !env.IsWorkflowCompleted() || env.GetWorkflowError() != nil {
		t.Fatalf("workflow: %v", env.GetWorkflowError())
	}
	var st RunState
	if err := env.GetWorkflowResult(&st); err != nil {
		t.Fatal(err)
	}
	return st, finished
}

func TestBranchesRunInParallelAndSucceed(t *testing.T) {
	st, fin := runWorkflow(t, func(_ context.Context, in activities.GenerateInput) (activities.GenerateOutput, error) {
		return activities.GenerateOutput{Text: in.Request.Prompt, PromptTokens: 2, CompletionTokens: 3, Cost: 30}, nil
	})
	if st.Status != StatusSuccess || st.Outputs["a"] != "A x" || st.Outputs["b"] != "B x" || st.PromptTokens != 4 || st.CompletionTokens != 6 {
		t.Fatalf("%+v", st)
	}
	if fin.Status != StatusSuccess || fin.Cost != 60 {
		t.Fatalf("finish %+v", fin)
	}
}

func TestChargeNeverExceedsTheHold(t *testing.T) {
	_, fin := runWorkflow(t, func(context.Context, activities.GenerateInput) (activities.GenerateOutput, error) {
		return activities.GenerateOutput{Text: "t", Cost: 80}, nil
	})
	if fin.Cost != money.Micros(100) {
		t.Fatalf("charge %s, want the 100 held", fin.Cost)
	}
}

func TestOneFailedBranchMakesThePartialRunFree(t *testing.T) {
	st, fin := runWorkflow(t, func(_ context.Context, in activities.GenerateInput) (activities.GenerateOutput, error) {
		if in.NodeID == "b" {
			return activities.GenerateOutput{}, temporal.NewNonRetryableApplicationError("provider said no", activities.ErrTypeModelRequest, errors.New("no"))
		}
		return activities.GenerateOutput{Text: "ok", Cost: 10}, nil
	})
	if st.Status != StatusPartial || st.Outputs["a"] != "ok" || st.Error != `node "b" failed: provider said no` {
		t.Fatalf("%+v", st)
	}
	var outB NodeState
	for _, n := range st.Nodes {
		if n.ID == "outB" {
			outB = n
		}
	}
	if outB.Status != NodeSkipped {
		t.Fatalf("downstream of a failure must be skipped: %+v", outB)
	}
	if fin.Status != StatusPartial || fin.Cost != 0 {
		t.Fatalf("finish %+v", fin)
	}
}

func TestAllFailedIsError(t *testing.T) {
	st, fin := runWorkflow(t, func(context.Context, activities.GenerateInput) (activities.GenerateOutput, error) {
		return activities.GenerateOutput{}, temporal.NewNonRetryableApplicationError("down", activities.ErrTypeModelRequest, nil)
	})
	if st.Status != StatusError || fin.Cost != 0 || len(st.Outputs) != 0 {
		t.Fatalf("%+v %+v", st, fin)
	}
}

// A run is admitted only within AdmitWithin of its request, and one
// without an Idempotency-Key only within AnswerWithin (its caller may
// already have been told that nothing was charged). The admission step
// judges it, by the database's clock (store.NewRun.AdmitBy), so that a
// step that runs again after its worker died still finds the run it wrote;
// a late step writes nothing and the workflow admits nothing.
func TestLateAdmissionWritesNothing(t *testing.T) {
	t0 := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		key      string
		at       time.Duration
		admitBy  time.Duration
		admitted bool
	}{
		{"", AnswerWithin - time.Second, AnswerWithin, true},
		{"", AnswerWithin + time.Second, AnswerWithin, false},
		{"order-1", AnswerWithin + time.Second, AdmitWithin, true},
		{"order-1", AdmitWithin + time.Second, AdmitWithin, false},
	} {
		var s testsuite.WorkflowTestSuite
		env := s.NewTestWorkflowEnvironment()
		env.RegisterActivityWithOptions((&activities.Runs{}).Open, activity.RegisterOptions{Name: ActOpenRun})
		env.RegisterActivityWithOptions((&activities.Runs{}).Finish, activity.RegisterOptions{Name: ActFinishRun})
		var asked store.NewRun
		// The step as the store takes it, its clock at the workflow's time.
		env.OnActivity(ActOpenRun, mock.Anything, mock.Anything).Return(func(_ context.Context, in activities.OpenRunInput) (activities.OpenedRun, error) {
			asked = in.Run
			if t0.Add(c.at).After(in.Run.AdmitBy) {
				return activities.OpenedRun{Expired: true}, nil
			}
			return activities.OpenedRun{RunID: "r1", Status: StatusRunning}, nil
		})
		env.OnActivity(ActFinishRun, mock.Anything, mock.Anything).Return(nil)
		env.SetStartTime(t0.Add(c.at))
		env.ExecuteWorkflow(PipelineRun, RunInput{RunID: "r1", Graph: json.RawMessage(`{"nodes":[],"edges":[]}`), StartedAt: t0, IdempotencyKey: c.key})
		var st RunState
		if err := env.GetWorkflowResult(&st); err != nil {
			t.Fatal(err)
		}
		if !asked.AdmitBy.Equal(t0.Add(c.admitBy)) || (st.Status != StatusRefused) != c.admitted {
			t.Fatalf("key %q at +%v: admit by %v, ended %+v", c.key, c.at, asked.AdmitBy.Sub(t0), st)
		}
	}
}

// An unkeyed run whose admission completes later than AnswerWithin (the
// step ran again after its worker died, or the database held it up) is
// ended unrun with its hold released (FailRun), and a caller still waiting
// is told it was not admitted.
func TestUnkeyedAdmissionCompletedLateIsWithdrawn(t *testing.T) {
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	env.RegisterActivityWithOptions((&activities.Runs{}).Open, activity.RegisterOptions{Name: ActOpenRun})
	env.RegisterActivityWithOptions((&activities.Runs{}).Fail, activity.RegisterOptions{Name: ActFailRun})
	env.RegisterActivityWithOptions((&activities.Models{}).Generate, activity.RegisterOptions{Name: ActGenerate})
	env.OnActivity(ActOpenRun, mock.Anything, mock.Anything).After(AnswerWithin+time.Second).
		Return(activities.OpenedRun{RunID: "r1", Status: StatusRunning}, nil)
	var failed activities.FailInput
	env.OnActivity(ActFailRun, mock.Anything, mock.Anything).Return(func(_ context.Context, in activities.FailInput) error {
		failed = in
		return nil
	})
	generated := false
	env.OnActivity(ActGenerate, mock.Anything, mock.Anything).Return(func(context.Context, activities.GenerateInput) (activities.GenerateOutput, error) {
		generated = true
		return activities.GenerateOutput{}, nil
	})
	var answer RunAdmission
	askAdmission(t, env, &answer)
	t0 := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	env.SetStartTime(t0)
	env.ExecuteWorkflow(PipelineRun, RunInput{RunID: "r1", Graph: json.RawMessage(twoBranchGraph), Inputs: map[string]string{"q": "x"},
		Held: 100, ModelTimeout: time.Minute, ModelAttempts: 2, StartedAt: t0})
	var st RunState
	if err := env.GetWorkflowResult(&st); err != nil {
		t.Fatal(err)
	}
	if st.Status != StatusError || st.Error != LateAdmissionError || failed.RunID != "r1" || failed.Error != LateAdmissionError || generated {
		t.Fatalf("%+v failed=%+v generated=%v", st, failed, generated)
	}
	if !answer.Expired || answer.Accepted {
		t.Fatalf("the waiting caller was answered %+v", answer)
	}
}

// When the admission step finds the workflow's own run already finished
// (its worker died after finishing the run within the admission's
// workflow task, and the task ran again), the run is not run again: the
// caller is answered with its run (not as a replay of another request)
// and the workflow ends with the run's recorded outcome, which chat
// completions read.
func TestOwnRunFoundFinishedEndsWithItsRecord(t *testing.T) {
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	env.RegisterActivityWithOptions((&activities.Runs{}).Open, activity.RegisterOptions{Name: ActOpenRun})
	env.RegisterActivityWithOptions((&activities.Models{}).Generate, activity.RegisterOptions{Name: ActGenerate})
	env.RegisterActivityWithOptions((&activities.Runs{}).Finish, activity.RegisterOptions{Name: ActFinishRun})
	env.OnActivity(ActOpenRun, mock.Anything, mock.Anything).Return(activities.OpenedRun{RunID: "r1", Status: StatusSuccess, Existing: true,
		Recorded: &activities.RecordedRun{Outputs: map[string]string{"a": "A x", "b": "B x"}, Nodes: json.RawMessage(`[{"id":"a","type":"model","status":"success"}]`),
			PromptTokens: 4, CompletionTokens: 4, Cost: 7}}, nil)
	ran := false
	env.OnActivity(ActGenerate, mock.Anything, mock.Anything).Return(func(context.Context, activities.GenerateInput) (activities.GenerateOutput, error) {
		ran = true
		return activities.GenerateOutput{}, nil
	})
	env.OnActivity(ActFinishRun, mock.Anything, mock.Anything).Return(func(context.Context, store.RunResult) error {
		ran = true
		return nil
	})
	var answer RunAdmission
	askAdmission(t, env, &answer)
	t0 := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	env.SetStartTime(t0)
	env.ExecuteWorkflow(PipelineRun, RunInput{RunID: "r1", Graph: json.RawMessage(twoBranchGraph), Inputs: map[string]string{"q": "x"},
		Held: 100, ModelTimeout: time.Minute, ModelAttempts: 2, StartedAt: t0})
	var st RunState
	if err := env.GetWorkflowResult(&st); err != nil {
		t.Fatal(err)
	}
	if ran || st.Status != StatusSuccess || st.Outputs["a"] != "A x" || st.Cost != 7 || st.PromptTokens != 4 || len(st.Nodes) != 1 {
		t.Fatalf("ran=%v %+v", ran, st)
	}
	if !answer.Accepted || answer.Existing || answer.RunID != "r1" || answer.Status != StatusSuccess {
		t.Fatalf("the caller was answered %+v", answer)
	}
}

// askAdmission sends the admission update as caller "r1" as soon as the
// workflow starts and keeps its answer in answer.
func askAdmission(t *testing.T, env *testsuite.TestWorkflowEnvironment, answer *RunAdmission) {
	env.RegisterDelayedCallback(func() {
		env.UpdateWorkflow(AdmissionUpdate, "caller", &testsuite.TestUpdateCallback{
			OnAccept: func() {},
			OnReject: func(err error) { t.Errorf("update rejected: %v", err) },
			OnComplete: func(v any, err error) {
				if err != nil {
					t.Errorf("update: %v", err)
					return
				}
				*answer = v.(RunAdmission)
			},
		}, RunRequest{RunID: "r1"})
	}, 0)
}

// A node starts the moment its inputs are ready: the fast branch (a, then
// c, which depends on a) finishes while the slow branch (b, 10 s) is still
// running, instead of waiting for b's layer to end.
func TestFastBranchDoesNotWaitForSlowOne(t *testing.T) {
	const g = `{
  "nodes": [
    {"id": "q", "type": "input", "key": "q"},
    {"id": "a", "type": "model", "model": "m", "prompt": "A {{q}}"},
    {"id": "b", "type": "model", "model": "m", "prompt": "B {{q}}"},
    {"id": "c", "type": "model", "model": "m", "prompt": "C {{a}}"},
    {"id": "outC", "type": "output", "key": "c", "from": "c"},
    {"id": "outB", "type": "output", "key": "b", "from": "b"}
  ],
  "edges": [{"from": "q", "to": "a"}, {"from": "q", "to": "b"}, {"from": "a", "to": "c"}, {"from": "c", "to": "outC"}, {"from": "b", "to": "outB"}]
}`
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	env.RegisterActivityWithOptions((&activities.Models{}).Generate, activity.RegisterOptions{Name: ActGenerate})
	env.RegisterActivityWithOptions((&activities.Runs{}).Finish, activity.RegisterOptions{Name: ActFinishRun})
	env.RegisterActivityWithOptions((&activities.Runs{}).Open, activity.RegisterOptions{Name: ActOpenRun})
	env.OnActivity(ActOpenRun, mock.Anything, mock.Anything).Return(activities.OpenedRun{RunID: "r1", Status: StatusRunning}, nil)
	answer := func(_ context.Context, in activities.GenerateInput) (activities.GenerateOutput, error) {
		return activities.GenerateOutput{Text: in.Request.Prompt}, nil
	}
	isNode := func(id string) any {
		return mock.MatchedBy(func(in activities.GenerateInput) bool { return in.NodeID == id })
	}
	env.OnActivity(ActGenerate, mock.Anything, isNode("b")).After(10 * time.Second).Return(answer)
	env.OnActivity(ActGenerate, mock.Anything, mock.Anything).Return(answer)
	env.OnActivity(ActFinishRun, mock.Anything, mock.Anything).Return(nil)
	t0 := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	env.SetStartTime(t0)
	env.ExecuteWorkflow(PipelineRun, RunInput{
		RunID: "r1", Graph: json.RawMessage(g), Inputs: map[string]string{"q": "x"},
		Held: 100, ModelTimeout: time.Minute, ModelAttempts: 2, StartedAt: t0, InlineNodes: []string{"a"},
	})
	if !env.IsWorkflowCompleted() || env.GetWorkflowError() != nil {
		t.Fatalf("workflow: %v", env.GetWorkflowError())
	}
	var st RunState
	if err := env.GetWorkflowResult(&st); err != nil {
		t.Fatal(err)
	}
	if st.Status != StatusSuccess || st.Outputs["c"] != "C A x" || st.Outputs["b"] != "B x" {
		t.Fatalf("%+v", st)
	}
	at := map[string]NodeState{}
	for _, n := range st.Nodes {
		if n.StartedAt == nil || n.FinishedAt == nil {
			t.Fatalf("node %s has no times: %+v", n.ID, n)
		}
		at[n.ID] = n
	}
	if !at["outC"].FinishedAt.Before(*at["b"].FinishedAt) {
		t.Fatalf("the fast branch ended at %v, not before the slow node at %v", at["outC"].FinishedAt, at["b"].FinishedAt)
	}
	if !at["c"].StartedAt.Before(t0.Add(10 * time.Second)) {
		t.Fatalf("c started at %v, after the slow branch's 10 s", at["c"].StartedAt)
	}
	if got := at["b"].FinishedAt.Sub(t0); got < 10*time.Second {
		t.Fatalf("the slow node finished after %v, want its 10 s", got)
	}
}
