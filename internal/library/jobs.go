package library

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strings"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"conduit/internal/errs"
	"conduit/internal/imagefetch"
	"conduit/internal/logging"
	"conduit/internal/media"
	"conduit/internal/money"
	"conduit/internal/store"
	"conduit/internal/temporalx"
	"conduit/workflows"
)

// AssembleMediaArgs are assemble_media's arguments (POST
// /api/media/assemble's body).
type AssembleMediaArgs struct {
	Operation string   `json:"operation" jsonschema:"how to combine the items: concat (one after another), crossfade (each fading into the next), music_under (the second item's sound looped and lowered under the first), narrate (the second item, a voice, over the first, whose own sound is lowered)"`
	Items     []string `json:"items" jsonschema:"library item ids in order: 2 to 20 for concat and crossfade (all videos or all audio), exactly 2 for music_under and narrate (a video or audio, then the audio to lay over it)"`
	Fade      *float64 `json:"fade,omitempty" jsonschema:"crossfade only: seconds each item overlaps the next, 0.1 to 10 and shorter than every item (default 1)"`
	// MusicVolume, BackgroundVolume and Delay tune music_under and narrate.
	MusicVolume      *float64 `json:"musicVolume,omitempty" jsonschema:"music_under only: the music's volume, 0 to 2 (default 0.3)"`
	BackgroundVolume *float64 `json:"backgroundVolume,omitempty" jsonschema:"narrate only: the first item's own sound under the voice, 0 to 2 (default 0.35)"`
	Delay            *float64 `json:"delay,omitempty" jsonschema:"narrate only: seconds before the voice starts, 0 to less than the first item's length (default 0)"`
	WaitSeconds      int      `json:"waitSeconds,omitempty" jsonschema:"wait up to this many seconds (0 to 300) for the job to finish before answering; 0 answers at once with the running job"`
}

// EditMediaArgs are edit_media's arguments (POST /api/media/edit's body).
type EditMediaArgs struct {
	Item      string   `json:"item" jsonschema:"the library item id to edit (med_…); it stays as it is, the edit is a new item"`
	Operation string   `json:"operation" jsonschema:"trim (keep start..end), volume (scale the sound by gain), transcode (another format), extract_audio (a video's sound track alone)"`
	Start     *float64 `json:"start,omitempty" jsonschema:"trim only: seconds to start at (default 0)"`
	End       *float64 `json:"end,omitempty" jsonschema:"trim only: seconds to end at, after start (default: the item's end)"`
	Gain      *float64 `json:"gain,omitempty" jsonschema:"volume only, required: 0 to 4 (1 keeps the level, 0.5 halves it, 0 mutes)"`
	Format    string   `json:"format,omitempty" jsonschema:"transcode (required) and extract_audio (default mp3): mp3, wav, m4a or ogg for audio; mp4 or webm for a video"`
	// WaitSeconds as for assemble_media.
	WaitSeconds int `json:"waitSeconds,omitempty" jsonschema:"wait up to this many seconds (0 to 300) for the job to finish before answering; 0 answers at once with the running job"`
}

// ImportMediaArgs are POST /api/media/import's body.
type ImportMediaArgs struct {
	URL         string `json:"url" jsonschema:"a public https URL of a video, audio file or image (judged by its content, not its name)"`
	WaitSeconds int    `json:"waitSeconds,omitempty" jsonschema:"wait up to this many seconds (0 to 300) for the import to finish"`
}

// JobRef names a job.
type JobRef struct {
	ID string `json:"id" jsonschema:"the job's id (job_…), as assemble_media, edit_media and import answer it"`
}

