package workflows

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// Change ids are written into histories: renaming one breaks every open
// workflow that recorded it. This pins their spelling, and reads the
// workflow code to check that every GetVersion names one of them (no
// literal ids) and that none is left unused.
func TestChangeIDsArePinned(t *testing.T) {
	pinned := map[string]string{
		"ChangeAdmissionInWorkflow":   "admission-in-workflow",
		"ChangeEnclaveResumableSteps": "enclave-resumable-steps",
		"ChangeGitHubBuild":           "enclave-github-build",
		"ChangeEnclaveSyncTasks":      "enclave-sync-tasks",
		"ChangeEnclaveAdmission":      "enclave-admission",
		"ChangeTopUpAdmission":        "topup-admission",
		"ChangeRenderLocalSteps":      "render-local-steps",
		"ChangeDataflow":              "pipeline-dataflow",
		"ChangeMeteredMediaJobs":      "metered-media-jobs",
		"ChangeRedactGuardrail":       "redact-guardrail",
		"ChangeRedactNames":           "redact-names",
		"ChangeTaskMetering":          "task-metering",
		"ChangeEnclaveMetering":       "enclave-metering",
		"ChangeTopUpLocalSettle":      "topup-local-settle",
		"ChangeZKStatusInRow":         "zk-status-in-row",
	}
	got := map[string]string{
		"ChangeAdmissionInWorkflow":   ChangeAdmissionInWorkflow,
		"ChangeEnclaveResumableSteps": ChangeEnclaveResumableSteps,
		"ChangeGitHubBuild":           ChangeGitHubBuild,
		"ChangeEnclaveSyncTasks":      ChangeEnclaveSyncTasks,
		"ChangeEnclaveAdmission":      ChangeEnclaveAdmission,
		"ChangeTopUpAdmission":        ChangeTopUpAdmission,
		"ChangeRenderLocalSteps":      ChangeRenderLocalSteps,
		"ChangeDataflow":              ChangeDataflow,
		"ChangeMeteredMediaJobs":      ChangeMeteredMediaJobs,
		"ChangeRedactGuardrail":       ChangeRedactGuardrail,
		"ChangeRedactNames":           ChangeRedactNames,
		"ChangeTaskMetering":          ChangeTaskMetering,
		"ChangeEnclaveMetering":       ChangeEnclaveMetering,
		"ChangeTopUpLocalSettle":      ChangeTopUpLocalSettle,
		"ChangeZKStatusInRow":         ChangeZKStatusInRow,
	}
	for name, want := range pinned {
		if got[name] != want {
			t.Errorf("%s = %q; histories recorded %q", name, got[name], want)
		}
	}

	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	call := regexp.MustCompile(`GetVersion\(\s*ctx,\s*([^,]+),`)
	used := map[string]bool{}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range call.FindAllStringSubmatch(string(b), -1) {
			id := strings.TrimSpace(m[1])
			if _, ok := pinned[id]; !ok {
				t.Errorf("%s: GetVersion(ctx, %s, …) does not name a Change constant of names.go", f, id)
			}
			used[id] = true
		}
	}
	for name := range pinned {
		if !used[name] {
			t.Errorf("%s is pinned but no workflow calls GetVersion with it", name)
		}
	}
}
