// Package zkverify is the zkVerify relay (docs/proofs.md): verification keys
// registered once per circuit, proofs submitted as durable jobs
// (workflows.ZKProofJob, zk-job/<jobId>) whose status is answered from the
// job's workflow while it runs and from its row once it ends. Groth16 on
// BN254 is verified here (internal/groth16) and recorded on the embedded
// chain's proof registry; the other proof types go to a zkVerify relayer
// when one is configured and are never reported verified by us.
package zkverify

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/google/uuid"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"conduit/activities"
	"conduit/internal/config"
	"conduit/internal/errs"
	"conduit/internal/groth16"
	"conduit/internal/logging"
	"conduit/internal/quota"
	"conduit/internal/store"
	"conduit/internal/temporalx"
	"conduit/internal/zkverify/relayer"
	"conduit/workflows"
)

// ProofTypes are the proof types the relay takes; Local is the one
// verified here.
var ProofTypes = []string{"groth16", "risc0", "ultrahonk", "ultraplonk", "sp1", "ezkl"}

// Local is the proof type verified here.
const Local = "groth16"

// DefaultChainID is the aggregation's destination chain when a submission
// names none (Sepolia, the relayer's default).
const DefaultChainID int64 = 11155111

// maxVK bounds a verification key's JSON (a 64-input Groth16 key is
// about 12 kB).
const maxVK = 64 << 10

// Service is the relay.
type Service struct {
	Store    *store.Store
	Temporal client.Client
	Config   config.Proofs
	// Relayer is nil when proofs.relayer_url is not set.
	Relayer *relayer.Client
}

// RelayerMissing is the refusal of a proof type only a relayer verifies,
// on a deployment without one.
func RelayerMissing(proofType string) *errs.Error {
	return errs.Field("proofType", fmt.Sprintf("%s proofs are verified by a zkVerify relayer and none is configured: set proofs.relayer_url (%s_PROOFS_RELAYER_URL) and proofs.relayer_api_key (%s_PROOFS_RELAYER_API_KEY)",
		proofType, config.EnvPrefix, config.EnvPrefix))
}

func checkProofType(t string) (string, error) {
	if t == "" {
		return Local, nil
	}
	if !slices.Contains(ProofTypes, t) {
		return "", errs.Field("proofType", "must be one of "+strings.Join(ProofTypes, ", "))
	}
	return t, nil
}

// RegisterVK is POST /api/zkverify/register-vk's body (the relayer's).
type RegisterVK struct {
	ProofType    string          `json:"proofType"`
	ProofOptions json.RawMessage `json:"proofOptions,omitempty"`
	VK           json.RawMessage `json:"vk"`
}

// Registered answers it: the key's hash, and whether it was registered
// before (the relayer's meta.vkHash is there too).
type Registered struct {
	VKHash            string `json:"vkHash"`
	AlreadyRegistered bool   `json:"alreadyRegistered"`
	Meta              struct {
		VKHash string `json:"vkHash"`
	} `json:"meta"`
}

