package activities

import (
	"context"
	"crypto/x509"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"conduit/internal/codec"
	"conduit/internal/enclaves"
	"conduit/internal/enclaves/build"
	"conduit/internal/enclaves/provider"
	"conduit/internal/errs"
	"conduit/internal/signer"
	"conduit/internal/store"
	"conduit/internal/telemetry"
)

// Enclaves are the side effects of the enclave lifecycle: the provider's
// work (prepare, deploy, pause, resume, terminate, logs) and the record's
// projection in PostgreSQL. Every one is idempotent: the provider's calls
// are keyed by the enclave id, the projection overwrites, log lines carry
// the provider's sequence numbers.
type Enclaves struct {
	Store *store.Store
	// Provider is the local provider; Providers every configured one by
	// providerId. Each call goes to the provider the enclave's record names
	// (Provider when Providers is nil).
	Provider  provider.Provider
	Providers provider.Providers
	// Secrets opens sealed registry credentials and github tokens (nil:
	// none are kept).
	Secrets *codec.Codec
	// Builder builds github sources (nil: they fail, permanently);
	// BuildAuth are the credentials that pull what it pushed (empty:
	// anonymous).
	Builder   *build.Builder
	BuildAuth struct{ Username, Password string }
	// Retention is how long log entries are kept (0: forever); CopyLogs
	// prunes older ones at most once an hour per worker process.
	Retention time.Duration
	// Root is the root the provider's attestation documents chain to
	// (the local authority's; nil: the AWS Nitro root).
	Root *x509.Certificate

	pruned atomic.Int64
	// providerIDs caches each enclave's providerId (it never changes).
	providerIDs sync.Map
}

// provider returns the provider the enclave's record names.
func (e *Enclaves) provider(ctx context.Context, id string) (provider.Provider, error) {
	if e.Providers == nil {
		return e.Provider, nil
	}
	pid, ok := e.providerIDs.Load(id)
	if !ok {
		rec, err := e.Store.Enclave(ctx, id)
		if err != nil {
			return nil, err
		}
		pid = rec.ProviderID
		if pid == "" {
			pid = enclaves.ProviderLocal
		}
		e.providerIDs.Store(id, pid)
	}
	return e.Providers.Get(pid.(string))
}

// EnclaveStep is one projection write with the log entries that go with it.
type EnclaveStep struct {
	Projection store.EnclaveProjection
	Logs       []store.EnclaveLog
}

// Project writes the workflow's view of the enclave and its lifecycle log
// entries.
// The entries go first: whoever sees the new status finds its log.
func (e *Enclaves) Project(ctx context.Context, s EnclaveStep) error {
	if err := e.Store.AppendEnclaveLogs(ctx, s.Projection.ID, s.Logs); err != nil {
		return err
	}
	if err := e.Store.ProjectEnclave(ctx, s.Projection); err != nil {
		return err
	}
	telemetry.EnclaveState(string(s.Projection.Status))
	return nil
}

// NewEnclave is the record an enclave's lifecycle writes as its first
// step (its admission). Secrets arrive sealed: the plain registry
// password and github token never enter workflow history.
type NewEnclave struct {
	ID      string
	Account string
	// Create is the validated request with its plain secrets cleared.
	Create         enclaves.Create
	RegistrySecret []byte
	GitHubToken    []byte
	Status         enclaves.Status
}

// Record is the store's form of n.
func (n NewEnclave) Record() store.NewEnclave {
	return store.NewEnclave{ID: n.ID, AccountID: n.Account, Create: n.Create,
		RegistrySecret: n.RegistrySecret, GitHubToken: n.GitHubToken, Status: n.Status}
}

// Open writes the enclave's record; run again (the step retried, a worker
// died after it, or the creator wrote it first) it keeps the record
// already written.
func (e *Enclaves) Open(ctx context.Context, n NewEnclave) error {
	_, err := e.Store.CreateEnclave(ctx, n.Record())
	return err
}

// Prepared is a measured image and how the record says to run it.
type Prepared struct {
	Image  provider.Image
	Config provider.Config
}

