// Package signer signs with an enclave's keys and says whether it may: the signer states of spec
// §3.8 (Connected, Attestation verified, Attestation failed, Disconnected, Deprecated), the
// attestation that precedes every enclave signature, and the chain formats the signing routes
// accept (EVM EIP-1559 transactions, EIP-191 messages, EIP-712 typed data; Solana transactions and
// messages). docs/enclaves.md ("Signing") describes the design.
//
// Before the enclave signs, the signer asks it for a fresh attestation document whose nonce commits
// to the request (RequestNonce), and verifies it against the pinned root with the PCRs the
// deployment measured. Only a verified document lets the enclave sign, and the signature is then
// checked against the key the document binds, so an answer always recovers to the attested
// address. A raw key configured outside the enclave (RawKey) is the deprecated fallback: it signs,
// but every answer says so.
package signer

import (
	"crypto/rand"
	"crypto/sha256"
	"fmt"
	"sort"
	"strings"
	"time"

	"conduit/internal/attest"
	"conduit/internal/enclaves"
	"conduit/internal/enclaves/provider"
	"conduit/internal/errs"
)

// State is a signer's state (spec §3.8).
type State string

const (
	// Connected: the enclave runs and its agent answered with an attestation document; the
	// document has not been verified (yet).
	Connected State = "connected"
	// AttestationVerified: a fresh document verified (signature, chain to the pinned root, the
	// measured PCRs, the nonce, freshness): the enclave may sign.
	AttestationVerified State = "attestation_verified"
	// AttestationFailed: the enclave's document did not verify; it cannot sign.
	AttestationFailed State = "attestation_failed"
	// Disconnected: the enclave is not running (not DEPLOYED) or its agent cannot be reached; it
	// cannot sign.
	Disconnected State = "disconnected"
	// Deprecated: a raw key kept outside the enclave signs instead of the enclave, with a warning.
	Deprecated State = "deprecated"
)

// CanSign says whether a signer in state s signs.
func (s State) CanSign() bool { return s == AttestationVerified || s == Deprecated }

// Warning is the HTTP Warning header every answer of the deprecated raw-key signer carries
// (RFC 9111 §5.5, code 299: a persistent warning).
const Warning = `299 - "deprecated raw-key signer: the key is kept outside the enclave and nothing attests it"`

// Purpose says what a payload is, so the agent's side can check it before signing.
type Purpose string

const (
	// PurposeEVMHash: a 32-byte hash (an EIP-1559 signing hash, an EIP-191 or EIP-712 digest)
	// for the EVM key.
	PurposeEVMHash Purpose = "evm-hash"
	// PurposeSolanaTransaction: a serialized Solana transaction message, which must name the
	// enclave's key as a required signer.
	PurposeSolanaTransaction Purpose = "solana-transaction"
	// PurposeSolanaMessage: raw bytes for the Solana key (an off-chain message).
	PurposeSolanaMessage Purpose = "solana-message"
)

// Request is one thing to sign.
type Request struct {
	Purpose Purpose `json:"purpose"`
	Payload []byte  `json:"payload"`
}

// Key is the enclave key a purpose signs with.
func (r Request) Key() provider.KeyKind {
	if r.Purpose == PurposeEVMHash {
		return provider.KeyEVM
	}
	return provider.KeySolana
}

// SignRequest is the provider's request for r.
func (r Request) SignRequest() provider.SignRequest {
	return provider.SignRequest{Key: r.Key(), Payload: r.Payload}
}

// Validate checks a request before anything is asked of the enclave.
func (r Request) Validate() error {
	switch r.Purpose {
	case PurposeEVMHash:
		if len(r.Payload) != 32 {
			return errs.Invalidf("an EVM signature is over a 32-byte hash, got %d bytes", len(r.Payload))
		}
	case PurposeSolanaTransaction, PurposeSolanaMessage:
		if len(r.Payload) == 0 {
			return errs.Invalidf("nothing to sign")
		}
		if len(r.Payload) > MaxMessage {
			return errs.Invalidf("the message is %d bytes; at most %d are signed", len(r.Payload), MaxMessage)
		}
	default:
		return errs.Invalidf("unknown signing purpose %q", r.Purpose)
	}
	return nil
}

// MaxMessage bounds what is signed in one request (a Solana transaction is at most 1232 bytes; a
// message may be longer, but not unboundedly).
const MaxMessage = 64 << 10

// nonceDomain separates signing nonces from any other use of a document's nonce.
const nonceDomain = "conduit/enclave-sign/v1\x00"