// RegisterVK registers a key once per circuit: the same key again answers
// the same hash. A Groth16 key is checked and hashed here (Hash in
// internal/groth16: ours, not zkVerify's); other types are registered at
// the relayer, whose hash is kept.
func (s *Service) RegisterVK(ctx context.Context, account string, in RegisterVK) (Registered, error) {
	pt, err := checkProofType(in.ProofType)
	if err != nil {
		return Registered{}, err
	}
	if len(in.VK) == 0 || string(in.VK) == "null" {
		return Registered{}, errs.Field("vk", "is required")
	}
	if len(in.VK) > maxVK {
		return Registered{}, errs.Field("vk", fmt.Sprintf("is over %d bytes", maxVK))
	}
	var hash string
	if pt == Local {
		vk, err := groth16.ParseVerifyingKey(in.VK)
		if err != nil {
			return Registered{}, asField(err)
		}
		h := vk.Hash()
		hash = hexutil.Encode(h[:])
	} else {
		if s.Relayer == nil {
			return Registered{}, RelayerMissing(pt)
		}
		// A full account is refused before the relayer is called; the
		// row's write checks again in its transaction.
		if lim := s.Config.MaxKeys; lim > 0 {
			n, err := s.Store.Count(ctx, account, quota.ZKKeys)
			if err != nil {
				return Registered{}, err
			}
			if n >= lim {
				return Registered{}, quota.Exceeded(quota.ZKKeys, n, lim)
			}
		}
		r, err := s.Relayer.RegisterVK(ctx, relayer.RegisterVK{ProofType: pt, ProofOptions: in.ProofOptions, VK: in.VK})
		if err != nil {
			return Registered{}, relayerError(err)
		}
		hash = r.VKHash
	}
	out := Registered{VKHash: hash}
	out.Meta.VKHash = hash
	if _, err := s.Store.ZKKey(ctx, hash); err == nil {
		out.AlreadyRegistered = true
		return out, nil
	} else if !errors.Is(err, store.ErrNotFound) {
		return out, err
	}
	slot, err := s.Store.TakeSlot(ctx, account, quota.ZKKeys, s.Config.MaxKeys)
	if err != nil {
		return Registered{}, err
	}
	existing, err := slot.CreateZKKey(ctx, store.ZKKey{Hash: hash, ProofType: pt, VK: in.VK, AccountID: account})
	if err != nil {
		return Registered{}, err
	}
	out.AlreadyRegistered = existing
	return out, nil
}

// asField turns a groth16 refusal into a 400 naming its field.
func asField(err error) error {
	var ge *groth16.Error
	if errors.As(err, &ge) {
		return errs.Field(ge.Field, ge.Msg)
	}
	return err
}

// relayerError is a relayer's refusal (its 4xx: the caller's input) or
// failure (502).
func relayerError(err error) error {
	var re *relayer.Error
	if errors.As(err, &re) && re.Permanent() {
		return errs.Invalidf("the zkVerify relayer refused it: %s", re.Msg)
	}
	return errs.New(errs.Upstream, "the zkVerify relayer could not be reached or failed: %v", err)
}

// ProofData is the relayer's nesting of a submission's proof fields, also
// accepted.
type ProofData struct {
	Proof         json.RawMessage `json:"proof"`
	PublicSignals json.RawMessage `json:"publicSignals"`
	VK            json.RawMessage `json:"vk"`
}

// Submit is POST /api/zkverify/submit-proof's body: the spec's flat proof,
// publicSignals and vk (a registered vkHash or the key itself), or the
// relayer's proofData. chainId defaults to DefaultChainID; verifyOnly
// true asks for no aggregation (the job ends at Finalized).
type Submit struct {
	ProofType     string          `json:"proofType"`
	ChainID       *int64          `json:"chainId"`
	VerifyOnly    bool            `json:"verifyOnly"`
	VKRegistered  *bool           `json:"vkRegistered"`
	ProofOptions  json.RawMessage `json:"proofOptions,omitempty"`
	Proof         json.RawMessage `json:"proof"`
	PublicSignals json.RawMessage `json:"publicSignals"`
	VK            json.RawMessage `json:"vk"`
	ProofData     *ProofData      `json:"proofData"`
}

// admitWait bounds how long a submitter waits for its job's admission.
const admitWait = 30 * time.Second

