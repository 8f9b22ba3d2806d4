package workflows

import (
	"time"

	"go.temporal.io/sdk/workflow"

	"conduit/activities"
	"conduit/internal/store"
)

// A KYC proof's life (docs/proofs.md).
const (
	WfKYCProof = "KYCProof"
	// KYCSubmitUpdate admits the proof and answers its submitter.
	KYCSubmitUpdate = "submit"

	ActKYCOpen    = "KYCOpenProof"    // activities.KYC.OpenKYCProof
	ActKYCRecord  = "KYCRecordProof"  // activities.KYC.RecordKYCProof
	ActKYCConfirm = "KYCConfirmProof" // activities.KYC.ConfirmKYCProof
	ActKYCExpire  = "KYCExpireProof"  // activities.KYC.ExpireKYCProof
)

// KYCProofWorkflowID names a KYC proof's workflow.
func KYCProofWorkflowID(id string) string { return "kyc-proof/" + id }

// KYCProofInput is a KYC proof as submitted and checked (its digest and
// expiry fixed by the service).
type KYCProofInput struct {
	Proof   store.KYCProof
	AskedAt time.Time
	Limit   int64
}

// KYCSubmitted answers the submitter.
type KYCSubmitted struct {
	ProofID                   string    `json:"proofId"`
	Status                    string    `json:"status"`
	CryptographicallyVerified bool      `json:"cryptographicallyVerified"`
	VerificationNote          string    `json:"verificationNote"`
	ChainTxHash               string    `json:"chainTxHash,omitempty"`
	ExpiresAt                 time.Time `json:"expiresAt"`
}

// KYCProof is one KYC proof's life: its first step verifies it (groth16)
// and writes its row; a proof that did not verify ends there, failed.
// Otherwise its digest is recorded on the embedded chain (the submitter's
// answer carries that transaction's hash), the record's block is awaited
// and read back (verified, or pending for an algorithm we cannot verify),
// and at its expiry the proof becomes expired.
func KYCProof(ctx workflow.Context, in KYCProofInput) error {
	answer, err := answerUpdate[KYCSubmitted](ctx, KYCSubmitUpdate)
	if err != nil {
		return err
	}
	defer func() { _ = workflow.Await(ctx, func() bool { return workflow.AllHandlersFinished(ctx) }) }()

	lctx := workflow.WithLocalActivityOptions(ctx, workflow.LocalActivityOptions{
		StartToCloseTimeout: 10 * time.Second, ScheduleToCloseTimeout: ZKAdmitWithin, RetryPolicy: ShortRetry,
	})
	var opened activities.KYCOpened
	if err := workflow.ExecuteLocalActivity(lctx, ActKYCOpen, activities.KYCOpen{Proof: in.Proof, AdmitBy: in.AskedAt.Add(ZKAdmitWithin), Limit: in.Limit}).Get(ctx, &opened); err != nil {
		answer.refuse(err)
		return nil
	}
	sub := KYCSubmitted{ProofID: in.Proof.ID, Status: opened.Status, CryptographicallyVerified: opened.CryptoVerified,
		VerificationNote: opened.Note, ExpiresAt: in.Proof.ExpiresAt}
	if opened.Status == activities.KYCFailed {
		answer.give(sub)
		return nil
	}
	actx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: time.Minute, RetryPolicy: ShortRetry})
	rec := activities.KYCChain{ID: in.Proof.ID, Digest: in.Proof.Digest, Verified: opened.CryptoVerified}
	if err := workflow.ExecuteActivity(actx, ActKYCRecord, rec).Get(ctx, &rec.TxHash); err != nil {
		// The proof stays pending, unrecorded: its answer says so.
		sub.VerificationNote += "; it could not be recorded on the chain: " + message(err)
		answer.give(sub)
		return nil
	}
	sub.ChainTxHash = rec.TxHash
	answer.give(sub)
	var confirmed activities.KYCConfirmed
	if err := workflow.ExecuteActivity(actx, ActKYCConfirm, rec).Get(ctx, &confirmed); err != nil {
		return err
	}
	if wait := in.Proof.ExpiresAt.Sub(workflow.Now(ctx)); wait > 0 {
		if err := workflow.Sleep(ctx, wait); err != nil {
			return err
		}
	}
	return workflow.ExecuteLocalActivity(shortLocal(ctx), ActKYCExpire, in.Proof.ID).Get(ctx, nil)
}
