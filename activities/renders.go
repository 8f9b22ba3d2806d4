package activities

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"conduit/internal/blob"
	"conduit/internal/media"
	"conduit/internal/store"
	"conduit/internal/telemetry"
)

// Failure types a render ends with (the run's reason).
const (
	ReasonPromptRefused = "prompt_refused"
	ReasonRenderFailed  = "render_failed"
)

// Renders records pay-per-call runs and renders their files.
type Renders struct {
	Store *store.Store
	Blob  blob.Store
	// Renderers by model id.
	Renderers map[string]media.Renderer
	// FileURL is a signed URL of a stored file (hosted providers download
	// the first frame from it).
	FileURL func(key string) string
	// HeartbeatEvery is how often a render reports it is alive.
	HeartbeatEvery time.Duration
}

// OpenPaid records a settled paid run with its payment and hold.
func (a *Renders) OpenPaid(ctx context.Context, n store.NewMediaRun) (store.MediaRun, error) {
	return a.Store.OpenPaidMediaRun(ctx, n)
}

// CreditPayment credits a settled payment whose run could not be opened to
// the paying wallet's account: the compensating step that keeps a payment
// from being lost. It shares OpenPaid's ledger key, so the payment is
// credited once whichever step did it.
func (a *Renders) CreditPayment(ctx context.Context, n store.NewMediaRun) error {
	return a.Store.CreditPayment(ctx, n)
}

// RetryInput is the retry of a failed run.
type RetryInput struct {
	OldRunID string
	Run      store.NewMediaRun
}

// OpenedRetry is an accepted retry or why it was refused (a refusal is an
// answer, not an error: retrying the activity cannot change it).
type OpenedRetry struct {
	Run     store.MediaRun
	Refusal *store.RetryRefusal
}

// OpenRetry records the retry of a failed run, paid from the balance.
func (a *Renders) OpenRetry(ctx context.Context, in RetryInput) (OpenedRetry, error) {
	run, err := a.Store.OpenRetryMediaRun(ctx, in.OldRunID, in.Run)
	var refusal *store.RetryRefusal
	if errors.As(err, &refusal) {
		return OpenedRetry{Refusal: refusal}, nil
	}
	return OpenedRetry{Run: run}, err
}

// MarkLate notes that a render outlasted its deadline and is still being
// collected.
func (a *Renders) MarkLate(ctx context.Context, runID, note string) error {
	return a.Store.SetMediaNote(ctx, runID, note)
}

// Finish records how the render ended, capturing or releasing its price.
func (a *Renders) Finish(ctx context.Context, res store.MediaResult) error {
	return a.Store.FinishMediaRun(ctx, res)
}

// RenderJob is what the render activity renders.
type RenderJob struct {
	RunID   string
	Kind    string
	Request store.MediaRequest
}

// renderBeat is a render's heartbeat: what it is doing and the provider
// state a retried attempt resumes from.
type renderBeat struct {
	Status string
	State  media.QueueState
}

// Rendered is the stored file.
type Rendered struct {
	FileKey string
}

// Render renders the job and stores the file. It heartbeats while it works
// (so a dead worker's render moves to another worker), hands a resumable
// provider its saved state (so a retried attempt does not order the clip
// twice), and ends refusals and permanent failures as non-retryable
// errors whose type is the run's reason.
func (a *Renders) Render(ctx context.Context, job RenderJob) (Rendered, error) {
	done := telemetry.RenderStarted(job.Kind)
	out, err := a.render(ctx, job)
	done(err)
	return out, err
}

