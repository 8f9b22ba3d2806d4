package workflows

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"conduit/internal/codec"
)

// Histories recorded from real runs of every workflow type and outcome
// (apptest captures them: CONDUIT_CAPTURE_HISTORIES=<dir> on the frontend
// test package) must replay on today's code: a change to the order of a
// workflow's commands that would break runs in flight on a rolling deploy
// fails here first (docs/operations.md has the rule).
func TestRecordedHistoriesReplay(t *testing.T) {
	files, err := filepath.Glob("testdata/histories/*.json")
	if err != nil {
		t.Fatal(err)
	}
	// Every outcome the replay suite promises to cover.
	for _, want := range []string{
		"pipelinerun-success", "pipelinerun-partial", "pipelinerun-error",
		"render-success", "render-error", "render-partial", "render-refused",
		"topup-success", "topup-refused",
		"mediaedit-success", "mediaedit-error", "mediaedit-refused",
	} {
		found := false
		for _, f := range files {
			found = found || strings.HasPrefix(filepath.Base(f), want+"-")
		}
		if !found {
			t.Errorf("no recorded history for %s", want)
		}
	}
	// Histories captured with the codec on are sealed with the key kept
	// beside them (test data, not a secret).
	var opts worker.WorkflowReplayerOptions
	if key, err := os.ReadFile("testdata/histories/codec.key"); err == nil {
		cd, err := codec.Parse(strings.TrimSpace(string(key)))
		if err != nil {
			t.Fatal(err)
		}
		opts.DataConverter = cd.DataConverter()
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			r, err := worker.NewWorkflowReplayerWithOptions(opts)
			if err != nil {
				t.Fatal(err)
			}
			r.RegisterWorkflowWithOptions(PipelineRun, workflow.RegisterOptions{Name: WfPipelineRun})
			r.RegisterWorkflowWithOptions(Render, workflow.RegisterOptions{Name: WfRender})
			r.RegisterWorkflowWithOptions(TopUp, workflow.RegisterOptions{Name: WfTopUp})
			r.RegisterWorkflowWithOptions(MediaEdit, workflow.RegisterOptions{Name: WfMediaEdit})
			r.RegisterWorkflowWithOptions(Enclave, workflow.RegisterOptions{Name: WfEnclave})
			r.RegisterWorkflowWithOptions(TaskRun, workflow.RegisterOptions{Name: WfTaskRun})
			r.RegisterWorkflowWithOptions(TaskAdmit, workflow.RegisterOptions{Name: WfTaskAdmit})
			r.RegisterWorkflowWithOptions(PackPurchase, workflow.RegisterOptions{Name: WfPackPurchase})
			if err := r.ReplayWorkflowHistoryFromJSONFile(nil, f); err != nil {
				t.Fatal(err)
			}
		})
	}
}
