package activities

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"conduit/internal/blob"
	"conduit/internal/graph"
	"conduit/internal/imagefetch"
	"conduit/internal/media"
	"conduit/internal/money"
	"conduit/internal/pricing"
	"conduit/internal/store"
)

// Failure types of the library's activities.
const (
	// ErrTypeGeneration: a generation node's request the menus refuse or
	// its model declined; retrying cannot help.
	ErrTypeGeneration = "GenerationError"
	// ErrTypeMediaJob: an import, assembly or edit that cannot succeed
	// (a refused URL, a file that is not media, an impossible edit).
	ErrTypeMediaJob = "MediaJobError"
	// ErrTypeMediaTransient: a job's step failed in a way another attempt
	// may get through (an import's download got no answer or was cut
	// off; ffmpeg could not start).
	ErrTypeMediaTransient = "MediaJobTransient"
)

// Library renders generation nodes' files and runs the media library's
// jobs (imports, assemblies, edits); both put their file in the blob
// store and describe it as a library item, which the workflow records
// with the money it costs.
type Library struct {
	Store *store.Store
	Blob  blob.Store
	// Renders has the renderers by model and the render heartbeat.
	Renders    *Renders
	Generation pricing.Generation
	Editor     *media.Editor
	FFprobe    string
	Fetcher    *imagefetch.Fetcher
	// ImportMaxBytes and ImportTimeout bound an import's download.
	ImportMaxBytes int64
	ImportTimeout  time.Duration
	// FileURL is a fresh signed, expiring URL of a library file.
	FileURL func(key string) string
}

// GenerateMediaInput is one generation node's render.
type GenerateMediaInput struct {
	RunID   string
	NodeID  string
	ItemID  string
	Request graph.GenerationRequest
}

// GeneratedMedia is the rendered file as a library item (recorded when
// the run finishes, with its price), its URL (the node's value) and
// what it costs.
type GeneratedMedia struct {
	URL  string
	Cost money.Micros
	Item store.MediaItem
}

// GenerateMedia prices the node's request from the menus, renders it with
// the model's renderer (heartbeating, resuming a hosted provider's job
// across attempts), stores the file under the item's key and probes it.
// A request the menus refuse or the model declines is a non-retryable
// failure whose message says why; nothing is stored then.
func (a *Library) GenerateMedia(ctx context.Context, in GenerateMediaInput) (GeneratedMedia, error) {
	req := in.Request
	sale, err := a.Generation.Resolve(pricing.GenRequest{Kind: req.Kind, Model: req.Model, Voice: req.Voice, Seconds: req.Seconds,
		AspectRatio: req.AspectRatio, Text: req.Text}, true)
	if err != nil {
		return GeneratedMedia{}, temporal.NewNonRetryableApplicationError(err.Error(), ErrTypeGeneration, nil)
	}
	r, ok := a.Renders.Renderers[sale.Model]
	if !ok {
		return GeneratedMedia{}, temporal.NewNonRetryableApplicationError("no renderer is configured for model "+sale.Model, ErrTypeGeneration, nil)
	}
	workdir, err := os.MkdirTemp("", "generate-")
	if err != nil {
		return GeneratedMedia{}, err
	}
	defer os.RemoveAll(workdir)
	mj := media.NewJob(in.ItemID, sale.Kind, sale.Request(req.Text))
	out, err := a.Renders.renderJob(ctx, r, mj, workdir)
	if err != nil {
		var app *temporal.ApplicationError
		if errors.As(err, &app) && app.NonRetryable() {
			return GeneratedMedia{}, temporal.NewNonRetryableApplicationError(app.Message(), ErrTypeGeneration, nil)
		}
		return GeneratedMedia{}, err
	}
	item, err := a.keep(ctx, in.ItemID, out.Path, media.Sniffed{ContentType: out.ContentType, Ext: out.Ext, Kind: kindOf(out.ContentType)})
	if err != nil {
		return GeneratedMedia{}, err
	}
	params, _ := json.Marshal(sale)
	item.NodeID, item.Operation, item.Params, item.Price = in.NodeID, req.Kind, params, sale.Price
	return GeneratedMedia{URL: a.FileURL(item.BlobKey), Cost: sale.Price, Item: item}, nil
}

