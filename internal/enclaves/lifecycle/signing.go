package lifecycle

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"strings"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/mr-tron/base58"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/temporal"

	"conduit/internal/enclaves"
	"conduit/internal/errs"
	"conduit/internal/logging"
	"conduit/internal/signer"
	"conduit/internal/store"
	"conduit/workflows"
)

// Attestation and enclave-held signing (docs/enclaves.md, "Attestation
// routes" and "Signing"). The enclave's agent lives with the provider in
// the worker, so every document and signature is asked of the enclave's
// lifecycle as an update (attest, sign), which refuses unless the enclave
// is DEPLOYED; the worker verifies the document before the enclave signs.
// The deprecated raw-key signer needs no enclave and signs here; when one
// is configured it takes precedence over the enclave.

// agent asks e's lifecycle for update name with arg and decodes the answer
// into out. Errors are the signer's: not DEPLOYED is a Conflict naming the
// state, an agent that cannot be reached Unavailable, a request the signer
// refused Invalid, too many requests in flight TooManyRequests.
func (s *Service) agent(ctx context.Context, e enclaves.Enclave, name string, arg, out any) error {
	if e.Status != enclaves.Deployed {
		return signer.NotRunning(e.Status)
	}
	waitCtx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	err := ask(waitCtx, s.Temporal, e.ID, name, arg, out)
	var busy *serviceerror.ResourceExhausted
	var app *temporal.ApplicationError
	switch de, known := errs.As(err); {
	case err == nil:
		return nil
	case errors.As(err, &busy):
		// Temporal bounds the updates in flight per workflow.
		return &errs.Error{Kind: errs.TooManyRequests, Code: "SIGNER_BUSY", RetryAfter: time.Second,
			Msg: "the enclave is answering as many requests as it takes at once; try again in a moment"}
	case known && de.Kind == errs.Conflict:
		cur, _ := de.Extra["status"].(string)
		return signer.NotRunning(enclaves.Status(cur))
	case known:
		return err
	case errors.Is(err, ErrEnded):
		// The lifecycle ended between the read and the update.
		if e, err = s.Store.Enclave(ctx, e.ID); err != nil {
			return err
		}
		return signer.NotRunning(e.Status)
	default:
		logging.From(ctx).Warn("an enclave's agent did not answer", "enclave", e.ID, "update", name, "err", err)
		detail := "the enclave did not answer in time"
		if errors.As(err, &app) {
			detail = app.Message()
		}
		return signer.Unreachable(detail)
	}
}

// freshNonce is a random 32-byte nonce.
func freshNonce() []byte {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	return b
}

// Attestation is a fresh attestation of an enclave and whose nonce it
// carries ("platform" or "caller").
type Attestation struct {
	Evidence    signer.Evidence
	NonceSource string
}

// Attest fetches a fresh document from e and verifies it in full, with
// the caller's nonce (hex or base64) when one is given. A document that
// does not verify is an answer (verificationStatus failed), not an error.
func (s *Service) Attest(ctx context.Context, e enclaves.Enclave, nonce string, given bool) (Attestation, error) {
	a := Attestation{NonceSource: "platform"}
	n := freshNonce()
	if given {
		var err error
		if n, err = signer.ParseNonce(nonce); err != nil {
			return a, err
		}
		a.NonceSource = "caller"
	}
	return a, s.agent(ctx, e, workflows.EnclaveAttest, n, &a.Evidence)
}

