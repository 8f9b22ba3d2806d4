package workflows_test

import (
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	sdkworker "go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"conduit/internal/codec"
	"conduit/worker"
	"conduit/workflows"
)

// outcomes are the recorded outcomes the replay suite promises to cover,
// by workflow: a history named <workflow>-<outcome>-… for each. Every
// workflow the worker registers needs an entry (the test fails for one
// without), so a new workflow cannot be left out of the suite.
var outcomes = map[string][]string{
	workflows.WfPipelineRun:  {"success", "partial", "error", "refused", "duplicate", "success-pipeline-dataflow-1", "partial-pipeline-dataflow-1"},
	workflows.WfRender:       {"success", "error", "partial", "refused"},
	workflows.WfTopUp:        {"success", "refused"},
	workflows.WfMediaEdit:    {"success", "error", "refused", "duplicate"},
	workflows.WfEnclave:      {"destroyed", "failed"},
	workflows.WfTaskRun:      {"none"},
	workflows.WfTaskAdmit:    {"none"},
	workflows.WfPackPurchase: {"success"},
	workflows.WfMail:         {"success"},
	// Proof jobs: failed at Valid, verify-only, aggregated (docs/proofs.md).
	workflows.ZKJobWorkflowName: {"none"},
	// KYC proofs: failed at verification, expired after confirmation.
	workflows.WfKYCProof: {"none"},
	// A domain's aggregation never completes: one batch per run, then it
	// continues as new (frontend/zkagg_test.go captures that run).
	workflows.ZKAggregationWorkflowName: {"continued"},
	// A zkPassport request closed by its verification, or expired.
	workflows.WfZKPassportRequest: {"none"},
	// The system's probes record nothing worth replaying: they have no
	// branches and no activities but one.
	workflows.WfPing: nil,
	workflows.WfNop:  nil,
}

// Histories recorded from real runs of every workflow type and outcome
// (apptest captures them: CONDUIT_CAPTURE_HISTORIES=<dir> on the frontend
// test package) must replay on today's code: a change to the order of a
// workflow's commands that would break runs in flight on a rolling deploy
// fails here first (docs/operations.md has the rule). The workflows are
// the worker's own registrations (worker.Workflows), under their names.
func TestRecordedHistoriesReplay(t *testing.T) {
	files, err := filepath.Glob("testdata/histories/*.json")
	if err != nil {
		t.Fatal(err)
	}
	registered := worker.Workflows()
	for _, name := range slices.Sorted(maps.Keys(registered)) {
		want, ok := outcomes[name]
		if !ok {
			t.Errorf("workflow %s is registered but the replay suite names no outcome of it: add it to outcomes and capture its histories", name)
		}
		for _, o := range want {
			prefix := strings.ToLower(name) + "-" + o + "-"
			if !slices.ContainsFunc(files, func(f string) bool { return strings.HasPrefix(filepath.Base(f), prefix) }) {
				t.Errorf("no recorded history for %s %s", name, o)
			}
		}
	}
	// Histories captured with the codec on are sealed with the key kept
	// beside them (test data, not a secret).
	var opts sdkworker.WorkflowReplayerOptions
	if key, err := os.ReadFile("testdata/histories/codec.key"); err == nil {
		cd, err := codec.Parse(strings.TrimSpace(string(key)))
		if err != nil {
			t.Fatal(err)
		}
		opts.DataConverter = cd.DataConverter()
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			r, err := sdkworker.NewWorkflowReplayerWithOptions(opts)
			if err != nil {
				t.Fatal(err)
			}
			for name, fn := range registered {
				r.RegisterWorkflowWithOptions(fn, workflow.RegisterOptions{Name: name})
			}
			if err := r.ReplayWorkflowHistoryFromJSONFile(nil, f); err != nil {
				t.Fatal(err)
			}
		})
	}
}
