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

// A workflow whose first step comes later than AdmitWithin (its workers
// were down) admits nothing: its caller was told long ago to retry.
func TestLateAdmissionWritesNothing(t *testing.T) {
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	env.RegisterActivityWithOptions((&activities.Runs{}).Open, activity.RegisterOptions{Name: ActOpenRun})
	opened := false
	env.OnActivity(ActOpenRun, mock.Anything, mock.Anything).Return(func(context.Context, activities.OpenRunInput) (activities.OpenedRun, error) {
		opened = true
		return activities.OpenedRun{}, nil
	})
	t0 := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	env.SetStartTime(t0.Add(AdmitWithin + time.Second))
	env.ExecuteWorkflow(PipelineRun, RunInput{RunID: "r1", Graph: json.RawMessage(twoBranchGraph), StartedAt: t0})
	var st RunState
	if err := env.GetWorkflowResult(&st); err != nil || st.Status != StatusRefused || opened {
		t.Fatalf("%+v %v opened=%v", st, err, opened)
	}
}
