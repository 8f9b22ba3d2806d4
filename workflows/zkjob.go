package workflows

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"conduit/activities"
	"conduit/internal/zkverify/relayer"
)

// ZKQueue carries proof jobs and KYC proofs.
const ZKQueue = "proofs"

// The proof job's activities (activities.ZKVerify), by registered name.
const (
	ActZKOpenJob        = "ZKOpenJob"        // OpenZKJob
	ActZKVerifyGroth16  = "ZKVerifyGroth16"  // VerifyGroth16
	ActZKSubmitRecord   = "ZKSubmitRecord"   // SubmitRecord
	ActZKAwaitInclusion = "ZKAwaitInclusion" // AwaitInclusion
	ActZKConfirmFinal   = "ZKConfirmFinal"   // ConfirmFinal
	ActZKCloseJob       = "ZKCloseJob"       // CloseZKJob
	ActZKMarkJob        = "ZKMarkJob"        // MarkZKJob
	ActZKRelaySubmit    = "ZKRelaySubmit"    // RelaySubmit
	ActZKRelayStatus    = "ZKRelayStatus"    // RelayStatus
)

// ZKSubmitUpdate admits a job and answers its optimistic verification (the
// update its submitter starts it with); ZKStatusQuery answers its state.
const (
	ZKSubmitUpdate = "submit"
	ZKStatusQuery  = "status"
)

// ZKAdmitWithin is how late a job's row may still be written after its
// submitter asked (the submitter waits 30 s, then is told nothing was made).
const ZKAdmitWithin = 20 * time.Second

// Job statuses, in order (spec §3.7), and Failed.
const (
	ZKQueued             = "Queued"
	ZKValid              = "Valid"
	ZKSubmitted          = "Submitted"
	ZKIncludedInBlock    = "IncludedInBlock"
	ZKFinalized          = "Finalized"
	ZKAggregationPending = "AggregationPending"
	ZKFailed             = "Failed"
)

// ZKStatusIDs are the relayer's statusIds: 4, 5 and 6 are documented by
// Kurier, the others follow the order (docs/proofs.md); Failed is ours.
var ZKStatusIDs = map[string]int{
	ZKQueued: 0, ZKValid: 1, ZKSubmitted: 2, ZKIncludedInBlock: 3, ZKFinalized: 4,
	ZKAggregationPending: 5, ZKAggregated: 6, ZKAggregationPublished: 7, ZKFailed: 8,
}

// Who verified a job's proof.
const (
	VerifiedByConduit = "conduit"
	VerifiedByRelayer = "relayer"
)

// ZKJobInput is a proof job: everything it needs, fixed at submission.
type ZKJobInput struct {
	JobID     string
	AccountID string
	ProofType string
	// ChainID is the destination chain of the aggregation; nil is
	// verify-only (the job ends at Finalized).
	ChainID       *int64 `json:",omitempty"`
	DomainID      uint64
	VKHash        string
	VK            json.RawMessage `json:",omitempty"`
	Proof         json.RawMessage
	PublicSignals json.RawMessage `json:",omitempty"`
	ProofOptions  json.RawMessage `json:",omitempty"`
	// Relayed: the proof type is verified by the relayer, not here.
	Relayed bool `json:",omitempty"`
	AskedAt time.Time
	// Limit is the account's bound of open jobs (0: none).
	Limit int64
	// AggregationWait bounds the wait for the aggregation to publish (and
	// a relayed job's whole life); RelayerPoll paces a relayed job's reads.
	AggregationWait time.Duration
	RelayerPoll     time.Duration `json:",omitempty"`
}

// ZKTransition is one status change.
type ZKTransition struct {
	Status string    `json:"status"`
	At     time.Time `json:"at"`
}

// ZKAggregationDetails are the relayer's aggregationDetails.
type ZKAggregationDetails struct {
	Receipt          string   `json:"receipt,omitempty"`
	ReceiptBlockHash string   `json:"receiptBlockHash,omitempty"`
	Root             string   `json:"root"`
	Leaf             string   `json:"leaf"`
	LeafIndex        int      `json:"leafIndex"`
	NumberOfLeaves   int      `json:"numberOfLeaves"`
	MerkleProof      []string `json:"merkleProof"`
	DomainID         uint64   `json:"domainId"`
}

