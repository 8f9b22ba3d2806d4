package activities

import (
	"context"
	"crypto/x509"
	"fmt"
	"sync/atomic"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"conduit/internal/codec"
	"conduit/internal/enclave"
	"conduit/internal/enclaves"
	"conduit/internal/errs"
	"conduit/internal/signer"
	"conduit/internal/store"
)

// Enclaves are the side effects of the enclave lifecycle: the provider's
// work (prepare, deploy, pause, resume, terminate, logs) and the record's
// projection in PostgreSQL. Every one is idempotent: the provider's calls
// are keyed by the enclave id, the projection overwrites, log lines carry
// the provider's sequence numbers.
type Enclaves struct {
	Store    *store.Store
	Provider enclave.Provider
	// Secrets opens sealed registry credentials (nil: none are kept).
	Secrets *codec.Codec
	// Retention is how long log entries are kept (0: forever); CopyLogs
	// prunes older ones at most once an hour per worker process.
	Retention time.Duration
	// Root is the root the provider's attestation documents chain to
	// (the local authority's; nil: the AWS Nitro root).
	Root *x509.Certificate

	pruned atomic.Int64
}

// EnclaveStep is one projection write with the log entries that go with it.
type EnclaveStep struct {
	Projection store.EnclaveProjection
	Logs       []store.EnclaveLog
}

// Project writes the workflow's view of the enclave and its lifecycle log
// entries.
func (e *Enclaves) Project(ctx context.Context, s EnclaveStep) error {
	if err := e.Store.ProjectEnclave(ctx, s.Projection); err != nil {
		return err
	}
	return e.Store.AppendEnclaveLogs(ctx, s.Projection.ID, s.Logs)
}

// Prepared is a measured image and how the record says to run it.
type Prepared struct {
	Image  enclave.Image
	Config enclave.Config
}

// Prepare pulls and measures the image the record names now (a PATCH
// before deployment is honoured); registry credentials, when private, are
// opened from the record here: they never travel through workflow history.
func (e *Enclaves) Prepare(ctx context.Context, id string) (Prepared, error) {
	rec, err := e.Store.Enclave(ctx, id)
	if err != nil {
		return Prepared{}, err
	}
	src := enclave.Source{Ref: rec.ProviderConfig.DockerImage}
	cfg := enclave.Config{CPUCount: rec.ProviderConfig.CPUCount, MemoryMiB: rec.ProviderConfig.MemoryMiB}
	if rec.SourceType == enclaves.SourcePrivateRegistry {
		sealed, err := e.Store.EnclaveSecret(ctx, id)
		if err != nil {
			return Prepared{}, err
		}
		if e.Secrets == nil || len(sealed) == 0 {
			return Prepared{}, enclave.Errorf(enclave.Permanent, "prepare", id, "the registry credentials cannot be opened: no secret key is configured")
		}
		pw, err := e.Secrets.Open(sealed, enclaves.SecretPurpose(id))
		if err != nil {
			return Prepared{}, enclave.Wrap(enclave.Permanent, "prepare", id, err)
		}
		src.Username, src.Password = rec.RegistryUsername, string(pw)
	}
	stop := heartbeat(ctx)
	defer stop()
	img, err := e.Provider.Prepare(ctx, id, src)
	return Prepared{Image: img, Config: cfg}, interrupted(ctx, err)
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
	Image  enclave.Image
	Config enclave.Config
}

// Deploy starts the instance (or answers the running one).
func (e *Enclaves) Deploy(ctx context.Context, in DeployInput) (enclave.Instance, error) {
	stop := heartbeat(ctx)
	defer stop()
	inst, err := e.Provider.Deploy(ctx, in.ID, in.Image, in.Config)
	return inst, interrupted(ctx, err)
}

// Pause freezes the instance.
func (e *Enclaves) Pause(ctx context.Context, id string) error { return e.Provider.Pause(ctx, id) }

// Resume thaws the instance.
func (e *Enclaves) Resume(ctx context.Context, id string) error { return e.Provider.Resume(ctx, id) }

// Terminate stops the instance and removes its files.
func (e *Enclaves) Terminate(ctx context.Context, id string) error {
	stop := heartbeat(ctx)
	defer stop()
	return interrupted(ctx, e.Provider.Terminate(ctx, id))
}

// CopyLogs copies the application's new output lines into the enclave's
// log (type application; stderr lines also as errors) and answers how
// many were copied.
func (e *Enclaves) CopyLogs(ctx context.Context, id string) (int, error) {
	after, err := e.Store.LastAppSeq(ctx, id)
	if err != nil {
		return 0, err
	}
	lines, err := e.Provider.Logs(ctx, id, after, 1000)
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
