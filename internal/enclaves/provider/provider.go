// Package provider defines what the enclave lifecycle needs from a provider: prepare a measured
// image, deploy it as an isolated instance, pause, resume and terminate it, read its logs, and have
// its agent attest and sign. Providers (local for the embedded sandbox, nitro for AWS Nitro Enclaves) implement
// Provider; the lifecycle workflow's activities call it.
//
// Every method is keyed by the enclave id and is idempotent, because Temporal retries activities:
// preparing twice yields the same image, deploying a running enclave returns the running instance,
// terminating a terminated enclave does nothing.
package provider

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Provider runs enclaves. Implementations are safe for concurrent use; calls for one id are
// serialised by the provider.
type Provider interface {
	// Prepare pulls the image named by src for enclave id, measures it and makes it ready to
	// deploy. Calling it again for the same id and an unchanged image is cheap and returns the same
	// Image.
	Prepare(ctx context.Context, id string, src Source) (Image, error)
	// Deploy starts the prepared image as the enclave's instance. When the instance already runs
	// (or is paused) with the same image, Deploy returns it unchanged: at most one instance per id.
	Deploy(ctx context.Context, id string, img Image, cfg Config) (Instance, error)
	// Pause freezes a running instance; pausing a paused instance does nothing.
	Pause(ctx context.Context, id string) error
	// Resume thaws a paused instance; resuming a running instance does nothing.
	Resume(ctx context.Context, id string) error
	// Terminate stops the instance and removes everything the provider keeps for id, keys
	// included. Terminating an unknown or terminated enclave does nothing.
	Terminate(ctx context.Context, id string) error
	// Status says what the provider knows of id. An unknown id is PhaseAbsent, not an error.
	Status(ctx context.Context, id string) (Status, error)
	// Logs returns the application's output lines with sequence numbers after `after` (0 for the
	// first), at most limit of them (limit ≤ 0: all that are kept).
	Logs(ctx context.Context, id string, after int64, limit int) ([]LogLine, error)
	// Attest returns an attestation document (AWS Nitro format, see internal/attest) from the
	// enclave's agent: its PCRs, the nonce, and its signing keys in user_data. The instance must be
	// running or paused.
	Attest(ctx context.Context, id string, nonce []byte) ([]byte, error)
	// Sign has the enclave's agent sign with a key that never leaves the enclave.
	Sign(ctx context.Context, id string, req SignRequest) ([]byte, error)
}

// Source names the image to run.
type Source struct {
	// Ref is an OCI image reference: "registry.example/app:1.2", "127.0.0.1:5000/app@sha256:…".
	Ref string
	// Username and Password authenticate to a private registry; empty means anonymous.
	Username string
	Password string `json:"-"`
	// Account owns the enclave: its images count against that account's quota of the
	// provider's disk (enclaves.limits.account_bytes).
	Account string
}

// Image is a prepared, measured image. It is a plain value so that it can travel through workflow
// history; the provider's files for it stay with the provider.
type Image struct {
	Ref            string   `json:"ref"`
	ManifestDigest string   `json:"manifestDigest"`
	ConfigDigest   string   `json:"configDigest"`
	LayerDigests   []string `json:"layerDigests"`
	// Argv, Env and WorkDir are the image's defaults (entrypoint then cmd).
	Argv    []string `json:"argv"`
	Env     []string `json:"env"`
	WorkDir string   `json:"workDir"`
	// PCRs are 0 (image), 1 (runtime) and 2 (application with the image's defaults), 48 bytes
	// each. Instance.PCRs are what an attestation of the running instance will show.
	PCRs map[int][]byte `json:"pcrs"`
	// DiskBytes is what the prepared image takes on the provider's disk, counted against the
	// account's quota (0 for a provider that keeps nothing on the worker).
	DiskBytes int64 `json:"diskBytes,omitempty"`
}

// Config is how an instance runs.
type Config struct {
	CPUCount  int `json:"cpuCount"`
	MemoryMiB int `json:"memoryMiB"`
	// Port is the port the application listens on inside the enclave; it is given to the
	// application as PORT. Zero means 8080. Instance.Addr is where it is reachable from outside.
	Port int `json:"port"`
	// Env is added after the image's environment; a later KEY wins.
	Env []string `json:"env"`
}