// ZKJobStatus is a job's state under the relayer's field names, plus
// ours: who verified it, the failure's reason and every transition.
type ZKJobStatus struct {
	JobID              string                `json:"jobId"`
	Status             string                `json:"status"`
	StatusID           int                   `json:"statusId"`
	ProofType          string                `json:"proofType"`
	ChainID            *int64                `json:"chainId"`
	CreatedAt          time.Time             `json:"createdAt"`
	UpdatedAt          time.Time             `json:"updatedAt"`
	TxHash             string                `json:"txHash,omitempty"`
	BlockHash          string                `json:"blockHash,omitempty"`
	AggregationID      *uint64               `json:"aggregationId,omitempty"`
	Statement          string                `json:"statement,omitempty"`
	AggregationDetails *ZKAggregationDetails `json:"aggregationDetails,omitempty"`
	VKHash             string                `json:"vkHash"`
	VerifiedBy         string                `json:"verifiedBy"`
	VerifyOnly         bool                  `json:"verifyOnly"`
	FailureReason      string                `json:"failureReason,omitempty"`
	RelayerJobID       string                `json:"relayerJobId,omitempty"`
	Transitions        []ZKTransition        `json:"transitions"`
}

// ZKSubmitAnswer answers the submitter: the job and its optimistic
// verification ("success", or "failed" with the reason: the job is Failed).
type ZKSubmitAnswer struct {
	JobID            string `json:"jobId"`
	OptimisticVerify string `json:"optimisticVerify"`
	Reason           string `json:"reason,omitempty"`
}