// Job is an import, assembly or edit: running, or finished with its item
// or its error.
type Job struct {
	ID        string   `json:"id" jsonschema:"the job's id (job_…)"`
	Kind      string   `json:"kind" jsonschema:"import, assemble or edit"`
	Operation string   `json:"operation"`
	Status    string   `json:"status" jsonschema:"running, success or error"`
	Items     []string `json:"items,omitempty" jsonschema:"the source items"`
	URL       string   `json:"url,omitempty" jsonschema:"the imported URL"`
	Params    Params   `json:"params"`
	// PriceUSD is what is held while the job runs (the price of the
	// longest output it may make) and, once it has finished, what it was
	// charged: the seconds of media it made, nothing for a failure, the
	// work done for a job that reached its timeout.
	PriceUSD money.Micros `json:"priceUsd" jsonschema:"while running, what is held in USD (the price of the longest output it may make); once finished, what was charged: its output's seconds at the per-second price (with a minimum), nothing when it failed"`
	// Item is the new library item (success).
	Item *Item `json:"item,omitempty" jsonschema:"the item the job made, once it succeeded"`
	// ItemDeleted says the item was made and deleted since.
	ItemDeleted bool   `json:"itemDeleted,omitempty"`
	Error       string `json:"error,omitempty" jsonschema:"why the job failed"`
	// Stage is where a running job is: opening, working, recording.
	Stage      string     `json:"stage,omitempty"`
	StatusURL  string     `json:"statusUrl"`
	CreatedAt  time.Time  `json:"createdAt"`
	FinishedAt *time.Time `json:"finishedAt,omitempty"`
}

// Limits of a job's request.
const (
	maxJoin     = 20
	maxWait     = 300
	maxDelay    = 3600.0
	maxFade     = 10.0
	minFade     = 0.1
	maxVolume   = 2.0
	maxGain     = 4.0
	maxKeyChars = 200
)

var assembleOps = []string{media.OpConcat, media.OpCrossfade, media.OpMusicUnder, media.OpNarrate}
var editOps = []string{media.OpTrim, media.OpVolume, media.OpTranscode, media.OpExtractAudio}

// jobRequest is a checked job, ready to start.
type jobRequest struct {
	kind    string
	op      string
	sources []string
	url     string
	spec    media.EditSpec
	params  Params
	wait    int
	// out is the output predicted from the inputs (caps, hold, quota).
	out output
}

// AssembleMedia combines library items into a new item as the durable
// workflow media-edit/<job id>. Bad input changes nothing and says which
// field; the job costs JobPrice, held now and charged only on success.
func (s *Service) AssembleMedia(ctx context.Context, account string, in AssembleMediaArgs) (Job, error) {
	return s.Assemble(ctx, account, in, "")
}

// Assemble is AssembleMedia with an Idempotency-Key: the same key with the
// same request answers the same job, with another request a 409.
func (s *Service) Assemble(ctx context.Context, account string, in AssembleMediaArgs, key string) (Job, error) {
	if err := s.ready(); err != nil {
		return Job{}, err
	}
	r, err := s.checkAssemble(ctx, account, in)
	if err != nil {
		return Job{}, err
	}
	return s.start(ctx, account, r, key)
}