func kindOf(contentType string) string {
	if len(contentType) >= 5 && contentType[:5] == "video" {
		return "video"
	}
	return "audio"
}

// keep probes a finished file and keeps it under the item's key. The key
// is the item's, so a retried attempt overwrites its own file and never
// leaves a second one.
func (a *Library) keep(ctx context.Context, itemID, path string, s media.Sniffed) (store.MediaItem, error) {
	info, err := media.Probe(ctx, a.FFprobe, path)
	if err != nil {
		return store.MediaItem{}, jobError(err)
	}
	if s, err = media.Classify(s, info); err != nil {
		return store.MediaItem{}, jobError(err)
	}
	f, err := os.Open(path)
	if err != nil {
		return store.MediaItem{}, err
	}
	defer f.Close()
	key := store.LibraryKey(itemID, s.Ext)
	obj, err := a.Blob.Put(ctx, key, s.ContentType, f)
	if err != nil {
		return store.MediaItem{}, fmt.Errorf("storing the file: %w", err)
	}
	it := store.MediaItem{ID: itemID, Kind: s.Kind, ContentType: s.ContentType, Size: obj.Size, BlobKey: key, HasAudio: info.HasAudio}
	if s.Kind != "image" {
		d := info.Duration
		it.Duration = &d
	}
	if info.HasVideo || s.Kind == "image" {
		w, h := info.Width, info.Height
		if w > 0 && h > 0 {
			it.Width, it.Height = &w, &h
		}
	}
	return it, nil
}

// jobError makes a media failure the activity's: failures another attempt
// cannot fix end the job (ErrTypeMediaJob, the message for the caller).
func jobError(err error) error {
	var failed *media.FailedError
	if errors.As(err, &failed) {
		if failed.Retryable {
			return temporal.NewApplicationError(failed.Message, ErrTypeMediaTransient)
		}
		return temporal.NewNonRetryableApplicationError(failed.Message, ErrTypeMediaJob, nil)
	}
	return err
}

// OpenedJob is a job's admission: recorded with its hold, or why not
// (refusals are answers, not errors, so they end the workflow at once).
type OpenedJob struct {
	Job store.MediaJob
	// Existing: the job was recorded before (a later execution of its
	// workflow, or an Idempotency-Key naming an earlier job).
	Existing bool
	// Conflict: the Idempotency-Key came first with another request.
	Conflict bool
	// Insufficient: the balance (Balance) cannot cover the price.
	Insufficient bool
	Balance      money.Micros
	// Missing are source items that are not (or no longer) the account's.
	Missing []string
	// Busy: the account has its share of jobs running already.
	Busy bool `json:",omitempty"`
	// OverQuota: the job could overrun the account's library quota.
	OverQuota *store.OverQuota `json:",omitempty"`
}

// OpenMediaJob records the job and holds its price (store.OpenMediaJob).
func (a *Library) OpenMediaJob(ctx context.Context, n store.NewMediaJob) (OpenedJob, error) {
	job, existing, err := a.Store.OpenMediaJob(ctx, n)
	var missing *store.MissingItems
	var over *store.OverQuota
	switch {
	case errors.Is(err, store.ErrJobsBusy):
		return OpenedJob{Busy: true}, nil
	case errors.As(err, &over):
		return OpenedJob{OverQuota: over}, nil
	case errors.Is(err, store.ErrInsufficientCredit):
		bal, berr := a.Store.Balance(ctx, n.AccountID)
		if berr != nil {
			return OpenedJob{}, berr
		}
		return OpenedJob{Insufficient: true, Balance: bal}, nil
	case errors.Is(err, store.ErrRequestMismatch):
		return OpenedJob{Job: job, Conflict: true}, nil
	case errors.As(err, &missing):
		return OpenedJob{Missing: missing.IDs}, nil
	case err != nil:
		return OpenedJob{}, err
	}
	return OpenedJob{Job: job, Existing: existing}, nil
}

// MediaJobWork is a job's work: the file to import, or the operation over
// the account's source items; ItemID names the item it makes.
type MediaJobWork struct {
	JobID     string
	AccountID string
	ItemID    string
	Kind      string // import, assemble, edit
	URL       string
	Sources   []string
	Spec      media.EditSpec
	// MaxBytes caps the file the job writes (ffmpeg stops there and the
	// job fails); MaxSeconds caps an import's length (an edit's length is
	// fixed by its spec). Zero: no cap (jobs admitted before the caps).
	MaxBytes   int64   `json:",omitempty"`
	MaxSeconds float64 `json:",omitempty"`
}