// ZKProofJob is one proof's job (zk-job/<jobId>). Its submitter starts it
// with ZKSubmitUpdate (Update-with-Start); its first step writes its row
// within the account's bound of open jobs, its second verifies the proof
// (Groth16 here; the other types at the relayer), and the update answers
// the optimistic verification. Then the statement is recorded on the
// embedded chain (Submitted: the transaction is sent; IncludedInBlock: it
// is in a block; Finalized: the block is the chain's and the record reads
// back), and with a chainId it joins its domain's aggregation and waits,
// within AggregationWait, for the aggregation's notices. Every step that
// fails ends the job Failed with the reason; the row keeps the final state.
func ZKProofJob(ctx workflow.Context, in ZKJobInput) error {
	now := workflow.Now(ctx)
	st := ZKJobStatus{JobID: in.JobID, ProofType: in.ProofType, ChainID: in.ChainID, CreatedAt: now, VKHash: in.VKHash,
		VerifiedBy: VerifiedByConduit, VerifyOnly: in.ChainID == nil}
	if in.Relayed {
		st.VerifiedBy = VerifiedByRelayer
	}
	// Jobs since ChangeZKStatusInRow mirror their state into their row at
	// each transition but the last (the close writes that one), except
	// Queued, which the row says already.
	mirror := workflow.GetVersion(ctx, ChangeZKStatusInRow, workflow.DefaultVersion, 1) == 1
	move := func(status string) {
		at := workflow.Now(ctx)
		st.Status, st.StatusID, st.UpdatedAt = status, ZKStatusIDs[status], at
		st.Transitions = append(st.Transitions, ZKTransition{Status: status, At: at})
		last := status == ZKFailed || status == ZKAggregationPublished || status == ZKFinalized && in.ChainID == nil
		if mirror && status != ZKQueued && !last {
			state, _ := json.Marshal(st)
			// A write that fails past its retries leaves the row a step behind until the close.
			_ = workflow.ExecuteLocalActivity(shortLocal(ctx), ActZKMarkJob, activities.ZKMarkJob{JobID: in.JobID, Status: status, State: state}).Get(ctx, nil)
		}
	}
	if err := workflow.SetQueryHandler(ctx, ZKStatusQuery, func() (ZKJobStatus, error) { return st, nil }); err != nil {
		return err
	}
	answer, err := answerUpdate[ZKSubmitAnswer](ctx, ZKSubmitUpdate)
	if err != nil {
		return err
	}
	defer func() { _ = workflow.Await(ctx, func() bool { return workflow.AllHandlersFinished(ctx) }) }()

	lctx := workflow.WithLocalActivityOptions(ctx, workflow.LocalActivityOptions{
		StartToCloseTimeout: 10 * time.Second, ScheduleToCloseTimeout: ZKAdmitWithin, RetryPolicy: ShortRetry,
	})
	open := activities.ZKOpenJob{JobID: in.JobID, AccountID: in.AccountID, ProofType: in.ProofType, ChainID: in.ChainID,
		VKHash: in.VKHash, AdmitBy: in.AskedAt.Add(ZKAdmitWithin), Limit: in.Limit}
	if err := workflow.ExecuteLocalActivity(lctx, ActZKOpenJob, open).Get(ctx, nil); err != nil {
		answer.refuse(err)
		return nil // nothing was written
	}
	move(ZKQueued)

	short := shortLocal(ctx)
	actx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: time.Minute, RetryPolicy: ShortRetry})
	finish := func(reason string) error {
		if reason != "" {
			st.FailureReason = reason
			move(ZKFailed)
		}
		if !answer.settled() {
			answer.give(ZKSubmitAnswer{JobID: in.JobID, OptimisticVerify: "failed", Reason: reason})
		}
		state, _ := json.Marshal(st)
		return workflow.ExecuteLocalActivity(short, ActZKCloseJob, activities.ZKCloseJob{JobID: in.JobID, Status: st.Status, Reason: reason, State: state}).Get(ctx, nil)
	}

	if in.Relayed {
		return finish(relayJob(ctx, in, &st, move, answer))
	}

	var verified activities.ZKVerified
	if err := workflow.ExecuteLocalActivity(short, ActZKVerifyGroth16, activities.ZKVerifyInput{
		VKHash: in.VKHash, VK: in.VK, Proof: in.Proof, PublicSignals: in.PublicSignals,
	}).Get(ctx, &verified); err != nil {
		return finish("Valid: " + message(err))
	}
	st.Statement = verified.Statement
	move(ZKValid)
	answer.give(ZKSubmitAnswer{JobID: in.JobID, OptimisticVerify: "success"})

	rec := activities.ZKRecord{ID: in.JobID, Digest: verified.Statement}
	if err := workflow.ExecuteActivity(actx, ActZKSubmitRecord, rec).Get(ctx, &rec.TxHash); err != nil {
		return finish("Submitted: " + message(err))
	}
	st.TxHash = rec.TxHash
	move(ZKSubmitted)
	var at activities.ZKInclusion
	if err := workflow.ExecuteActivity(actx, ActZKAwaitInclusion, rec).Get(ctx, &at); err != nil {
		return finish("IncludedInBlock: " + message(err))
	}
	st.TxHash, st.BlockHash = at.TxHash, at.BlockHash
	move(ZKIncludedInBlock)
	if err := workflow.ExecuteActivity(actx, ActZKConfirmFinal, rec, at).Get(ctx, nil); err != nil {
		return finish("Finalized: " + message(err))
	}
	move(ZKFinalized)
	if in.ChainID == nil {
		return finish("")
	}
	return finish(aggregate(ctx, in, &st, move))
}