func (a *Renders) render(ctx context.Context, job RenderJob) (Rendered, error) {
	r, ok := a.Renderers[job.Request.Model]
	if !ok {
		return Rendered{}, temporal.NewNonRetryableApplicationError("no renderer is configured for model "+job.Request.Model, ReasonRenderFailed, nil, "render")
	}
	workdir, err := os.MkdirTemp("", "render-")
	if err != nil {
		return Rendered{}, err
	}
	defer os.RemoveAll(workdir)

	mj := media.NewJob(job.RunID, job.Kind, job.Request)
	if key := job.Request.ImageKey; key != "" {
		if mj.ImagePath, err = a.fetchBlob(ctx, key, workdir); err != nil {
			return Rendered{}, err
		}
		if a.FileURL != nil {
			mj.ImageURL = a.FileURL(key)
		}
	}

	out, err := a.renderJob(ctx, r, mj, workdir)
	if err != nil {
		return Rendered{}, err
	}
	f, err := os.Open(out.Path)
	if err != nil {
		return Rendered{}, err
	}
	defer f.Close()
	key := job.Kind + "/" + FileStem(job.RunID) + "." + out.Ext
	if _, err := a.Blob.Put(ctx, key, out.ContentType, f); err != nil {
		return Rendered{}, fmt.Errorf("storing the file: %w", err)
	}
	return Rendered{FileKey: key}, nil
}

// renderJob renders mj into workdir with r, heartbeating while it works.
// Heartbeats carry a resumable provider's state, so a retried attempt
// picks up the job the last one submitted instead of ordering it again.
// Errors come typed for the workflow (renderError).
func (a *Renders) renderJob(ctx context.Context, r media.Renderer, mj media.Job, workdir string) (media.Output, error) {
	var beat renderBeat
	if activity.HasHeartbeatDetails(ctx) {
		_ = activity.GetHeartbeatDetails(ctx, &beat)
	}
	var mu sync.Mutex
	snapshot := func() renderBeat { mu.Lock(); defer mu.Unlock(); return beat }
	stop := a.heartbeat(ctx, func() any { return snapshot() })
	defer stop()
	progress := func(s string) { mu.Lock(); beat.Status = s; mu.Unlock() }
	state := beat.State

	var out media.Output
	var err error
	if rr, ok := r.(media.Resumable); ok {
		out, err = rr.RenderResume(ctx, mj, workdir, progress, &state, func(s media.QueueState) {
			mu.Lock()
			beat.State = s
			mu.Unlock()
			activity.RecordHeartbeat(ctx, snapshot())
		})
	} else {
		out, err = r.Render(ctx, mj, workdir, progress)
	}
	if err != nil {
		return media.Output{}, renderError(err)
	}
	return out, nil
}

// heartbeat records a heartbeat every HeartbeatEvery until stopped.
func (a *Renders) heartbeat(ctx context.Context, details func() any) func() {
	return heartbeatEvery(ctx, a.HeartbeatEvery, details)
}

func (a *Renders) fetchBlob(ctx context.Context, key, dir string) (string, error) {
	rc, _, err := a.Blob.Get(ctx, key)
	if err != nil {
		return "", fmt.Errorf("reading the first frame %s: %w", key, err)
	}
	defer rc.Close()
	path := filepath.Join(dir, "first-frame"+filepath.Ext(key))
	f, err := os.Create(path)
	if err != nil {
		return "", err
	}
	if _, err := io.Copy(f, rc); err != nil {
		f.Close()
		return "", err
	}
	return path, f.Close()
}

// renderError maps a renderer's error to the activity's: refusals and
// permanent failures are non-retryable, typed with the run's reason and
// carrying the failed step as details.
func renderError(err error) error {
	var refused *media.RefusedError
	var failed *media.FailedError
	switch {
	case errors.As(err, &refused):
		return temporal.NewNonRetryableApplicationError(refused.Message, ReasonPromptRefused, nil, "render")
	case errors.As(err, &failed) && !failed.Retryable:
		return temporal.NewNonRetryableApplicationError(failed.Message, ReasonRenderFailed, nil, failed.Step)
	case errors.As(err, &failed):
		return temporal.NewApplicationError(failed.Message, ReasonRenderFailed, failed.Step)
	}
	return err
}

// FileStem turns a run id into a file name: '#' and ':' are not welcome in
// keys and URLs.
func FileStem(runID string) string {
	return strings.NewReplacer("#", "-", ":", "-").Replace(runID)
}