// JobProgress is what a job's heartbeat carries: its stage, and the
// seconds of media ffmpeg reported encoded (its -progress out_time) by
// this attempt and by the earlier ones together. When the job reaches its
// timeout, the workflow charges for Done() seconds as the last heartbeat
// had them (so at most one heartbeat interval of work goes uncounted).
type JobProgress struct {
	Stage   string  `json:"stage"`
	Encoded float64 `json:"encoded"`
	Earlier float64 `json:"earlier"`
}

// Done is the seconds of media encoded across the job's attempts.
func (p JobProgress) Done() float64 { return p.Encoded + p.Earlier }

// progress is a job attempt's JobProgress, written by its work and read by
// the heartbeat's goroutine.
type progress struct {
	mu sync.Mutex
	p  JobProgress
}

func (g *progress) stage(s string) {
	g.mu.Lock()
	g.p.Stage = s
	g.mu.Unlock()
}

func (g *progress) encoded(d time.Duration) {
	g.mu.Lock()
	g.p.Encoded = max(g.p.Encoded, d.Seconds())
	g.mu.Unlock()
}

func (g *progress) get() any {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.p
}

// RunMediaJob does a job's work and stores its file: it downloads an
// import (under the SSRF rules, the size and time limits) and judges it by
// its bytes and ffprobe, or runs the operation over the source items'
// files with ffmpeg. It heartbeats while it works. What cannot succeed
// (a refused URL, something that is not media, an impossible edit, a
// source item deleted meanwhile) ends non-retryable with a message for
// the caller; nothing is stored then.
func (a *Library) RunMediaJob(ctx context.Context, w MediaJobWork) (store.MediaItem, error) {
	workdir, err := os.MkdirTemp("", "media-job-")
	if err != nil {
		return store.MediaItem{}, err
	}
	defer os.RemoveAll(workdir)
	// The heartbeat says what the job is doing and how much media it
	// encoded, counting what earlier attempts encoded (their last
	// heartbeat), so a job that reaches its timeout pays for all of it.
	prog := &progress{p: JobProgress{Stage: "starting"}}
	var prev JobProgress
	if activity.HasHeartbeatDetails(ctx) && activity.GetHeartbeatDetails(ctx, &prev) == nil {
		prog.p.Earlier = prev.Done()
	}
	stop := heartbeatEvery(ctx, a.Renders.HeartbeatEvery, prog.get)
	defer stop()

	var path string
	var sniffed media.Sniffed
	if w.Kind == "import" {
		prog.stage("downloading")
		path, sniffed, err = a.download(ctx, w.URL, workdir)
	} else {
		prog.stage("editing")
		path, sniffed, err = a.edit(ctx, w, workdir, prog.encoded)
	}
	if err != nil {
		return store.MediaItem{}, err
	}
	if w.MaxBytes > 0 {
		// ffmpeg stops writing at the cap (-fs), leaving a file cut short.
		if st, err := os.Stat(path); err == nil && st.Size() >= w.MaxBytes {
			return store.MediaItem{}, temporal.NewNonRetryableApplicationError(
				fmt.Sprintf("the result reached the %d MB limit of a job's output (media.library.max_output_bytes)", w.MaxBytes>>20), ErrTypeMediaJob, nil)
		}
	}
	prog.stage("storing")
	// Provenance comes from the job's row when the item is recorded.
	it, err := a.keep(ctx, w.ItemID, path, sniffed)
	if err == nil && w.MaxSeconds > 0 && it.Duration != nil && it.Duration.Seconds() > w.MaxSeconds+1 {
		// Only an import's length is unknown before it runs; the file
		// stored under the item's key is removed, nobody will list it.
		_ = a.Blob.Delete(ctx, it.BlobKey)
		return store.MediaItem{}, temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("the file lasts %.0f s; a library file may last at most %.0f s (media.library.max_output_seconds)", it.Duration.Seconds(), w.MaxSeconds), ErrTypeMediaJob, nil)
	}
	return it, err
}

