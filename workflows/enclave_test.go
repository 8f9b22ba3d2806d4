package workflows

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/testsuite"

	"conduit/activities"
	"conduit/internal/enclaves"
	"conduit/internal/enclaves/provider"
)

// enclaveWorld plays the activities of one enclave's lifecycle: a provider
// whose instance the test can lose or end, and the record's projections.
type enclaveWorld struct {
	mu       sync.Mutex
	deploys  int
	phase    provider.Phase // what Watch reports
	statuses []enclaves.Status
	notes    []string
}

func (w *enclaveWorld) run(t *testing.T, during func(env *testsuite.TestWorkflowEnvironment)) EnclaveState {
	t.Helper()
	return w.runWith(t, EnclaveInput{ID: "enc_1", Account: "acct_1", Ref: "r/app:1", LogEvery: time.Second}, during)
}

func (w *enclaveWorld) runWith(t *testing.T, in EnclaveInput, during func(env *testsuite.TestWorkflowEnvironment)) EnclaveState {
	t.Helper()
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	e := &activities.Enclaves{}
	for name, fn := range map[string]any{ActEnclaveProject: e.Project, ActEnclavePrepare: e.Prepare, ActEnclaveDeploy: e.Deploy,
		ActEnclavePause: e.Pause, ActEnclaveResume: e.Resume, ActEnclaveTerminate: e.Terminate, ActEnclaveCopyLogs: e.CopyLogs, ActEnclaveWatch: e.Watch} {
		env.RegisterActivityWithOptions(fn, activity.RegisterOptions{Name: name})
	}
	env.RegisterActivityWithOptions((&activities.Tasks{}).SyncEnclave, activity.RegisterOptions{Name: ActEnclaveSyncTasks})
	env.RegisterActivityWithOptions(e.Open, activity.RegisterOptions{Name: ActEnclaveOpen})
	during(env) // first: its expectations win over the defaults below
	env.OnActivity(ActEnclaveProject, mock.Anything, mock.Anything).Return(func(_ context.Context, s activities.EnclaveStep) error {
		w.mu.Lock()
		defer w.mu.Unlock()
		if n := len(w.statuses); n == 0 || w.statuses[n-1] != s.Projection.Status {
			w.statuses = append(w.statuses, s.Projection.Status)
		}
		for _, l := range s.Logs {
			w.notes = append(w.notes, l.Message)
		}
		return nil
	})
	env.OnActivity(ActEnclavePrepare, mock.Anything, mock.Anything).Return(activities.Prepared{Image: provider.Image{Ref: "r/app:1", ManifestDigest: "sha256:ab"}}, nil)
	env.OnActivity(ActEnclaveDeploy, mock.Anything, mock.Anything).Return(func(_ context.Context, in activities.DeployInput) (provider.Instance, error) {
		w.mu.Lock()
		defer w.mu.Unlock()
		w.deploys++
		w.phase = provider.PhaseRunning
		return provider.Instance{ID: in.ID, Addr: "127.0.0.1:" + string(rune('0'+w.deploys)), EVMAddress: "0xabc"}, nil
	})
	env.OnActivity(ActEnclavePause, mock.Anything, mock.Anything).Return(nil)
	env.OnActivity(ActEnclaveTerminate, mock.Anything, mock.Anything).Return(nil)
	env.OnActivity(ActEnclaveCopyLogs, mock.Anything, mock.Anything).Return(0, nil)
	env.OnActivity(ActEnclaveSyncTasks, mock.Anything, mock.Anything).Return(0, nil)
	env.OnActivity(ActEnclaveWatch, mock.Anything, mock.Anything).Return(func(context.Context, string) (activities.Watched, error) {
		w.mu.Lock()
		defer w.mu.Unlock()
		st := provider.Status{Phase: w.phase}
		if w.phase == provider.PhaseExited {
			st.ExitCode, st.Detail = 2, "exit status 2"
		}
		return activities.Watched{Status: st}, nil
	})
	env.ExecuteWorkflow(Enclave, in)
	if !env.IsWorkflowCompleted() || env.GetWorkflowError() != nil {
		t.Fatalf("workflow: %v", env.GetWorkflowError())
	}
	var st EnclaveState
	q, err := env.QueryWorkflow(EnclaveQuery)
	if err == nil {
		err = q.Get(&st)
	}
	if err != nil {
		t.Fatalf("query: %v", err)
	}
	return st
}