// Prepare pulls and measures the image the record names now (a PATCH
// before deployment is honoured); registry credentials, when private, are
// opened from the record here: they never travel through workflow history.
func (e *Enclaves) Prepare(ctx context.Context, id string) (Prepared, error) {
	rec, err := e.Store.Enclave(ctx, id)
	if err != nil {
		return Prepared{}, err
	}
	src := provider.Source{Ref: rec.ProviderConfig.DockerImage}
	if rec.SourceType == enclaves.SourceGitHub {
		// The image the build pushed (recorded by Build).
		if rec.BuiltImage == "" {
			return Prepared{}, provider.Errorf(provider.Permanent, "prepare", id, "no image has been built for this enclave")
		}
		src = provider.Source{Ref: rec.BuiltImage, Username: e.BuildAuth.Username, Password: e.BuildAuth.Password}
	}
	cfg := provider.Config{CPUCount: rec.ProviderConfig.CPUCount, MemoryMiB: rec.ProviderConfig.MemoryMiB}
	if rec.SourceType == enclaves.SourcePrivateRegistry {
		sealed, err := e.Store.EnclaveSecret(ctx, id)
		if err != nil {
			return Prepared{}, err
		}
		if e.Secrets == nil || len(sealed) == 0 {
			return Prepared{}, provider.Errorf(provider.Permanent, "prepare", id, "the registry credentials cannot be opened: no secret key is configured")
		}
		pw, err := e.Secrets.Open(sealed, enclaves.SecretPurpose(id))
		if err != nil {
			return Prepared{}, provider.Wrap(provider.Permanent, "prepare", id, err)
		}
		src.Username, src.Password = rec.RegistryUsername, string(pw)
	}
	p, err := e.provider(ctx, id)
	if err != nil {
		return Prepared{}, err
	}
	stop := heartbeat(ctx)
	defer stop()
	src.Account = rec.AccountID // its images count against its quota
	img, err := p.Prepare(ctx, id, src)
	if err == nil {
		// The account's usage, readable by the frontend (lifecycle.Service.Usage).
		err = e.Store.SetEnclaveDiskBytes(ctx, id, img.DiskBytes)
	}
	return Prepared{Image: img, Config: cfg}, e.noteFailure(ctx, id, interrupted(ctx, err))
}

// interrupted keeps a step the worker abandoned (stopped, timed out)
// retryable: the provider may have called the cut-short work permanent.
func interrupted(ctx context.Context, err error) error {
	if err != nil && ctx.Err() != nil {
		return fmt.Errorf("the step was interrupted (%v); it is retried: %s", ctx.Err(), err.Error())
	}
	return err
}

// DeployInput is a prepared image and how to run it.
type DeployInput struct {
	ID     string
	Image  provider.Image
	Config provider.Config
}

// Deploy starts the instance (or answers the running one).
func (e *Enclaves) Deploy(ctx context.Context, in DeployInput) (provider.Instance, error) {
	p, err := e.provider(ctx, in.ID)
	if err != nil {
		return provider.Instance{}, err
	}
	stop := heartbeat(ctx)
	defer stop()
	inst, err := p.Deploy(ctx, in.ID, in.Image, in.Config)
	return inst, e.noteFailure(ctx, in.ID, interrupted(ctx, err))
}

// noteFailure records a failed attempt that will be retried on the
// enclave's record, so the API shows why it is still deploying.
// A permanent failure is noted too: it stays on the record of the failed
// enclave, saying why (an image over a limit names the setting).
func (e *Enclaves) noteFailure(ctx context.Context, id string, err error) error {
	if err == nil {
		return err
	}
	attempt := int(activity.GetInfo(ctx).Attempt)
	if nerr := e.Store.NoteEnclaveFailure(context.WithoutCancel(ctx), id, attempt, err.Error()); nerr != nil {
		activity.GetLogger(ctx).Warn("noting an enclave's failed attempt failed", "err", nerr)
	}
	return err
}

// Pause freezes the instance.
func (e *Enclaves) Pause(ctx context.Context, id string) error {
	p, err := e.provider(ctx, id)
	if err != nil {
		return err
	}
	stop := heartbeat(ctx)
	defer stop()
	return interrupted(ctx, p.Pause(ctx, id))
}

// Resume thaws the instance. A provider may take minutes (AWS starts the
// parent instance), so Pause and Resume heartbeat like the other long steps.
func (e *Enclaves) Resume(ctx context.Context, id string) error {
	p, err := e.provider(ctx, id)
	if err != nil {
		return err
	}
	stop := heartbeat(ctx)
	defer stop()
	return interrupted(ctx, p.Resume(ctx, id))
}

// Terminate stops the instance and removes its files.
func (e *Enclaves) Terminate(ctx context.Context, id string) error {
	p, err := e.provider(ctx, id)
	if err != nil {
		return err
	}
	stop := heartbeat(ctx)
	defer stop()
	if err := p.Terminate(ctx, id); err != nil {
		return interrupted(ctx, err)
	}
	return e.Store.SetEnclaveDiskBytes(ctx, id, 0)
}

