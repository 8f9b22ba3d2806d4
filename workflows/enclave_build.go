package workflows

import (
	"fmt"

	"go.temporal.io/sdk/workflow"

	"conduit/activities"
	"conduit/internal/enclaves"
)

// builds says whether this enclave's image is built first: a github
// source, in a workflow that knows builds.
func (lc *lifecycle) builds(ctx workflow.Context) bool {
	if lc.in.Source != enclaves.SourceGitHub {
		return false
	}
	return workflow.GetVersion(ctx, ChangeGitHubBuild, workflow.DefaultVersion, 1) == 1
}

// build runs a github source's build: PENDING_BUILD → BUILDING →
// PENDING_DEPLOY with the pushed image, or BUILD_FAILED with the reason.
// It answers whether to deploy. The build is a provisioning step like the
// deployment's (lc.provision): transient failures (the git host or the
// registry down) are retried with backoff, the retry update runs it again
// now, and a terminate cancels it. A failed build waits here for its
// terminate, without timers.
func (lc *lifecycle) build(ctx workflow.Context) (deploy bool) {
	defer func() {
		if !deploy {
			lc.deploying = false // nothing will be deployed: terminate may go on
		}
	}()
	if err := lc.move(ctx, enclaves.PendingBuild, "stepfunctions", "build queued"); err != nil {
		lc.fail(ctx, "the enclave's record could not be written: "+err.Error())
		return false
	}
	if lc.terminating {
		return false
	}
	if err := lc.move(ctx, enclaves.Building, "build", "building the Go program of the repository's branch into an image"); err != nil {
		lc.fail(ctx, "the enclave's record could not be written: "+err.Error())
		return false
	}
	if lc.terminating {
		return false
	}
	var built activities.Built
	err := lc.provision(ctx, ActEnclaveBuild, lc.in.ID, &built)
	if lc.terminating {
		return false // the terminate cancelled the build; its handler destroys the enclave
	}
	if err != nil {
		lc.st.ErrorMessage = "the build failed: " + cause(err)
		if err := lc.move(ctx, enclaves.BuildFailed, "build", lc.st.ErrorMessage); err != nil {
			workflow.GetLogger(ctx).Error("recording the failed build failed", "err", err)
		}
		lc.deploying = false
		_ = workflow.Await(ctx, func() bool { return lc.terminating })
		return false
	}
	lc.in.Ref = built.Image
	if err := lc.move(ctx, enclaves.PendingDeploy, "build", fmt.Sprintf("built %s (%s) from commit %s", built.Image, built.Binary, built.Commit)); err != nil {
		lc.fail(ctx, "the enclave's record could not be written: "+err.Error())
		return false
	}
	return true
}