func (s *Service) checkAssemble(ctx context.Context, account string, in AssembleMediaArgs) (jobRequest, error) {
	if !slices.Contains(assembleOps, in.Operation) {
		return jobRequest{}, invalid("operation", "operation must be %s, not %q", strings.Join(assembleOps, ", "), in.Operation)
	}
	if err := checkWait(in.WaitSeconds); err != nil {
		return jobRequest{}, err
	}
	pair := in.Operation == media.OpMusicUnder || in.Operation == media.OpNarrate
	switch {
	case pair && len(in.Items) != 2:
		return jobRequest{}, invalid("items", "%s takes exactly 2 items (the main one, then the one laid over it), not %d", in.Operation, len(in.Items))
	case !pair && (len(in.Items) < 2 || len(in.Items) > maxJoin):
		return jobRequest{}, invalid("items", "%s takes 2 to %d items, not %d", in.Operation, maxJoin, len(in.Items))
	}
	// Settings of other operations are refused, not ignored: a caller
	// who sends them expects them to do something.
	for _, f := range []struct {
		name, owner string
		set         bool
	}{
		{"fade", media.OpCrossfade, in.Fade != nil}, {"musicVolume", media.OpMusicUnder, in.MusicVolume != nil},
		{"backgroundVolume", media.OpNarrate, in.BackgroundVolume != nil}, {"delay", media.OpNarrate, in.Delay != nil},
	} {
		if f.set && f.owner != in.Operation {
			return jobRequest{}, invalid(f.name, "%s applies to %s only", f.name, f.owner)
		}
	}
	items, err := s.itemsOf(ctx, account, "items", in.Items)
	if err != nil {
		return jobRequest{}, err
	}
	for i, it := range items {
		if it.Kind == "image" {
			return jobRequest{}, invalid(fmt.Sprintf("items[%d]", i), "item %s is an image; assemble_media combines video and audio", it.ID)
		}
	}
	r := jobRequest{kind: "assemble", op: in.Operation, sources: in.Items, wait: in.WaitSeconds, spec: media.EditSpec{Op: in.Operation}}
	switch in.Operation {
	case media.OpConcat, media.OpCrossfade:
		for i, it := range items[1:] {
			if it.Kind != items[0].Kind {
				return jobRequest{}, invalid(fmt.Sprintf("items[%d]", i+1), "item %s is %s but items[0] is %s; %s joins items of one kind", it.ID, article(it.Kind), article(items[0].Kind), in.Operation)
			}
		}
		if in.Operation == media.OpCrossfade {
			fade, err := number("fade", in.Fade, 1, minFade, maxFade)
			if err != nil {
				return jobRequest{}, err
			}
			for i, it := range items {
				if secs := seconds(it); secs <= fade {
					return jobRequest{}, invalid("fade", "fade must be shorter than every item; items[%d] lasts %.2f s", i, secs)
				}
			}
			r.spec.Fade, r.params.Fade = fade, &fade
		}
	case media.OpMusicUnder, media.OpNarrate:
		over := items[1]
		if !over.HasAudio {
			return jobRequest{}, invalid("items[1]", "item %s has no sound to lay over items[0]", over.ID)
		}
		if in.Operation == media.OpNarrate && over.Kind != "audio" {
			return jobRequest{}, invalid("items[1]", "narrate lays a voice (an audio item) over items[0]; item %s is a video (extract its audio with edit_media first)", over.ID)
		}
		if in.Operation == media.OpMusicUnder {
			v, err := number("musicVolume", in.MusicVolume, 0.3, 0, maxVolume)
			if err != nil {
				return jobRequest{}, err
			}
			r.spec.MusicVolume, r.params.MusicVolume = v, &v
			break
		}
		bg, err := number("backgroundVolume", in.BackgroundVolume, 0.35, 0, maxVolume)
		if err != nil {
			return jobRequest{}, err
		}
		delay, err := number("delay", in.Delay, 0, 0, maxDelay)
		if err != nil {
			return jobRequest{}, err
		}
		if main := seconds(items[0]); delay >= main {
			return jobRequest{}, invalid("delay", "delay must be less than items[0]'s length (%.2f s)", main)
		}
		r.spec.BackgroundVolume, r.spec.Delay, r.params.BackgroundVolume, r.params.Delay = bg, delay, &bg, &delay
	}
	r.out = outputOf(r.spec, items)
	if err := s.checkOutput("items", r.out); err != nil {
		return jobRequest{}, err
	}
	return r, nil
}

// EditMedia makes an edited copy of a library item as the durable
// workflow media-edit/<job id>, priced and checked like AssembleMedia.
func (s *Service) EditMedia(ctx context.Context, account string, in EditMediaArgs) (Job, error) {
	return s.Edit(ctx, account, in, "")
}

// Edit is EditMedia with an Idempotency-Key.
func (s *Service) Edit(ctx context.Context, account string, in EditMediaArgs, key string) (Job, error) {
	if err := s.ready(); err != nil {
		return Job{}, err
	}
	r, err := s.checkEdit(ctx, account, in)
	if err != nil {
		return Job{}, err
	}
	return s.start(ctx, account, r, key)
}