// Instance is a deployed enclave.
type Instance struct {
	ID string `json:"id"`
	// Addr is the loopback address (host:port) at which the application's port is reachable.
	Addr string `json:"addr"`
	// NetworkIsolated says whether the enclave has a network of its own, reachable only through
	// Addr; false means it shares the host's network (a provider's documented fallback).
	NetworkIsolated bool `json:"networkIsolated"`
	// PCRs are the measurements the instance's attestation documents carry: what a verifier
	// should expect.
	PCRs map[int][]byte `json:"pcrs"`
	// EVMAddress is the address of the enclave's EVM signing key (0x…, checksummed).
	EVMAddress string `json:"evmAddress"`
	// SolanaPublicKey is the enclave's Solana key, base58.
	SolanaPublicKey string    `json:"solanaPublicKey"`
	StartedAt       time.Time `json:"startedAt"`
}

// Phase is where an enclave is as far as its provider knows.
type Phase string

const (
	PhaseAbsent   Phase = "absent"   // nothing for this id (never prepared, or terminated)
	PhasePrepared Phase = "prepared" // image ready, no instance
	PhaseRunning  Phase = "running"
	PhasePaused   Phase = "paused"
	PhaseExited   Phase = "exited" // the application ended on its own; see ExitCode
)

// Status is a provider's view of one enclave.
type Status struct {
	Phase    Phase  `json:"phase"`
	Addr     string `json:"addr,omitempty"`
	ExitCode int    `json:"exitCode,omitempty"`
	// Detail says why, when the phase alone does not (e.g. how the application exited).
	Detail string `json:"detail,omitempty"`
}

// Stream says where a log line came from.
type Stream string

const (
	Stdout Stream = "stdout"
	Stderr Stream = "stderr"
)

// LogLine is one line of application output.
type LogLine struct {
	Seq    int64     `json:"seq"`
	Time   time.Time `json:"time"`
	Stream Stream    `json:"stream"`
	Text   string    `json:"text"`
}

// KeyKind picks the enclave key that signs.
type KeyKind string

const (
	// KeyEVM signs a 32-byte hash with the secp256k1 key; the signature is 65 bytes [R‖S‖V], V 0/1,
	// and recovers to Instance.EVMAddress.
	KeyEVM KeyKind = "evm"
	// KeySolana signs a message (a serialized Solana transaction message) with the ed25519 key.
	KeySolana KeyKind = "solana"
)

// SignRequest is what the agent is asked to sign.
type SignRequest struct {
	Key     KeyKind `json:"key"`
	Payload []byte  `json:"payload"`
}

// Kind sorts errors for the lifecycle's retry policy.
type Kind int

const (
	// Transient errors may go away on retry: a registry that is down, a timeout.
	Transient Kind = iota
	// Permanent errors will not: an image that does not exist, refused credentials, a bad
	// reference, a request the enclave's state does not allow.
	Permanent
)

// Error is a provider error with its kind. Activities hand it to Temporal as is; the activity
// error classifier recognises Permanent() and makes it non-retryable.
type Error struct {
	Kind Kind
	Op   string // "prepare", "deploy", …
	ID   string // the enclave
	Err  error
}

func (e *Error) Error() string {
	kind := "transient"
	if e.Kind == Permanent {
		kind = "permanent"
	}
	return fmt.Sprintf("enclave %s: %s (%s): %v", e.ID, e.Op, kind, e.Err)
}

func (e *Error) Unwrap() error { return e.Err }

// Permanent reports whether retrying cannot help. activities.Classify looks for this method.
func (e *Error) Permanent() bool { return e.Kind == Permanent }

// Errorf makes an Error.
func Errorf(kind Kind, op, id, format string, args ...any) error {
	return &Error{Kind: kind, Op: op, ID: id, Err: fmt.Errorf(format, args...)}
}

// Wrap makes err an Error of the given kind, unless it already is one.
func Wrap(kind Kind, op, id string, err error) error {
	if err == nil {
		return nil
	}
	var e *Error
	if errors.As(err, &e) {
		return err
	}
	return &Error{Kind: kind, Op: op, ID: id, Err: err}
}

// IsPermanent reports whether err is, or wraps, a permanent provider error.
func IsPermanent(err error) bool {
	var e *Error
	return errors.As(err, &e) && e.Kind == Permanent
}

// ErrNotRunning is wrapped (permanently) when an operation needs an instance and there is none.
var ErrNotRunning = errors.New("the enclave has no running instance")
