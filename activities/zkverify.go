package activities

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"go.temporal.io/sdk/temporal"

	"conduit/internal/errs"
	"conduit/internal/groth16"
	"conduit/internal/quota"
	"conduit/internal/store"
	"conduit/internal/zkstatement"
	"conduit/internal/zkverify/registry"
	"conduit/internal/zkverify/relayer"
)

// ZKVerify runs a proof job's steps (workflows.ZKProofJob): its row, the
// local Groth16 verification, the record on the embedded chain, and the
// relayer for the proof types we cannot verify.
type ZKVerify struct {
	Store    *store.Store
	Registry *registry.Registry
	// Relayer is nil when proofs.relayer_url is not set.
	Relayer *relayer.Client
}

// Failure types of the job's steps.
const (
	// ErrZKQuota: the account holds its limit of open jobs; nothing was
	// written. Details: use and limit.
	ErrZKQuota = "ZKJobQuotaExceeded"
	// ErrZKAdmitTooLate: the job's first step ran after its submitter
	// stopped waiting; nothing was written.
	ErrZKAdmitTooLate = "ZKJobAdmitTooLate"
	// ErrZKInvalid: the proof does not verify (its message says why).
	ErrZKInvalid = "ZKProofInvalid"
	// ErrZKRelayer: the relayer refused the proof.
	ErrZKRelayer = "ZKRelayerRefused"
)

// ZKOpenJob is the job's first step's input.
type ZKOpenJob struct {
	JobID     string
	AccountID string
	ProofType string
	ChainID   *int64 `json:",omitempty"`
	VKHash    string
	AdmitBy   time.Time
	Limit     int64
}

// OpenZKJob writes the job's row (status Queued) within the account's
// bound of open jobs.
func (a *ZKVerify) OpenZKJob(ctx context.Context, in ZKOpenJob) error {
	if exists, err := a.Store.ZKJobExists(ctx, in.JobID); err != nil || exists {
		return err
	}
	if time.Now().After(in.AdmitBy) {
		return temporal.NewNonRetryableApplicationError("the job was admitted after its submitter stopped waiting; nothing was recorded", ErrZKAdmitTooLate, nil)
	}
	slot, err := a.Store.TakeSlot(ctx, in.AccountID, quota.ZKJobs, in.Limit)
	if e, ok := errs.As(err); ok && e.Code == quota.Code {
		return temporal.NewNonRetryableApplicationError(e.Msg, ErrZKQuota, nil, e.Extra["used"], e.Extra["limit"])
	}
	if err != nil {
		return err
	}
	return slot.OpenZKJob(ctx, store.NewZKJob{ID: in.JobID, AccountID: in.AccountID, ProofType: in.ProofType, ChainID: in.ChainID, VKHash: in.VKHash, Status: "Queued"})
}

// ZKVerifyInput is a Groth16 proof to verify against its key.
type ZKVerifyInput struct {
	VKHash        string
	VK            json.RawMessage
	Proof         json.RawMessage
	PublicSignals json.RawMessage
}

// ZKVerified is a verified proof's statement (zkstatement.Statement).
type ZKVerified struct {
	Statement string
}

// VerifyGroth16 verifies the proof with gnark-crypto; a proof that does
// not verify fails the step for good (ErrZKInvalid, the reason in its
// message and details).
func (a *ZKVerify) VerifyGroth16(_ context.Context, in ZKVerifyInput) (ZKVerified, error) {
	invalid := func(err error) (ZKVerified, error) {
		return ZKVerified{}, temporal.NewNonRetryableApplicationError(err.Error(), ErrZKInvalid, nil, string(groth16.ReasonOf(err)))
	}
	vk, err := groth16.ParseVerifyingKey(in.VK)
	if err != nil {
		return invalid(err)
	}
	proof, err := groth16.ParseProof(in.Proof)
	if err != nil {
		return invalid(err)
	}
	pub, err := groth16.ParsePublicSignals(in.PublicSignals)
	if err != nil {
		return invalid(err)
	}
	if err := groth16.Verify(vk, proof, pub); err != nil {
		return invalid(err)
	}
	hash, err := hexutil.Decode(in.VKHash)
	if err != nil || len(hash) != 32 {
		return ZKVerified{}, temporal.NewNonRetryableApplicationError("the job's vkHash is not 32 bytes of hex", ErrPermanent, nil)
	}
	st := zkstatement.Statement("groth16", zkstatement.Hash(hash), pub)
	return ZKVerified{Statement: hexutil.Encode(st[:])}, nil
}