func (w *enclaveWorld) set(p provider.Phase) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.phase = p
}

func terminateAt(env *testsuite.TestWorkflowEnvironment, d time.Duration, t *testing.T) {
	env.RegisterDelayedCallback(func() {
		env.UpdateWorkflow(EnclaveTerminate, "terminate", &testsuite.TestUpdateCallback{
			OnReject: func(err error) { t.Errorf("terminate rejected: %v", err) },
		})
	}, d)
}

// An instance lost with its worker process is started again: the enclave
// stays DEPLOYED, with the new endpoint, and says so in its log.
func TestEnclaveRestartsALostInstance(t *testing.T) {
	w := &enclaveWorld{}
	var mid EnclaveState
	st := w.run(t, func(env *testsuite.TestWorkflowEnvironment) {
		env.RegisterDelayedCallback(func() { w.set(provider.PhaseAbsent) }, 10*time.Second)
		env.RegisterDelayedCallback(func() {
			q, err := env.QueryWorkflow(EnclaveQuery)
			if err == nil {
				_ = q.Get(&mid)
			}
		}, 30*time.Second)
		terminateAt(env, 40*time.Second, t)
	})
	if w.deploys != 2 {
		t.Fatalf("%d deployments, want the first and one restart", w.deploys)
	}
	if mid.Status != enclaves.Deployed || mid.Endpoint != "127.0.0.1:2" {
		t.Fatalf("after the restart: %+v", mid)
	}
	want := []enclaves.Status{enclaves.PendingDeploy, enclaves.Deploying, enclaves.Deployed, enclaves.PendingDestroy, enclaves.Destroying, enclaves.Destroyed}
	if strings.Join(statusNames(w.statuses), ",") != strings.Join(statusNames(want), ",") {
		t.Fatalf("statuses %v, want %v", w.statuses, want)
	}
	if !strings.Contains(strings.Join(w.notes, "\n"), "starting it again") || st.Status != enclaves.Destroyed {
		t.Fatalf("notes %q, final %+v", w.notes, st)
	}
}

// A paused instance that was lost comes back paused.
func TestEnclaveRestartsALostPausedInstancePaused(t *testing.T) {
	w := &enclaveWorld{}
	paused := 0
	w.run(t, func(env *testsuite.TestWorkflowEnvironment) {
		env.OnActivity(ActEnclavePause, mock.Anything, mock.Anything).Return(func(context.Context, string) error {
			paused++
			w.set(provider.PhasePaused)
			return nil
		})
		env.RegisterDelayedCallback(func() {
			env.UpdateWorkflow(EnclavePause, "pause", &testsuite.TestUpdateCallback{OnReject: func(err error) { t.Errorf("pause: %v", err) }})
		}, 5*time.Second)
		env.RegisterDelayedCallback(func() { w.set(provider.PhaseAbsent) }, 10*time.Second)
		terminateAt(env, 40*time.Second, t)
	})
	if w.deploys != 2 || paused != 2 {
		t.Fatalf("deploys %d, pauses %d: want a restart paused again", w.deploys, paused)
	}
}

// An application that exits on its own fails the enclave with the reason;
// nothing is left running.
func TestEnclaveFailsWhenTheApplicationExits(t *testing.T) {
	w := &enclaveWorld{}
	st := w.run(t, func(env *testsuite.TestWorkflowEnvironment) {
		env.RegisterDelayedCallback(func() { w.set(provider.PhaseExited) }, 10*time.Second)
	})
	if st.Status != enclaves.Failed || !strings.Contains(st.ErrorMessage, "the application exited: exit status 2") || w.deploys != 1 {
		t.Fatalf("final %+v after %d deploys", st, w.deploys)
	}
}

func statusNames(s []enclaves.Status) []string {
	out := make([]string, len(s))
	for i, v := range s {
		out[i] = string(v)
	}
	return out
}