// RequestNonce is the attestation nonce of a signing request: SHA-256 over the purpose and the
// payload, then 16 random bytes. The document that precedes a signature is thereby made for this
// request and no other, and never twice.
func RequestNonce(r Request) ([]byte, error) {
	h := sha256.New()
	h.Write([]byte(nonceDomain))
	h.Write([]byte(r.Purpose))
	h.Write([]byte{0})
	h.Write(r.Payload)
	out := h.Sum(nil)
	salt := make([]byte, 16)
	if _, err := rand.Read(salt); err != nil {
		return nil, err
	}
	return append(out, salt...), nil
}

// CommitsTo says whether nonce is a RequestNonce of r.
func CommitsTo(nonce []byte, r Request) bool {
	if len(nonce) != sha256.Size+16 {
		return false
	}
	h := sha256.New()
	h.Write([]byte(nonceDomain))
	h.Write([]byte(r.Purpose))
	h.Write([]byte{0})
	h.Write(r.Payload)
	return string(h.Sum(nil)) == string(nonce[:sha256.Size])
}

// Status is the signer's state with the reasons for it.
type Status struct {
	State State `json:"state"`
	// CanSign is State.CanSign().
	CanSign bool `json:"canSign"`
	// Reason says why, in a sentence, when the signer cannot sign or is deprecated.
	Reason string `json:"reason,omitempty"`
	// FailedChecks are the attestation checks that failed (AttestationFailed).
	FailedChecks []string `json:"failedChecks,omitempty"`
}

// NewStatus fills CanSign.
func NewStatus(s State, reason string) Status {
	return Status{State: s, CanSign: s.CanSign(), Reason: reason}
}

// FailedChecks names the checks of a report that failed, in report order.
func FailedChecks(r attest.Report) []string {
	var out []string
	for _, c := range r.Checks {
		if c.Failed() {
			out = append(out, c.Name)
		}
	}
	return out
}

// ErrTypeInvalid is the type of the application error that carries an Invalid signing request
// across Temporal (the worker refused it; nothing was signed).
const ErrTypeInvalid = "SignerInvalid"

// Signer error codes, beside the message on the wire.
const (
	CodeDisconnected      = "SIGNER_DISCONNECTED"
	CodeAttestationFailed = "ATTESTATION_FAILED"
)

// NotRunning is the Disconnected error of an enclave whose lifecycle state is not DEPLOYED: a 409
// naming the state.
func NotRunning(st enclaves.Status) error {
	e := errs.Conflictf("the enclave is %s; only a DEPLOYED enclave attests and signs", st)
	e.Code = CodeDisconnected
	e.Extra = map[string]any{"status": string(st), "signer": NewStatus(Disconnected, e.Msg)}
	return e
}

// Unreachable is the Disconnected error of a DEPLOYED enclave whose agent did not answer: a 503,
// since the same request may work once the enclave is back.
func Unreachable(detail string) error {
	e := &errs.Error{Kind: errs.Unavailable, Msg: "the enclave's agent cannot be reached: " + detail, Code: CodeDisconnected, RetryAfter: 5 * time.Second}
	e.Extra = map[string]any{"signer": NewStatus(Disconnected, e.Msg)}
	return e
}

// Failed is the AttestationFailed error: a 409 that names every failed check; the enclave did not
// sign.
func Failed(r attest.Report) error {
	failed := FailedChecks(r)
	e := errs.Conflictf("the enclave's attestation did not verify (%s); it did not sign", strings.Join(failed, ", "))
	e.Code = CodeAttestationFailed
	st := NewStatus(AttestationFailed, e.Msg)
	st.FailedChecks = failed
	e.Extra = map[string]any{"signer": st, "failedChecks": failed, "verification": r}
	return e
}

// PCRsOf turns a record's PCRs ({"0": hex, …}) into Verify's expectation. A malformed entry is an
// expectation no document meets (an empty value), so a damaged record fails verification rather
// than being ignored.
func PCRsOf(rec map[string]string) (map[int][]byte, error) {
	out := make(map[int][]byte, len(rec))
	keys := make([]string, 0, len(rec))
	for k := range rec {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		var i int
		if _, err := fmt.Sscanf(k, "%d", &i); err != nil || i < 0 || i > 31 || fmt.Sprint(i) != k {
			return nil, fmt.Errorf("the recorded PCR index %q is not 0–31", k)
		}
		b, err := decodeHex(rec[k])
		if err != nil {
			return nil, fmt.Errorf("the recorded PCR%d is not hex: %v", i, err)
		}
		out[i] = b
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("the deployment recorded no PCRs")
	}
	return out, nil
}
