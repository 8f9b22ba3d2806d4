package signer

import (
	"context"
	"crypto/ed25519"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/ethereum/go-ethereum/crypto"
	"github.com/gagliardetto/solana-go"

	"conduit/internal/attest"
	"conduit/internal/enclaves/provider"
	"conduit/internal/errs"
)

// Agent is the enclave signer on the side of the provider (the worker): it asks the enclave's
// agent for a document, verifies it, and only then has the enclave sign.
type Agent struct {
	Provider provider.Provider
	// Root is the root the provider's documents chain to: the local authority's root for the local
	// provider; nil means the AWS Nitro root.
	Root *x509.Certificate
	// Now is the clock for freshness (nil: time.Now).
	Now func() time.Time
}

// Evidence is one fresh attestation document and its verification.
type Evidence struct {
	// Document is the COSE_Sign1 document as the enclave's agent returned it.
	Document []byte `json:"document"`
	// Nonce is the nonce the document was asked for.
	Nonce  []byte        `json:"nonce"`
	Report attest.Report `json:"report"`
	// Fields are the decoded payload (nil when it does not decode).
	Fields *Fields `json:"fields,omitempty"`
	// State is AttestationVerified or AttestationFailed.
	State State `json:"state"`
}

// Fields are a document's decoded payload, for display. The signing keys are given only when the
// document verified.
type Fields struct {
	ModuleID        string            `json:"moduleId"`
	Digest          string            `json:"digest"`
	Timestamp       time.Time         `json:"timestamp"`
	PCRs            map[string]string `json:"pcrs"`
	Certificate     []byte            `json:"certificate"`
	CABundle        [][]byte          `json:"cabundle"`
	PublicKey       []byte            `json:"publicKey,omitempty"`
	UserData        []byte            `json:"userData,omitempty"`
	Nonce           []byte            `json:"nonce,omitempty"`
	EVMAddress      string            `json:"evmAddress,omitempty"`
	SolanaPublicKey string            `json:"solanaPublicKey,omitempty"`
}

// Attest asks the enclave for a document bound to nonce and verifies it with the expected PCRs.
// An error means no document was obtained (the enclave is not running or cannot be reached); a
// document that does not verify is not an error but Evidence in state AttestationFailed.
func (a *Agent) Attest(ctx context.Context, id string, nonce []byte, pcrs map[int][]byte) (Evidence, error) {
	doc, err := a.Provider.Attest(ctx, id, nonce)
	if err != nil {
		return Evidence{}, err
	}
	return a.Check(doc, nonce, pcrs), nil
}

// Check verifies a document: the pinned root, the expected PCRs, the nonce and freshness. Nothing
// is optional: a missing expectation is a failed check, never a skipped one.
func (a *Agent) Check(doc, nonce []byte, pcrs map[int][]byte) Evidence {
	if nonce == nil {
		nonce = []byte{} // a nil nonce would skip the check; an empty one must match
	}
	none := len(pcrs) == 0
	if none {
		pcrs = map[int][]byte{0: nil} // no expectation is one no document meets
	}
	r := attest.Verify(doc, attest.VerifyOptions{Root: a.Root, PCRs: pcrs, Nonce: nonce, Now: a.Now})
	if none {
		for i := range r.Checks {
			if r.Checks[i].Name == attest.CheckPCRs && r.Checks[i].Failed() {
				r.Checks[i].Detail = "the deployment recorded no PCRs to compare with, so what runs is unverified"
			}
		}
	}
	ev := Evidence{Document: doc, Nonce: nonce, Report: r, State: AttestationFailed}
	if r.Verified() {
		ev.State = AttestationVerified
	}
	if d := r.Document; d != nil {
		f := &Fields{ModuleID: d.ModuleID, Digest: d.Digest, Timestamp: d.Timestamp.UTC(), PCRs: map[string]string{},
			Certificate: d.Certificate, CABundle: d.CABundle, PublicKey: d.PublicKey, UserData: d.UserData, Nonce: d.Nonce}
		for i, v := range d.PCRs {
			f.PCRs[strconv.Itoa(i)] = hex.EncodeToString(v)
		}
		if addr, err := r.EVMAddress(); err == nil {
			f.EVMAddress = addr.Hex()
		}
		if k, err := r.SolanaPublicKey(); err == nil {
			f.SolanaPublicKey = k.String()
		}
		ev.Fields = f
	}
	return ev
}

