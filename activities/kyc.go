package activities

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"math/big"
	"strings"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"go.temporal.io/sdk/temporal"

	"conduit/internal/errs"
	"conduit/internal/groth16"
	"conduit/internal/quota"
	"conduit/internal/store"
	"conduit/internal/zkverify/registry"
)

// KYC runs a KYC proof's steps (workflows.KYCProof): its verification and
// row, its record on the embedded chain, its confirmation and expiry.
type KYC struct {
	Store    *store.Store
	Registry *registry.Registry
}

// KYC proof statuses (spec §3.6).
const (
	KYCVerified = "verified"
	KYCPending  = "pending"
	KYCFailed   = "failed"
	KYCExpired  = "expired"
)

// Failure types of the proof's first step.
const (
	ErrKYCQuota        = "KYCProofQuotaExceeded"
	ErrKYCAdmitTooLate = "KYCProofAdmitTooLate"
)

// KYCOpen is the proof's first step's input: the row to write (its
// status decided by the step) and the account's bound.
type KYCOpen struct {
	Proof   store.KYCProof
	AdmitBy time.Time
	Limit   int64
}

// KYCOpened says what the first step decided.
type KYCOpened struct {
	Status         string
	CryptoVerified bool
	Note           string
}

// OpenKYCProof verifies the proof when its algorithm is one we verify
// (groth16, against the registered key its vkHash names) and writes its
// row: pending (awaiting the chain) when it verified or cannot be verified
// here, failed when it did not verify.
func (a *KYC) OpenKYCProof(ctx context.Context, in KYCOpen) (KYCOpened, error) {
	p := in.Proof
	if existing, err := a.Store.KYCProofByID(ctx, p.ID); err == nil {
		return KYCOpened{Status: existing.Status, CryptoVerified: existing.CryptoVerified, Note: existing.Note}, nil
	} else if !errors.Is(err, store.ErrNotFound) {
		return KYCOpened{}, err
	}
	if time.Now().After(in.AdmitBy) {
		return KYCOpened{}, temporal.NewNonRetryableApplicationError("the proof was admitted after its submitter stopped waiting; nothing was recorded", ErrKYCAdmitTooLate, nil)
	}
	out := KYCOpened{Status: KYCPending}
	if strings.EqualFold(p.Algorithm, "groth16") {
		if err := a.verifyGroth16(ctx, p); err != nil {
			out.Status, out.Note = KYCFailed, "groth16 verification failed: "+err.Error()
		} else {
			out.CryptoVerified, out.Note = true, "verified as a Groth16 (BN254) proof against the key "+p.VKHash
		}
	} else {
		out.Note = fmt.Sprintf("algorithm %q has no proof system this service verifies: the commitment and proof are recorded as submitted, never reported verified", p.Algorithm)
	}
	p.Status, p.CryptoVerified, p.Note = out.Status, out.CryptoVerified, out.Note
	slot, err := a.Store.TakeSlot(ctx, p.AccountID, quota.KYCProofs, in.Limit)
	if e, ok := errs.As(err); ok && e.Code == quota.Code {
		return out, temporal.NewNonRetryableApplicationError(e.Msg, ErrKYCQuota, nil, e.Extra["used"], e.Extra["limit"])
	}
	if err != nil {
		return out, err
	}
	return out, slot.CreateKYCProof(ctx, p)
}

// verifyGroth16 checks a KYC proof as Groth16: its proof is snarkjs's
// proof.json as a string, its publicInputs the public signals in hex.
func (a *KYC) verifyGroth16(ctx context.Context, p store.KYCProof) error {
	k, err := a.Store.ZKKey(ctx, p.VKHash)
	if errors.Is(err, store.ErrNotFound) || err == nil && k.ProofType != "groth16" {
		return fmt.Errorf("no groth16 key is registered under %s", p.VKHash)
	}
	if err != nil {
		return err
	}
	vk, err := groth16.ParseVerifyingKey(k.VK)
	if err != nil {
		return err
	}
	proof, err := groth16.ParseProof([]byte(p.Proof))
	if err != nil {
		return err
	}
	pub := make([]*big.Int, len(p.PublicInputs))
	for i, h := range p.PublicInputs {
		b, err := hex.DecodeString(strings.TrimPrefix(h, "0x"))
		if err != nil {
			return fmt.Errorf("publicInputs[%d] is not hex", i)
		}
		pub[i] = new(big.Int).SetBytes(b)
	}
	return groth16.Verify(vk, proof, pub)
}

// KYCChain is a proof's record on the embedded chain.
type KYCChain struct {
	ID       string
	Digest   string
	TxHash   string `json:",omitempty"`
	Verified bool   `json:",omitempty"`
}

// RecordKYCProof sends the proof's record and keeps its transaction hash.
func (a *KYC) RecordKYCProof(ctx context.Context, in KYCChain) (string, error) {
	tx, err := a.Registry.Record(ctx, "kyc/"+in.ID, common.HexToHash(in.Digest))
	if err != nil {
		return "", err
	}
	return tx.Hex(), a.Store.SetKYCChainTx(ctx, in.ID, tx.Hex())
}

// KYCConfirmed is where the record landed and the status it gave.
type KYCConfirmed struct {
	BlockHash string
	TxHash    string
	Status    string
}

// ConfirmKYCProof waits for the record's block and reads the record back
// from the contract; a verified proof becomes verified, one we cannot
// verify stays pending (it is never reported verified).
func (a *KYC) ConfirmKYCProof(ctx context.Context, in KYCChain) (KYCConfirmed, error) {
	rc, err := a.Registry.Inclusion(ctx, "kyc/"+in.ID, common.HexToHash(in.TxHash))
	if err != nil {
		return KYCConfirmed{}, err
	}
	ok, err := a.Registry.IsRecorded(ctx, "kyc/"+in.ID, common.HexToHash(in.Digest))
	if err != nil {
		return KYCConfirmed{}, err
	}
	if !ok {
		return KYCConfirmed{}, temporal.NewNonRetryableApplicationError("the proof registry does not hold the proof's record", ErrPermanent, nil)
	}
	out := KYCConfirmed{BlockHash: rc.BlockHash.Hex(), TxHash: rc.TxHash.Hex(), Status: KYCPending}
	var at *time.Time
	if in.Verified {
		now := time.Now().UTC()
		out.Status, at = KYCVerified, &now
	}
	return out, a.Store.ConfirmKYCProof(ctx, in.ID, out.TxHash, out.BlockHash, out.Status, at)
}

// ExpireKYCProof moves the proof to expired.
func (a *KYC) ExpireKYCProof(ctx context.Context, id string) error {
	return a.Store.ExpireKYCProof(ctx, id)
}