// SubmitProof checks the submission's shape (a malformed one is a 400
// naming the field, before any job exists) and starts its job, answering
// its id and the optimistic verification. What only the proof's
// verification can tell (a point off the curve or outside its subgroup, a
// signal not below the field modulus, a proof that does not verify) fails
// the job at Valid: optimisticVerify "failed", the job Failed with why.
func (s *Service) SubmitProof(ctx context.Context, account string, in Submit) (workflows.ZKSubmitAnswer, error) {
	var none workflows.ZKSubmitAnswer
	pt, err := checkProofType(in.ProofType)
	if err != nil {
		return none, err
	}
	if in.ProofData != nil {
		if in.Proof != nil || in.PublicSignals != nil || in.VK != nil {
			return none, errs.Field("proofData", "give proof, publicSignals and vk either at the top level or inside proofData, not both")
		}
		in.Proof, in.PublicSignals, in.VK = in.ProofData.Proof, in.ProofData.PublicSignals, in.ProofData.VK
	}
	job := workflows.ZKJobInput{JobID: uuid.NewString(), AccountID: account, ProofType: pt, DomainID: s.Config.AggregationDomain,
		ProofOptions: in.ProofOptions, AskedAt: time.Now(), Limit: s.Config.MaxOpenJobs,
		AggregationWait: s.Config.AggregationWait, RelayerPoll: s.Config.RelayerPoll, Relayed: pt != Local}
	switch {
	case in.VerifyOnly && in.ChainID != nil:
		return none, errs.Field("verifyOnly", "a verify-only job has no chainId: send one or the other")
	case in.VerifyOnly:
	case in.ChainID == nil:
		c := DefaultChainID
		job.ChainID = &c
	case *in.ChainID <= 0:
		return none, errs.Field("chainId", "must be a positive chain id")
	default:
		job.ChainID = in.ChainID
	}
	if job.Relayed && s.Relayer == nil {
		return none, RelayerMissing(pt)
	}
	if isNull(in.Proof) {
		return none, errs.Field("proof", "is required")
	}
	if isNull(in.VK) {
		return none, errs.Field("vk", "is required: a registered vkHash or the key itself")
	}
	if len(in.Proof) > maxVK || len(in.PublicSignals) > maxVK {
		return none, errs.Field("proof", fmt.Sprintf("proof and publicSignals must each be under %d bytes", maxVK))
	}
	job.Proof, job.PublicSignals = in.Proof, in.PublicSignals
	if pt == Local {
		if err := shapeOf(in.Proof, in.PublicSignals); err != nil {
			return none, err
		}
	}
	key, err := s.key(ctx, account, pt, in.VK, in.ProofOptions)
	if err != nil {
		return none, err
	}
	job.VKHash, job.VK = key.Hash, key.VK
	if pt != Local {
		job.VK = nil
	}
	return s.start(ctx, job)
}

func isNull(r json.RawMessage) bool { return len(r) == 0 || string(r) == "null" }

// shapeOf refuses a Groth16 proof or signals that are not snarkjs's
// shape; what their verification decides is left to the job.
func shapeOf(proof, signals json.RawMessage) error {
	if _, err := groth16.ParseProof(proof); err != nil {
		if r := groth16.ReasonOf(err); r == groth16.Malformed || r == groth16.Unsupported {
			return asField(err)
		}
	}
	if isNull(signals) {
		return errs.Field("publicSignals", "is required for groth16: an array of decimal strings")
	}
	if _, err := groth16.ParsePublicSignals(signals); err != nil {
		if r := groth16.ReasonOf(err); r == groth16.Malformed || r == groth16.TooManyInputs {
			return asField(err)
		}
	}
	return nil
}

// key resolves a submission's vk: a registered vkHash (a string), or the
// key itself, registered on the way.
func (s *Service) key(ctx context.Context, account, pt string, vk, options json.RawMessage) (store.ZKKey, error) {
	var hash string
	if json.Unmarshal(vk, &hash) == nil && isHash(hash) {
		k, err := s.Store.ZKKey(ctx, strings.ToLower(hash))
		if errors.Is(err, store.ErrNotFound) {
			return k, errs.Field("vk", "no verification key is registered under this vkHash: register it first (POST /api/zkverify/register-vk) or send the key itself")
		}
		if err != nil {
			return k, err
		}
		if k.ProofType != pt {
			return k, errs.Field("vk", fmt.Sprintf("this vkHash is a %s key, not a %s one", k.ProofType, pt))
		}
		return k, nil
	}
	r, err := s.RegisterVK(ctx, account, RegisterVK{ProofType: pt, ProofOptions: options, VK: vk})
	if err != nil {
		return store.ZKKey{}, err
	}
	return store.ZKKey{Hash: r.VKHash, ProofType: pt, VK: vk}, nil
}

