package workflows

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/testsuite"

	"conduit/activities"
	"conduit/internal/enclaves"
	"conduit/internal/enclaves/provider"
)

// runGitHub runs a github-sourced enclave's lifecycle with the build
// answering build, terminated at 30 s; it answers the statuses the record
// went through, the log entries written and how many deployments ran.
func runGitHub(t *testing.T, build func(context.Context, string) (activities.Built, error)) ([]enclaves.Status, []string, int) {
	t.Helper()
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	e := &activities.Enclaves{}
	for name, fn := range map[string]any{ActEnclaveProject: e.Project, ActEnclavePrepare: e.Prepare, ActEnclaveDeploy: e.Deploy,
		ActEnclaveTerminate: e.Terminate, ActEnclaveCopyLogs: e.CopyLogs, ActEnclaveWatch: e.Watch, ActEnclaveBuild: e.Build} {
		env.RegisterActivityWithOptions(fn, activity.RegisterOptions{Name: name})
	}
	var statuses []enclaves.Status
	var notes []string
	builds, deploys := 0, 0
	env.OnActivity(ActEnclaveProject, mock.Anything, mock.Anything).Return(func(_ context.Context, s activities.EnclaveStep) error {
		if n := len(statuses); n == 0 || statuses[n-1] != s.Projection.Status {
			statuses = append(statuses, s.Projection.Status)
		}
		for _, l := range s.Logs {
			notes = append(notes, l.Type+": "+l.Message)
		}
		return nil
	})
	env.OnActivity(ActEnclaveBuild, mock.Anything, mock.Anything).Return(func(ctx context.Context, id string) (activities.Built, error) {
		builds++
		return build(ctx, id)
	})
	env.OnActivity(ActEnclavePrepare, mock.Anything, mock.Anything).Return(activities.Prepared{Image: provider.Image{Ref: "r/builds/o/a@sha256:ab"}}, nil)
	env.OnActivity(ActEnclaveDeploy, mock.Anything, mock.Anything).Return(func(context.Context, activities.DeployInput) (provider.Instance, error) {
		deploys++
		return provider.Instance{Addr: "127.0.0.1:1"}, nil
	})
	env.OnActivity(ActEnclaveTerminate, mock.Anything, mock.Anything).Return(nil)
	env.OnActivity(ActEnclaveCopyLogs, mock.Anything, mock.Anything).Return(0, nil)
	env.OnActivity(ActEnclaveWatch, mock.Anything, mock.Anything).Return(activities.Watched{Status: provider.Status{Phase: provider.PhaseRunning}}, nil)
	terminateAt(env, 30*time.Second, t)
	env.ExecuteWorkflow(Enclave, EnclaveInput{ID: "enc_1", Account: "acct_1", Source: enclaves.SourceGitHub, LogEvery: time.Second})
	if !env.IsWorkflowCompleted() || env.GetWorkflowError() != nil {
		t.Fatalf("workflow: %v", env.GetWorkflowError())
	}
	if builds != 1 {
		t.Fatalf("%d builds", builds)
	}
	return statuses, notes, deploys
}

func statusList(s []enclaves.Status) string {
	out := make([]string, len(s))
	for i, x := range s {
		out[i] = string(x)
	}
	return strings.Join(out, " ")
}

func TestEnclaveBuildsThenDeploys(t *testing.T) {
	st, notes, deploys := runGitHub(t, func(context.Context, string) (activities.Built, error) {
		return activities.Built{Image: "r/builds/o/a@sha256:ab", Commit: "c0ffee", Binary: "/ko-app/a"}, nil
	})
	if got := statusList(st); got != "PENDING_BUILD BUILDING PENDING_DEPLOY DEPLOYING DEPLOYED PENDING_DESTROY DESTROYING DESTROYED" || deploys != 1 {
		t.Fatalf("statuses %s, deploys %d", got, deploys)
	}
	joined := strings.Join(notes, "\n")
	for _, want := range []string{"build: built r/builds/o/a@sha256:ab (/ko-app/a) from commit c0ffee", "ecs: pulling and measuring r/builds/o/a@sha256:ab"} {
		if !strings.Contains(joined, want) {
			t.Fatalf("notes lack %q:\n%s", want, joined)
		}
	}
}

// A permanent build failure: BUILD_FAILED with the reason, nothing
// deployed, and the workflow waits for its terminate.
func TestEnclaveBuildFails(t *testing.T) {
	st, notes, deploys := runGitHub(t, func(_ context.Context, id string) (activities.Built, error) {
		// As activities.Classify hands a permanent build error to Temporal.
		err := provider.Errorf(provider.Permanent, "build", id, "go build failed: undefined: x")
		return activities.Built{}, activities.Classify(err)
	})
	if got := statusList(st); got != "PENDING_BUILD BUILDING BUILD_FAILED PENDING_DESTROY DESTROYING DESTROYED" || deploys != 0 {
		t.Fatalf("statuses %s, deploys %d", got, deploys)
	}
	if joined := strings.Join(notes, "\n"); !strings.Contains(joined, "errors: the build failed: ") || !strings.Contains(joined, "undefined: x") {
		t.Fatalf("notes:\n%s", joined)
	}
}