// download fetches an import into workdir and judges it by its first
// bytes.
func (a *Library) download(ctx context.Context, url, workdir string) (string, media.Sniffed, error) {
	path := filepath.Join(workdir, "import")
	f, err := os.Create(path)
	if err != nil {
		return "", media.Sniffed{}, err
	}
	_, _, err = a.Fetcher.Download(ctx, url, "url", f, a.ImportMaxBytes, a.ImportTimeout)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	var refused *imagefetch.Error
	if errors.As(err, &refused) {
		// A network failure may pass; a refused or oversized URL, or an
		// answer such as a 404, will not.
		if refused.Code == imagefetch.CodeFetchFailed && refused.Answered == 0 {
			return "", media.Sniffed{}, temporal.NewApplicationError(refused.Message, ErrTypeMediaTransient)
		}
		return "", media.Sniffed{}, temporal.NewNonRetryableApplicationError(refused.Message, ErrTypeMediaJob, nil)
	}
	if err != nil {
		return "", media.Sniffed{}, err
	}
	head := make([]byte, 64)
	f, err = os.Open(path)
	if err != nil {
		return "", media.Sniffed{}, err
	}
	n, _ := io.ReadFull(f, head)
	f.Close()
	s, ok := media.Sniff(head[:n])
	if !ok {
		return "", media.Sniffed{}, temporal.NewNonRetryableApplicationError(
			"the file at url is not a supported format (MP4, MOV, WebM, MP3, M4A, WAV, Ogg, FLAC, JPEG, PNG, WebP or GIF; judged by its content)", ErrTypeMediaJob, nil)
	}
	return path, s, nil
}

// edit fetches the source items' files and runs the operation over them,
// reporting the seconds ffmpeg encoded to encoded.
func (a *Library) edit(ctx context.Context, w MediaJobWork, workdir string, encoded func(time.Duration)) (string, media.Sniffed, error) {
	var sources []media.Source
	for i, id := range w.Sources {
		it, err := a.Store.MediaItem(ctx, w.AccountID, id)
		if errors.Is(err, store.ErrNotFound) {
			return "", media.Sniffed{}, temporal.NewNonRetryableApplicationError(fmt.Sprintf("item %s was deleted before the job could use it", id), ErrTypeMediaJob, nil)
		}
		if err != nil {
			return "", media.Sniffed{}, err
		}
		path := filepath.Join(workdir, fmt.Sprintf("source-%d%s", i, filepath.Ext(it.BlobKey)))
		if err := a.fetch(ctx, it.BlobKey, path); err != nil {
			return "", media.Sniffed{}, err
		}
		info, err := media.Probe(ctx, a.FFprobe, path)
		if err != nil {
			return "", media.Sniffed{}, jobError(err)
		}
		sources = append(sources, media.Source{Path: path, Info: info})
	}
	out, err := a.Editor.EditLimited(ctx, w.Spec, sources, workdir, media.Limits{MaxBytes: w.MaxBytes, Encoded: encoded})
	if err != nil {
		if ctx.Err() != nil {
			return "", media.Sniffed{}, ctx.Err()
		}
		return "", media.Sniffed{}, jobError(err)
	}
	return out.Path, media.Sniffed{ContentType: out.ContentType, Ext: out.Ext}, nil
}

func (a *Library) fetch(ctx context.Context, key, path string) error {
	rc, _, err := a.Blob.Get(ctx, key)
	if errors.Is(err, blob.ErrNotFound) {
		return temporal.NewNonRetryableApplicationError("a source item's file is missing from the store", ErrTypeMediaJob, nil)
	}
	if err != nil {
		return err
	}
	defer rc.Close()
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, rc); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// FinishJobInput is how a job ended; Discard names a stored file to
// remove first (the job's file when its success could not be recorded).
type FinishJobInput struct {
	Result  store.MediaJobResult
	Discard string
}

// FinishMediaJob records the outcome with its money: the item and the
// capture of the price, or the error and the release of the hold.
// Retrying it is harmless.
func (a *Library) FinishMediaJob(ctx context.Context, in FinishJobInput) error {
	if in.Discard != "" {
		if err := a.Blob.Delete(ctx, in.Discard); err != nil {
			return err
		}
	}
	return a.Store.FinishMediaJob(ctx, in.Result)
}