func isHash(s string) bool {
	h, ok := strings.CutPrefix(s, "0x")
	if !ok || len(h) != 64 {
		return false
	}
	_, err := hex.DecodeString(h)
	return err == nil
}

// start has the job admit itself (Update-with-Start) and answers its
// optimistic verification.
func (s *Service) start(ctx context.Context, job workflows.ZKJobInput) (workflows.ZKSubmitAnswer, error) {
	waitCtx, cancel := context.WithTimeout(ctx, admitWait)
	defer cancel()
	op := s.Temporal.NewWithStartWorkflowOperation(client.StartWorkflowOptions{
		ID: workflows.ZKJobWorkflowID(job.JobID), TaskQueue: workflows.ZKQueue,
		WorkflowIDReusePolicy:    enumspb.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE,
		WorkflowIDConflictPolicy: enumspb.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING,
	}, workflows.ZKJobWorkflowName, job)
	out, err := temporalx.Admit[workflows.ZKSubmitAnswer](waitCtx, s.Temporal, op, client.UpdateWorkflowOptions{UpdateName: workflows.ZKSubmitUpdate})
	var app *temporal.ApplicationError
	switch {
	case err == nil:
		return out, nil
	case errors.As(err, &app) && app.Type() == activities.ErrZKQuota:
		var used, limit int64
		_ = app.Details(&used, &limit)
		return out, quota.Exceeded(quota.ZKJobs, used, limit)
	default:
		logging.From(ctx).Error("a proof job could not be admitted", "job", job.JobID, "err", err)
		return out, &errs.Error{Kind: errs.Unavailable, Msg: "the proof job could not be started now; nothing was recorded; try again shortly", RetryAfter: 5 * time.Second}
	}
}

// JobStatus answers job id's status from its row, where the job writes its
// state at each transition (workflows.ChangeZKStatusInRow) and when it
// ends; a job from before that, or one between its admission and its first
// transition, is asked through its workflow's query. Another account's job
// does not exist for the caller.
func (s *Service) JobStatus(ctx context.Context, account, id string) (workflows.ZKJobStatus, error) {
	var st workflows.ZKJobStatus
	notFound := errs.NotFoundf("no proof job %s", id)
	if _, err := uuid.Parse(id); err != nil {
		return st, notFound
	}
	row, err := s.Store.ZKJob(ctx, id)
	if errors.Is(err, store.ErrNotFound) || err == nil && row.AccountID != account {
		return st, notFound
	}
	if err != nil {
		return st, err
	}
	if len(row.State) > 0 {
		err := json.Unmarshal(row.State, &st)
		return st, err
	}
	v, err := s.Temporal.QueryWorkflow(ctx, workflows.ZKJobWorkflowID(id), "", workflows.ZKStatusQuery)
	if err == nil {
		err = v.Get(&st)
	}
	if err != nil {
		// The workflow ended between the row's read and the query: the
		// row has its final state now.
		if row, rerr := s.Store.ZKJob(ctx, id); rerr == nil && row.Closed && len(row.State) > 0 {
			return st, json.Unmarshal(row.State, &st)
		}
		return st, &errs.Error{Kind: errs.Unavailable, Msg: "the job's status cannot be read now; try again shortly", RetryAfter: 2 * time.Second}
	}
	return st, nil
}

// Usage reports the account's registered keys and open jobs against
// their limits (a quota.Source for GET /api/account/usage).
func (s *Service) Usage(ctx context.Context, account string) ([]quota.Item, error) {
	return quota.CountEach(ctx, s.Store, account,
		quota.Bound{Resource: quota.ZKKeys, Limit: s.Config.MaxKeys}, quota.Bound{Resource: quota.ZKJobs, Limit: s.Config.MaxOpenJobs})
}