// rawKey is the enclave's deprecated raw-key signer, when one is
// configured.
func (s *Service) rawKey(ctx context.Context, id string) (*signer.RawKey, error) {
	row, err := s.Store.EnclaveRawKey(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if s.Secrets == nil {
		return nil, errors.New("an enclave's raw key is kept but no key to open it is configured (enclaves.secret_keys)")
	}
	plain, err := s.Secrets.Open(row.Sealed, signer.RawKeyPurpose(id))
	if err != nil {
		return nil, err
	}
	k, err := signer.UnmarshalRawKey(plain)
	if err != nil {
		return nil, err
	}
	return &k, nil
}

// DeprecatedNote is what the raw-key signer's state says.
const DeprecatedNote = "a raw key configured outside the enclave signs instead of the enclave; nothing attests it"

// SignerView is the signer's state now, with what decided it.
type SignerView struct {
	// Raw is the raw-key signer when one is configured (the state is then
	// deprecated).
	Raw    *signer.RawKey
	Status any // signer.Status, or the disconnected status of a refusal
	// Evidence is the fresh attestation that decided (nil when it did not
	// come to one); Verified says it was verified (verify=true).
	Evidence *signer.Evidence
	Verified bool
}

// Signer answers the signer's state: deprecated when a raw key is
// configured; else a fresh attestation decides (attestation_verified or
// attestation_failed; connected when verify is false, which only asks
// the agent for a document); disconnected when the enclave is not
// DEPLOYED or its agent does not answer.
func (s *Service) Signer(ctx context.Context, e enclaves.Enclave, verify bool) (SignerView, error) {
	k, err := s.rawKey(ctx, e.ID)
	if err != nil {
		return SignerView{}, err
	}
	if k != nil {
		return SignerView{Raw: k, Status: signer.NewStatus(signer.Deprecated, DeprecatedNote)}, nil
	}
	var ev signer.Evidence
	err = s.agent(ctx, e, workflows.EnclaveAttest, freshNonce(), &ev)
	if de, ok := errs.As(err); ok && de.Code == signer.CodeDisconnected {
		return SignerView{Status: de.Extra["signer"]}, nil
	}
	if err != nil {
		return SignerView{}, err
	}
	var st signer.Status
	switch {
	case !verify:
		st = signer.NewStatus(signer.Connected, "the enclave's agent answered with an attestation document; it was not verified (verify=false)")
	case ev.State == signer.AttestationVerified:
		st = signer.NewStatus(signer.AttestationVerified, "")
	default:
		st = signer.NewStatus(signer.AttestationFailed, signer.Failed(ev.Report).Error())
		st.FailedChecks = signer.FailedChecks(ev.Report)
	}
	return SignerView{Status: st, Evidence: &ev, Verified: verify}, nil
}

// PutRawKey configures the deprecated raw-key signer: the keys are sealed
// at rest and never returned.
func (s *Service) PutRawKey(ctx context.Context, e enclaves.Enclave, in signer.RawKeyInput) (*signer.RawKey, error) {
	k, err := in.Parse()
	if err != nil {
		return nil, err
	}
	if s.Secrets == nil {
		return nil, errs.Invalidf("a raw key cannot be kept: no key to seal it is configured (enclaves.secret_keys)")
	}
	plain, err := k.Marshal()
	if err != nil {
		return nil, err
	}
	sealed, err := s.Secrets.Seal(plain, signer.RawKeyPurpose(e.ID))
	if err != nil {
		return nil, err
	}
	err = s.Store.SetEnclaveRawKey(ctx, e.ID, store.EnclaveRawKey{Sealed: sealed, EVMAddress: k.EVMAddress(), SolanaPublicKey: k.SolanaPublicKey()})
	return &k, err
}

// DeleteRawKey removes the raw-key signer: the enclave signs again.
func (s *Service) DeleteRawKey(ctx context.Context, e enclaves.Enclave) error {
	ok, err := s.Store.DeleteEnclaveRawKey(ctx, e.ID)
	if err == nil && !ok {
		err = errs.NotFoundf("enclave %q has no raw-key signer", e.ID)
	}
	return err
}

// Signature is what a signer produced for one request, with the fields
// of the answer that belong to its chain.
type Signature struct {
	Sig    []byte
	Signer string // the EVM address or Solana key that signed
	Index  int    // a Solana transaction's signer slot
	// Evidence is the attestation that preceded the signature (nil for
	// the raw-key signer, whose answers are deprecated).
	Evidence *signer.Evidence
	// Fields are the answer's chain fields (chain, signature, …).
	Fields map[string]any
}

// sign has the enclave's signer sign r: the raw-key signer when one is
// configured, else the enclave after a verified attestation bound to r.
func (s *Service) sign(ctx context.Context, e enclaves.Enclave, r signer.Request) (Signature, error) {
	if err := r.Validate(); err != nil {
		return Signature{}, err
	}
	k, err := s.rawKey(ctx, e.ID)
	if err != nil {
		return Signature{}, err
	}
	if k != nil {
		sig, who, idx, err := k.Sign(r)
		return Signature{Sig: sig, Signer: who, Index: idx}, err
	}
	var out signer.Signed
	if err := s.agent(ctx, e, workflows.EnclaveSign, r, &out); err != nil {
		return Signature{}, err
	}
	if out.Evidence.State != signer.AttestationVerified || len(out.Signature) == 0 {
		return Signature{}, signer.Failed(out.Evidence.Report)
	}
	if !signer.CommitsTo(out.Evidence.Nonce, r) {
		return Signature{}, errors.New("the attestation before signing is not bound to the request")
	}
	return Signature{Sig: out.Signature, Signer: out.Signer, Index: out.SignerIndex, Evidence: &out.Evidence}, nil
}

// TransactionRequest is POST /sign/transaction. unsignedTransaction is
// accepted for transaction (the name some SDKs send).
type TransactionRequest struct {
	Chain               string          `json:"chain"`
	Transaction         json.RawMessage `json:"transaction"`
	UnsignedTransaction json.RawMessage `json:"unsignedTransaction"`
}

func chainOf(s string) (string, error) {
	switch s {
	case "", "evm":
		return "evm", nil
	case "solana":
		return "solana", nil
	}
	return "", errs.Field("chain", "must be evm or solana")
}

// SignTransaction signs an unsigned EVM or Solana transaction. An EVM
// transaction naming its sender is checked against the signer's address
// before anything is signed, and the signed transaction must recover to
// the signer.
func (s *Service) SignTransaction(ctx context.Context, e enclaves.Enclave, req TransactionRequest) (Signature, error) {
	chain, err := chainOf(req.Chain)
	if err != nil {
		return Signature{}, err
	}
	raw := req.Transaction
	if len(raw) == 0 {
		raw = req.UnsignedTransaction
	} else if len(req.UnsignedTransaction) != 0 {
		return Signature{}, errs.Invalidf("transaction and unsignedTransaction name the same thing; send one")
	}
	if chain == "solana" {
		return s.signSolanaTransaction(ctx, e, raw)
	}
	tx, err := signer.ParseEVMTransaction(raw)
	if err != nil {
		return Signature{}, err
	}
	if want, ok := signer.ExpectedFrom(raw); ok {
		// The enclave's address, or the raw key's when that signer is
		// configured.
		k, err := s.rawKey(ctx, e.ID)
		if err != nil {
			return Signature{}, err
		}
		addr := e.WalletAddress
		if k != nil {
			addr = k.EVMAddress()
		}
		if !strings.EqualFold(addr, want.Hex()) {
			return Signature{}, errs.Invalidf("transaction.from: is %s, but this enclave signs as %s; nothing was signed", want.Hex(), addr)
		}
	}
	sg, err := s.sign(ctx, e, signer.Request{Purpose: signer.PurposeEVMHash, Payload: tx.Hash()})
	if err != nil {
		return sg, err
	}
	signed, hash, from, err := tx.WithSignature(sg.Sig)
	if err != nil {
		return sg, err
	}
	if from != common.HexToAddress(sg.Signer) {
		return sg, errors.New("the signed transaction does not recover to the signer")
	}
	sg.Fields = map[string]any{"chain": "evm", "signedTransaction": hexutil.Encode(signed),
		"transactionHash": hash.Hex(), "from": from.Hex(), "signature": hexutil.Encode(sg.Sig)}
	return sg, nil
}

func (s *Service) signSolanaTransaction(ctx context.Context, e enclaves.Enclave, raw json.RawMessage) (Signature, error) {
	var b64 string
	if err := json.Unmarshal(raw, &b64); err != nil || len(bytes.TrimSpace(raw)) == 0 {
		return Signature{}, errs.Invalidf("transaction: a Solana transaction is a base64 string")
	}
	tx, err := signer.ParseSolanaTransaction(b64)
	if err != nil {
		return Signature{}, err
	}
	msg, err := tx.Message()
	if err != nil {
		return Signature{}, errs.Invalidf("transaction: %v", err)
	}
	sg, err := s.sign(ctx, e, signer.Request{Purpose: signer.PurposeSolanaTransaction, Payload: msg})
	if err != nil {
		return sg, err
	}
	signed, err := tx.WithSignature(sg.Index, sg.Sig)
	if err != nil {
		return sg, err
	}
	sg.Fields = map[string]any{"chain": "solana", "signedTransaction": signed, "signature": base58.Encode(sg.Sig), "from": sg.Signer}
	return sg, nil
}

// MessageRequest is POST /sign/message.
type MessageRequest struct {
	Chain    string `json:"chain"`
	Message  string `json:"message"`
	Encoding string `json:"encoding"`
}

// SignMessage signs a message. EVM: EIP-191 personal_sign (v 27/28);
// Solana: ed25519 over the raw bytes.
func (s *Service) SignMessage(ctx context.Context, e enclaves.Enclave, req MessageRequest) (Signature, error) {
	chain, err := chainOf(req.Chain)
	if err != nil {
		return Signature{}, err
	}
	msg, err := signer.MessageBytes(req.Message, req.Encoding)
	if err != nil {
		return Signature{}, err
	}
	if chain == "solana" {
		sg, err := s.sign(ctx, e, signer.Request{Purpose: signer.PurposeSolanaMessage, Payload: msg})
		if err != nil {
			return sg, err
		}
		sg.Fields = map[string]any{"chain": "solana", "signature": base58.Encode(sg.Sig), "publicKey": sg.Signer}
		return sg, nil
	}
	hash := signer.PersonalHash(msg)
	sg, err := s.sign(ctx, e, signer.Request{Purpose: signer.PurposeEVMHash, Payload: hash})
	if err != nil {
		return sg, err
	}
	sg.Fields = map[string]any{"chain": "evm", "signature": hexutil.Encode(signer.WalletSignature(sg.Sig)),
		"address": sg.Signer, "messageHash": hexutil.Encode(hash)}
	return sg, nil
}

// SignTypedData signs EIP-712 typed data ({types, primaryType, domain,
// message} or the ethers form {domain, types, value}), v 27/28.
func (s *Service) SignTypedData(ctx context.Context, e enclaves.Enclave, body []byte) (Signature, error) {
	hash, _, err := signer.TypedDataHash(body)
	if err != nil {
		return Signature{}, err
	}
	sg, err := s.sign(ctx, e, signer.Request{Purpose: signer.PurposeEVMHash, Payload: hash})
	if err != nil {
		return sg, err
	}
	sg.Fields = map[string]any{"chain": "evm", "signature": hexutil.Encode(signer.WalletSignature(sg.Sig)),
		"address": sg.Signer, "digest": hexutil.Encode(hash)}
	return sg, nil
}