// Signed is the outcome of Sign: the attestation that preceded it and, when it verified, the
// enclave's signature.
type Signed struct {
	Evidence Evidence `json:"evidence"`
	// Signature is empty unless Evidence.State is AttestationVerified: EVM 65 bytes [R‖S‖V] with V
	// 0/1, Solana 64 bytes.
	Signature []byte `json:"signature,omitempty"`
	// Signer is the attested key that signed: the EVM address (0x…) or the Solana key (base58).
	Signer string `json:"signer,omitempty"`
	// SignerIndex is, for a Solana transaction, the index of the enclave's key among the
	// message's signers.
	SignerIndex int `json:"signerIndex,omitempty"`
}

// Sign verifies a fresh document whose nonce commits to r and, when it verifies, has the enclave
// sign r and checks the signature against the attested key. A document that does not verify is
// answered as Signed without a signature (state AttestationFailed); an error means the enclave
// could not be asked (its errors are the provider's) or the request is invalid (errs.Invalid).
func (a *Agent) Sign(ctx context.Context, id string, pcrs map[int][]byte, r Request) (Signed, error) {
	if err := r.Validate(); err != nil {
		return Signed{}, err
	}
	var msg *solana.Message
	if r.Purpose == PurposeSolanaTransaction {
		var err error
		if msg, err = ParseSolanaMessage(r.Payload); err != nil {
			return Signed{}, err
		}
	}
	nonce, err := RequestNonce(r)
	if err != nil {
		return Signed{}, err
	}
	ev, err := a.Attest(ctx, id, nonce, pcrs)
	if err != nil {
		return Signed{}, err
	}
	out := Signed{Evidence: ev}
	if ev.State != AttestationVerified {
		return out, nil
	}
	switch r.Key() {
	case provider.KeyEVM:
		addr, err := ev.Report.EVMAddress()
		if err != nil {
			return out, errs.Invalidf("the enclave cannot sign for the EVM: %v", err)
		}
		out.Signer = addr.Hex()
	case provider.KeySolana:
		key, err := ev.Report.SolanaPublicKey()
		if err != nil {
			return out, errs.Invalidf("the enclave cannot sign for Solana: %v", err)
		}
		out.Signer = key.String()
		if msg != nil {
			idx := signerIndex(msg, key)
			if idx < 0 {
				return out, errs.Invalidf("transaction: the enclave's key %s is not one of the transaction's required signers", key)
			}
			out.SignerIndex = idx
		}
	}
	sig, err := a.Provider.Sign(ctx, id, r.SignRequest())
	if err != nil {
		return out, err
	}
	if err := checkSignature(ev.Report, r, sig); err != nil {
		// The enclave signed with a key other than the one it attested: never hand that out.
		return out, fmt.Errorf("enclave %s: %w", id, err)
	}
	out.Signature = sig
	return out, nil
}

// checkSignature checks sig against the key the verified report binds.
func checkSignature(rep attest.Report, r Request, sig []byte) error {
	switch r.Key() {
	case provider.KeyEVM:
		want, err := rep.EVMAddress()
		if err != nil {
			return err
		}
		if len(sig) != 65 {
			return fmt.Errorf("the enclave's EVM signature is %d bytes, want 65", len(sig))
		}
		pub, err := crypto.SigToPub(r.Payload, sig)
		if err != nil {
			return fmt.Errorf("the enclave's EVM signature does not recover: %v", err)
		}
		if got := crypto.PubkeyToAddress(*pub); got != want {
			return fmt.Errorf("the enclave's EVM signature recovers to %s, not the attested %s", got.Hex(), want.Hex())
		}
	default:
		key, err := rep.SolanaPublicKey()
		if err != nil {
			return err
		}
		if !ed25519.Verify(ed25519.PublicKey(key[:]), r.Payload, sig) {
			return errors.New("the enclave's Solana signature does not verify under the attested key")
		}
	}
	return nil
}

// signerIndex is key's index among the message's required signers, or -1.
func signerIndex(m *solana.Message, key solana.PublicKey) int {
	n := int(m.Header.NumRequiredSignatures)
	for i := 0; i < n && i < len(m.AccountKeys); i++ {
		if m.AccountKeys[i].Equals(key) {
			return i
		}
	}
	return -1
}