// CopyLogs copies the application's new output lines into the enclave's
// log (type application; stderr lines also as errors) and answers how
// many were copied.
func (e *Enclaves) CopyLogs(ctx context.Context, id string) (int, error) {
	after, err := e.Store.LastAppSeq(ctx, id)
	if err != nil {
		return 0, err
	}
	p, err := e.provider(ctx, id)
	if err != nil {
		return 0, err
	}
	lines, err := p.Logs(ctx, id, after, 1000)
	if err != nil {
		return 0, err
	}
	e.prune(ctx)
	out := make([]store.EnclaveLog, 0, len(lines))
	for _, l := range lines {
		seq := l.Seq
		out = append(out, store.EnclaveLog{Type: "application", Source: "enclave/" + id, Stream: string(l.Stream), Message: l.Text, At: l.Time, AppSeq: &seq})
	}
	return len(lines), e.Store.AppendEnclaveLogs(ctx, id, out)
}

// Watched is what EnclaveWatch saw: the lines copied and the instance's
// state at the provider.
type Watched struct {
	Copied int
	Status provider.Status
}

// Watch copies new application output and reports the instance's state.
func (e *Enclaves) Watch(ctx context.Context, id string) (Watched, error) {
	n, err := e.CopyLogs(ctx, id)
	if err != nil {
		return Watched{}, err
	}
	p, err := e.provider(ctx, id)
	if err != nil {
		return Watched{}, err
	}
	st, err := p.Status(ctx, id)
	return Watched{Copied: n, Status: st}, err
}

// prune drops log entries older than Retention, at most once an hour.
func (e *Enclaves) prune(ctx context.Context) {
	now := time.Now()
	last := e.pruned.Load()
	if e.Retention <= 0 || now.Unix()-last < 3600 || !e.pruned.CompareAndSwap(last, now.Unix()) {
		return
	}
	if n, err := e.Store.PruneEnclaveLogs(ctx, now.Add(-e.Retention)); err != nil {
		activity.GetLogger(ctx).Warn("pruning enclave logs failed", "err", err)
	} else if n > 0 {
		activity.GetLogger(ctx).Info("pruned enclave logs", "entries", n, "retention", e.Retention)
	}
}

// ErrSignerInvalid types a signing request the signer refused as
// malformed (HTTP 400); nothing was signed.
const ErrSignerInvalid = signer.ErrTypeInvalid

// AttestInput asks an enclave for a fresh document bound to Nonce.
type AttestInput struct {
	ID    string
	Nonce []byte
}

// agent is the enclave signer over the provider.
func (e *Enclaves) agent() *signer.Agent {
	return &signer.Agent{Provider: e.Provider, Root: e.Root}
}

// expectedPCRs are what the deployment measured, as the record keeps
// them; a record without usable PCRs yields none, which fails the check.
func (e *Enclaves) expectedPCRs(ctx context.Context, id string) (map[int][]byte, error) {
	rec, err := e.Store.Enclave(ctx, id)
	if err != nil {
		return nil, err
	}
	pcrs, err := signer.PCRsOf(rec.PCRs)
	if err != nil {
		activity.GetLogger(ctx).Warn("the enclave's recorded PCRs are unusable; its attestation cannot verify", "enclave", id, "err", err)
		return nil, nil
	}
	return pcrs, nil
}

// Attest fetches a fresh document from the enclave's agent and verifies
// it against the attestation root with the PCRs the deployment measured
// (read from the record now) and the nonce.
func (e *Enclaves) Attest(ctx context.Context, in AttestInput) (signer.Evidence, error) {
	pcrs, err := e.expectedPCRs(ctx, in.ID)
	if err != nil {
		return signer.Evidence{}, err
	}
	return e.agent().Attest(ctx, in.ID, in.Nonce, pcrs)
}

// SignInput is one signing request for an enclave.
type SignInput struct {
	ID      string
	Request signer.Request
}

// Sign verifies a fresh document bound to the request and, when it
// verifies, has the enclave sign (internal/signer.Agent.Sign).
func (e *Enclaves) Sign(ctx context.Context, in SignInput) (signer.Signed, error) {
	pcrs, err := e.expectedPCRs(ctx, in.ID)
	if err != nil {
		return signer.Signed{}, err
	}
	out, err := e.agent().Sign(ctx, in.ID, pcrs, in.Request)
	if de, ok := errs.As(err); ok && de.Kind == errs.Invalid {
		return out, temporal.NewNonRetryableApplicationError(de.Msg, ErrSignerInvalid, nil)
	}
	return out, err
}