// ZKRecord is a record to make on the embedded chain.
type ZKRecord struct {
	ID     string
	Digest string
	TxHash string `json:",omitempty"`
}

// ZKInclusion is where a record's transaction landed.
type ZKInclusion struct {
	TxHash      string
	BlockHash   string
	BlockNumber uint64
}

// SubmitRecord sends the record's transaction (registry.Record) and
// answers its hash.
func (a *ZKVerify) SubmitRecord(ctx context.Context, in ZKRecord) (string, error) {
	d, err := hexutil.Decode(in.Digest)
	if err != nil || len(d) != 32 {
		return "", temporal.NewNonRetryableApplicationError("the digest is not 32 bytes of hex", ErrPermanent, nil)
	}
	tx, err := a.Registry.Record(ctx, in.ID, common.BytesToHash(d))
	return tx.Hex(), err
}

// AwaitInclusion waits for the record's transaction's block.
func (a *ZKVerify) AwaitInclusion(ctx context.Context, in ZKRecord) (ZKInclusion, error) {
	rc, err := a.Registry.Inclusion(ctx, in.ID, common.HexToHash(in.TxHash))
	if err != nil {
		return ZKInclusion{}, err
	}
	return ZKInclusion{TxHash: rc.TxHash.Hex(), BlockHash: rc.BlockHash.Hex(), BlockNumber: rc.BlockNumber.Uint64()}, nil
}

// ConfirmFinal checks the block is the chain's at its number and the
// record reads back as made (the embedded chain has no forks: a canonical
// block is final).
func (a *ZKVerify) ConfirmFinal(ctx context.Context, in ZKRecord, at ZKInclusion) error {
	ok, err := a.Registry.Canonical(ctx, at.BlockNumber, common.HexToHash(at.BlockHash))
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("block %d is not %s on the chain", at.BlockNumber, at.BlockHash)
	}
	d, _ := hexutil.Decode(in.Digest)
	recorded, err := a.Registry.IsRecorded(ctx, in.ID, common.BytesToHash(d))
	if err != nil {
		return err
	}
	if !recorded {
		return temporal.NewNonRetryableApplicationError("the proof registry does not hold the record", ErrPermanent, nil)
	}
	return nil
}

// ZKMarkJob is a running job's state at a transition.
type ZKMarkJob struct {
	JobID  string
	Status string
	State  json.RawMessage
}

// MarkZKJob writes a running job's state into its row.
func (a *ZKVerify) MarkZKJob(ctx context.Context, in ZKMarkJob) error {
	return a.Store.MarkZKJob(ctx, in.JobID, in.Status, in.State)
}

// ZKCloseJob is a job's final state.
type ZKCloseJob struct {
	JobID  string
	Status string
	Reason string
	State  json.RawMessage
}

// CloseZKJob writes the job's final state into its row.
func (a *ZKVerify) CloseZKJob(ctx context.Context, in ZKCloseJob) error {
	return a.Store.CloseZKJob(ctx, in.JobID, in.Status, in.Reason, in.State)
}

// RelaySubmit submits a proof to the relayer.
func (a *ZKVerify) RelaySubmit(ctx context.Context, in relayer.SubmitProof) (relayer.Submitted, error) {
	if a.Relayer == nil {
		return relayer.Submitted{}, temporal.NewNonRetryableApplicationError("no relayer is configured (proofs.relayer_url)", ErrZKRelayer, nil)
	}
	out, err := a.Relayer.SubmitProof(ctx, in)
	var re *relayer.Error
	if errors.As(err, &re) && re.Permanent() {
		return out, temporal.NewNonRetryableApplicationError(re.Error(), ErrZKRelayer, nil)
	}
	if err == nil && out.OptimisticVerify != "success" {
		return out, temporal.NewNonRetryableApplicationError("the relayer's optimistic verification answered "+fmt.Sprintf("%q", out.OptimisticVerify), ErrZKRelayer, nil)
	}
	return out, err
}

// RelayStatus reads a relayed job's status.
func (a *ZKVerify) RelayStatus(ctx context.Context, relayerJobID string) (relayer.JobStatus, error) {
	if a.Relayer == nil {
		return relayer.JobStatus{}, temporal.NewNonRetryableApplicationError("no relayer is configured (proofs.relayer_url)", ErrZKRelayer, nil)
	}
	return a.Relayer.JobStatus(ctx, relayerJobID)
}