func (s *Service) checkEdit(ctx context.Context, account string, in EditMediaArgs) (jobRequest, error) {
	if !slices.Contains(editOps, in.Operation) {
		return jobRequest{}, invalid("operation", "operation must be %s, not %q", strings.Join(editOps, ", "), in.Operation)
	}
	if err := checkWait(in.WaitSeconds); err != nil {
		return jobRequest{}, err
	}
	for _, f := range []struct {
		name   string
		owners []string
		set    bool
	}{
		{"start", []string{media.OpTrim}, in.Start != nil}, {"end", []string{media.OpTrim}, in.End != nil},
		{"gain", []string{media.OpVolume}, in.Gain != nil}, {"format", []string{media.OpTranscode, media.OpExtractAudio}, in.Format != ""},
	} {
		if f.set && !slices.Contains(f.owners, in.Operation) {
			return jobRequest{}, invalid(f.name, "%s applies to %s only", f.name, strings.Join(f.owners, " and "))
		}
	}
	if in.Item == "" {
		return jobRequest{}, invalid("item", "item is required: the id of the library item to edit")
	}
	items, err := s.itemsOf(ctx, account, "item", []string{in.Item})
	if err != nil {
		return jobRequest{}, err
	}
	it := items[0]
	if it.Kind == "image" {
		return jobRequest{}, invalid("item", "item %s is an image; edit_media edits video and audio", it.ID)
	}
	r := jobRequest{kind: "edit", op: in.Operation, sources: []string{in.Item}, wait: in.WaitSeconds, spec: media.EditSpec{Op: in.Operation}}
	length := seconds(it)
	switch in.Operation {
	case media.OpTrim:
		if in.Start == nil && in.End == nil {
			return jobRequest{}, invalid("start", "trim needs start, end or both (seconds)")
		}
		start, err := number("start", in.Start, 0, 0, length)
		if err != nil {
			return jobRequest{}, err
		}
		if start >= length {
			return jobRequest{}, invalid("start", "start must be before the item's end (%.2f s)", length)
		}
		end, err := number("end", in.End, length, 0, math.MaxFloat64)
		if err != nil {
			return jobRequest{}, err
		}
		if end <= start {
			return jobRequest{}, invalid("end", "end must be after start (%.2f s)", start)
		}
		end = min(end, length)
		r.spec.Start, r.spec.End, r.params.Start, r.params.End = start, end, &start, &end
	case media.OpVolume:
		if in.Gain == nil {
			return jobRequest{}, invalid("gain", "volume needs gain (0 to 4; 1 keeps the level)")
		}
		if !it.HasAudio {
			return jobRequest{}, invalid("item", "item %s has no sound to change", it.ID)
		}
		g, err := number("gain", in.Gain, 1, 0, maxGain)
		if err != nil {
			return jobRequest{}, err
		}
		r.spec.Gain, r.params.Gain = g, &g
	case media.OpTranscode:
		allowed := media.AudioFormats
		if it.Kind == "video" {
			allowed = media.VideoFormats
		}
		if in.Format == "" {
			return jobRequest{}, invalid("format", "transcode needs format (%s for this %s item)", strings.Join(allowed, ", "), it.Kind)
		}
		if !slices.Contains(allowed, in.Format) {
			extra := ""
			if it.Kind == "video" && slices.Contains(media.AudioFormats, in.Format) {
				extra = " (extract_audio takes a video's sound)"
			}
			return jobRequest{}, invalid("format", "a %s item transcodes to %s, not %q%s", it.Kind, strings.Join(allowed, ", "), in.Format, extra)
		}
		r.spec.Format, r.params.Format = in.Format, in.Format
	case media.OpExtractAudio:
		if it.Kind != "video" {
			return jobRequest{}, invalid("item", "item %s is audio already; extract_audio takes a video", it.ID)
		}
		if !it.HasAudio {
			return jobRequest{}, invalid("item", "video %s has no sound track to extract", it.ID)
		}
		f := in.Format
		if f == "" {
			f = "mp3"
		}
		if !slices.Contains(media.AudioFormats, f) {
			return jobRequest{}, invalid("format", "extract_audio writes %s, not %q", strings.Join(media.AudioFormats, ", "), f)
		}
		r.spec.Format, r.params.Format = f, f
	}
	r.out = outputOf(r.spec, items)
	field := "item"
	if in.Operation == media.OpTrim {
		field = "end"
	}
	if err := s.checkOutput(field, r.out); err != nil {
		return jobRequest{}, err
	}
	return r, nil
}