// aggregate adds the job's statement to its domain's aggregation
// (ActivityZKEnqueue, run by the aggregation's side) and follows its
// notices until the aggregation is published or AggregationWait passes.
// It answers the failure's reason ("" when published).
func aggregate(ctx workflow.Context, in ZKJobInput, st *ZKJobStatus, move func(string)) string {
	actx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: time.Minute, RetryPolicy: ShortRetry})
	var accepted ZKAggregateAccepted
	if err := workflow.ExecuteActivity(actx, ActivityZKEnqueue, ZKEnqueueInput{
		DomainID: in.DomainID, Request: ZKAggregateRequest{JobID: in.JobID, Statement: st.Statement},
	}).Get(ctx, &accepted); err != nil {
		return "AggregationPending: " + message(err)
	}
	id := accepted.AggregationID
	st.AggregationID = &id
	move(ZKAggregationPending)

	notices := workflow.GetSignalChannel(ctx, SignalZKAggregation)
	tctx, cancel := workflow.WithCancel(ctx)
	defer cancel()
	timer := workflow.NewTimer(tctx, in.AggregationWait)
	for {
		var n ZKAggregationNotice
		timedOut := false
		sel := workflow.NewSelector(ctx)
		sel.AddReceive(notices, func(c workflow.ReceiveChannel, _ bool) { c.Receive(ctx, &n) })
		sel.AddFuture(timer, func(workflow.Future) { timedOut = true })
		sel.Select(ctx)
		if timedOut {
			return fmt.Sprintf("%s: the aggregation was not published within %s", st.Status, in.AggregationWait)
		}
		if n.AggregationID != id {
			continue // another batch's notice: not this job's
		}
		d := st.AggregationDetails
		if d == nil {
			d = &ZKAggregationDetails{}
			st.AggregationDetails = d
		}
		d.Root, d.Leaf, d.LeafIndex, d.NumberOfLeaves, d.MerkleProof, d.DomainID = n.Root, n.Leaf, n.LeafIndex, n.NumberOfLeaves, n.MerkleProof, n.DomainID
		switch n.Status {
		case ZKAggregated:
			if st.Status == ZKAggregationPending {
				move(ZKAggregated)
			}
		case ZKAggregationPublished:
			d.Receipt, d.ReceiptBlockHash = n.Receipt, n.ReceiptBlockHash
			if st.Status == ZKAggregationPending {
				move(ZKAggregated) // the Aggregated notice was folded into this one
			}
			move(ZKAggregationPublished)
			return ""
		}
	}
}

// relayJob has the relayer verify the proof and mirrors its job's
// statuses until it ends (Finalized when verify-only, AggregationPublished
// otherwise, or Failed), within AggregationWait. It answers the failure's
// reason ("" when the relayer's job ended well).
func relayJob(ctx workflow.Context, in ZKJobInput, st *ZKJobStatus, move func(string), answer *updateAnswer[ZKSubmitAnswer]) string {
	actx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: time.Minute, RetryPolicy: ShortRetry})
	var sub relayer.Submitted
	if err := workflow.ExecuteActivity(actx, ActZKRelaySubmit, relayer.SubmitProof{
		ProofType: in.ProofType, VKRegistered: true, ChainID: in.ChainID, ProofOptions: in.ProofOptions,
		ProofData: relayer.ProofData{Proof: in.Proof, PublicSignals: in.PublicSignals, VK: in.VKHash},
	}).Get(ctx, &sub); err != nil {
		return "Valid: " + message(err)
	}
	st.RelayerJobID = sub.JobID
	answer.give(ZKSubmitAnswer{JobID: in.JobID, OptimisticVerify: sub.OptimisticVerify})
	deadline := workflow.Now(ctx).Add(in.AggregationWait)
	poll := max(in.RelayerPoll, time.Second)
	for {
		var js relayer.JobStatus
		if err := workflow.ExecuteActivity(actx, ActZKRelayStatus, sub.JobID).Get(ctx, &js); err != nil {
			return st.Status + ": " + message(err)
		}
		if js.Status == ZKFailed {
			reason := js.Error
			if reason == "" {
				reason = "the relayer reports the job failed"
			}
			return "relayer: " + reason
		}
		if _, known := ZKStatusIDs[js.Status]; known && js.Status != st.Status {
			st.TxHash, st.BlockHash, st.Statement, st.AggregationID = js.TxHash, js.BlockHash, js.Statement, js.AggregationID
			if d := js.AggregationDetails; d != nil {
				st.AggregationDetails = &ZKAggregationDetails{Receipt: d.Receipt, ReceiptBlockHash: d.ReceiptBlockHash, Root: d.Root,
					Leaf: d.Leaf, LeafIndex: d.LeafIndex, NumberOfLeaves: d.NumberOfLeaves, MerkleProof: d.MerkleProof}
			}
			move(js.Status)
		}
		if js.Status == ZKAggregationPublished || js.Status == ZKFinalized && in.ChainID == nil {
			return ""
		}
		if !workflow.Now(ctx).Before(deadline) {
			return fmt.Sprintf("%s: the relayer's job did not end within %s", st.Status, in.AggregationWait)
		}
		if err := workflow.Sleep(ctx, poll); err != nil {
			return st.Status + ": " + err.Error()
		}
	}
}

// message is an activity failure's own message, without the SDK's
// wrapping.
func message(err error) string {
	var app *temporal.ApplicationError
	if errors.As(err, &app) {
		return app.Message()
	}
	return err.Error()
}