// ImportMedia brings a file from a public URL into the library as the
// durable workflow media-edit/<job id>: fetched under the SSRF rules
// (docs/security.md), judged by its bytes and ffprobe, within the size
// and time limits. A URL that is not plain https, or that names or
// resolves to an internal address, is refused at once.
func (s *Service) ImportMedia(ctx context.Context, account string, in ImportMediaArgs) (Job, error) {
	return s.Import(ctx, account, in, "")
}

// Import is ImportMedia with an Idempotency-Key.
func (s *Service) Import(ctx context.Context, account string, in ImportMediaArgs, key string) (Job, error) {
	if err := s.ready(); err != nil {
		return Job{}, err
	}
	if in.URL == "" {
		return Job{}, invalid("url", "url is required: a public https URL of a video, audio file or image")
	}
	if err := checkWait(in.WaitSeconds); err != nil {
		return Job{}, err
	}
	if err := s.Fetcher.CheckHost(ctx, in.URL, "url", 0); err != nil {
		var refused *imagefetch.Error
		if errors.As(err, &refused) {
			e := errs.Invalidf("%s", refused.Message)
			e.Code = strings.Replace(refused.Code, "IMAGE_", "MEDIA_", 1)
			e.Extra = map[string]any{"field": "url"}
			return Job{}, e
		}
		return Job{}, err
	}
	return s.start(ctx, account, jobRequest{kind: "import", op: "import", url: in.URL, wait: in.WaitSeconds, out: s.importOutput()}, key)
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

func checkWait(n int) error {
	if n < 0 || n > maxWait {
		return invalid("waitSeconds", "waitSeconds must be 0 to %d", maxWait)
	}
	return nil
}

// number reads an optional setting: def when absent, else within lo..hi.
func number(field string, v *float64, def, lo, hi float64) (float64, error) {
	if v == nil {
		return def, nil
	}
	if math.IsNaN(*v) || *v < lo || *v > hi {
		if hi == math.MaxFloat64 {
			return 0, invalid(field, "%s must be %g or more", field, lo)
		}
		return 0, invalid(field, "%s must be %g to %g", field, lo, hi)
	}
	return *v, nil
}

func seconds(it store.MediaItem) float64 {
	if it.Duration == nil {
		return 0
	}
	return it.Duration.Seconds()
}

func article(kind string) string {
	if kind == "audio" {
		return "audio"
	}
	return "a " + kind
}

// jobIDFor is the job an Idempotency-Key names: derived from the account
// and the key, so every retry reaches the same workflow.
func jobIDFor(account, key string) string {
	sum := sha256.Sum256([]byte(account + "\x00" + key))
	return "job_" + hex.EncodeToString(sum[:8])
}

// requestHash is what an Idempotency-Key is bound to.
func requestHash(r jobRequest) string {
	b, _ := json.Marshal(struct {
		Kind, Op, URL string
		Sources       []string
		Spec          media.EditSpec
	}{r.kind, r.op, r.url, r.sources, r.spec})
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// admitWait bounds how long a caller waits for its job's first step.
const admitWait = 30 * time.Second

// start starts the job's workflow and waits for its admission (the row
// and the hold, written by its first step): the job, a 402 when the
// balance cannot cover its price, a 404 for a source item deleted
// meanwhile, a 409 for a reused key.
func (s *Service) start(ctx context.Context, account string, r jobRequest, key string) (Job, error) {
	if len(key) > maxKeyChars {
		return Job{}, invalid("Idempotency-Key", "Idempotency-Key must be at most %d characters", maxKeyChars)
	}
	params, _ := json.Marshal(r.params)
	now := time.Now()
	// The hold is the price of the output the job may make; the charge,
	// that of what it made (the workflow computes it with the same rate).
	rate := s.rate()
	hold := rate.Charge(r.out.seconds)
	in := workflows.MediaJobInput{
		Job: workflows.MediaJob{ID: store.NewID("job"), AccountID: account, Kind: r.kind, Operation: r.op, SourceItems: r.sources, SourceURL: r.url,
			Params: params, Price: hold, IdempotencyKey: key, RequestHash: requestHash(r), CreatedAt: now.UTC(),
			ReserveBytes: r.out.bytes, QuotaBytes: s.Config.QuotaBytes, MaxRunning: s.Config.AccountJobs},
		ItemID: store.NewID("med"), URL: r.url, Spec: r.spec,
		Timeout: s.Config.JobTimeout, HeartbeatTimeout: s.HeartbeatTimeout,
		Rate: rate, MaxBytes: s.Config.MaxOutputBytes, MaxSeconds: float64(s.Config.MaxOutputSeconds),
	}
	if key != "" {
		in.Job.ID = jobIDFor(account, key)
	}
	log := logging.From(ctx).With("job_id", in.Job.ID, "operation", r.op)
	wctx, cancel := context.WithTimeout(ctx, admitWait)
	defer cancel()
	var adm workflows.JobAdmission
	var err error
	// A workflow closing just as a retry arrives refuses its update; the
	// next attempt starts a new execution, which finds the job.
	for attempt := 0; attempt < 3; attempt++ {
		op := s.Temporal.NewWithStartWorkflowOperation(client.StartWorkflowOptions{
			ID: workflows.MediaEditWorkflowID(in.Job.ID), TaskQueue: workflows.RenderQueue,
			WorkflowIDReusePolicy:    enumspb.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE,
			WorkflowIDConflictPolicy: enumspb.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING,
			TypedSearchAttributes: temporal.NewSearchAttributes(
				workflows.AttrKind.ValueSet(r.kind), workflows.AttrAccountID.ValueSet(account), workflows.AttrRunStatus.ValueSet(workflows.StatusRunning)),
		}, workflows.WfMediaEdit, in)
		adm, err = temporalx.Admit[workflows.JobAdmission](wctx, s.Temporal, op, client.UpdateWorkflowOptions{
			UpdateName: workflows.AdmissionUpdate, Args: []any{workflows.JobRequest{RequestHash: in.Job.RequestHash}}})
		if err == nil || wctx.Err() != nil {
			break
		}
	}
	switch {
	case err != nil:
		log.Error("a media job could not be admitted", "err", err)
		msg := "the job could not be started now; nothing was charged, try again"
		if key != "" {
			msg = "the job could not be admitted now; retry with the same Idempotency-Key: it is charged at most once"
		}
		return Job{}, &errs.Error{Kind: errs.Unavailable, Msg: msg, RetryAfter: time.Second}
	case adm.Busy:
		n := s.Config.AccountJobs
		return Job{}, &errs.Error{Kind: errs.TooManyRequests, Code: "MEDIA_JOBS_BUSY", RetryAfter: 5 * time.Second,
			Msg:   fmt.Sprintf("this account already has %d media job%s running (media.library.account_jobs); wait for %s to finish, then try again", n, plural(n), map[bool]string{true: "it", false: "one"}[n == 1]),
			Extra: map[string]any{"maxRunningJobs": n}}
	case adm.OverQuota != nil:
		return Job{}, s.overQuota(adm.OverQuota, r.out.bytes)
	case adm.Insufficient:
		return Job{}, &errs.Error{Kind: errs.PaymentRequired, Code: "INSUFFICIENT_CREDITS",
			Msg:   fmt.Sprintf("insufficient credits: this job holds %s USD (the price of the longest output it may make) and the balance is %s USD; top up to continue", adm.Price, adm.Balance),
			Extra: map[string]any{"balanceUsd": adm.Balance, "requiredUsd": adm.Price, "topUpUrl": s.TopUpURL}}
	case len(adm.Missing) > 0:
		e := errs.NotFoundf("item %s not found (deleted meanwhile?)", strings.Join(adm.Missing, ", "))
		e.Extra = map[string]any{"field": "items"}
		return Job{}, e
	case adm.Conflict:
		return Job{}, errs.Conflictf("Idempotency-Key %q was already used with a different request (job %s); send a new key for a new request", key, adm.Job.ID)
	case adm.Expired:
		return Job{}, &errs.Error{Kind: errs.Unavailable, Msg: "the job could not be admitted in time; nothing was charged, try again", RetryAfter: time.Second}
	}
	if !adm.Existing {
		log.Info("media job started", "kind", r.kind, "hold", hold, "output_seconds", r.out.seconds, "output_bytes", r.out.bytes)
	}
	return s.await(ctx, account, adm.Job.ID, r.wait)
}

// GetMediaJob answers one of the account's jobs: while it runs, where it
// is; once finished, its item or its error.
func (s *Service) GetMediaJob(ctx context.Context, account string, in JobRef) (Job, error) {
	if err := s.ready(); err != nil {
		return Job{}, err
	}
	if !jobIDRE.MatchString(in.ID) {
		return Job{}, notFound("job", fmt.Sprintf("%q", in.ID))
	}
	return s.job(ctx, account, in.ID)
}

var jobIDRE = regexp.MustCompile(`^job_[0-9a-f]{16}$`)

// await waits up to wait seconds for the job's workflow to end, then
// answers the job.
func (s *Service) await(ctx context.Context, account, id string, wait int) (Job, error) {
	if wait > 0 {
		wctx, cancel := context.WithTimeout(ctx, time.Duration(wait)*time.Second)
		_ = s.Temporal.GetWorkflow(wctx, workflows.MediaEditWorkflowID(id), "").Get(wctx, nil)
		cancel()
	}
	return s.job(ctx, account, id)
}

func (s *Service) job(ctx context.Context, account, id string) (Job, error) {
	j, err := s.Store.MediaJobOf(ctx, account, id)
	if isNotFound(err) {
		return Job{}, notFound("job", id)
	}
	if err != nil {
		return Job{}, err
	}
	out := Job{ID: j.ID, Kind: j.Kind, Operation: j.Operation, Status: j.Status, Items: j.SourceItems, URL: j.SourceURL, PriceUSD: j.Price,
		Error: j.Error, StatusURL: s.BaseURL + JobsPath + j.ID, CreatedAt: j.CreatedAt.UTC(), FinishedAt: j.FinishedAt}
	if len(out.Items) == 0 {
		out.Items = nil
	}
	_ = json.Unmarshal(j.Params, &out.Params)
	switch {
	case j.Status == "running":
		var stage string
		if s.askOpen(ctx, workflows.MediaEditWorkflowID(j.ID), workflows.StageQuery, &stage) {
			out.Stage = stage
		}
	case j.Status == "success" && j.ItemID == "":
		out.ItemDeleted = true
	case j.Status == "success":
		it, err := s.Store.MediaItem(ctx, account, j.ItemID)
		if err == nil {
			rec := s.record(it)
			out.Item = &rec
		} else if isNotFound(err) {
			out.ItemDeleted = true
		} else {
			return Job{}, err
		}
	}
	if out.FinishedAt != nil {
		t := out.FinishedAt.UTC()
		out.FinishedAt = &t
	}
	return out, nil
}
