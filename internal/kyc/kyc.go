// Package kyc is KYC proofs (docs/proofs.md): submitted, checked per the
// spec's rules (§4.16), verified cryptographically when their algorithm is
// one we verify (groth16 against a registered key), recorded on the
// embedded chain's proof registry and kept for seven days; each proof's life
// is a workflow (workflows.KYCProof, kyc-proof/<id>). Its clock is
// injectable (Now), so expiry can be tested on the real server.
package kyc

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/google/uuid"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"conduit/activities"
	"conduit/internal/errs"
	"conduit/internal/logging"
	"conduit/internal/quota"
	"conduit/internal/store"
	"conduit/internal/temporalx"
	"conduit/internal/zkverify/registry"
	"conduit/workflows"
)

// Spec §8: a proof lives seven days; its timestamp must be within an hour
// of its submission.
const (
	Expiry     = 7 * 24 * time.Hour
	Freshness  = time.Hour
	maxProof   = 64 << 10
	maxInputs  = 64
	maxInputSz = 256
)

// Service is KYC proofs.
type Service struct {
	Store    *store.Store
	Temporal client.Client
	Registry *registry.Registry
	// BaseURL makes verificationUrl absolute.
	BaseURL string
	// Limit bounds an account's proofs not yet expired (0: none).
	Limit int64
	// Now is the service's clock (nil: time.Now); tests move it to see
	// a proof expire.
	Now func() time.Time
}

func (s *Service) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}

// Submission is POST /api/kyc/proof's body (Treza's shape).
type Submission struct {
	UserID     string      `json:"userId"`
	Proof      *ProofInput `json:"proof"`
	DeviceInfo *struct {
		Platform string `json:"platform"`
		Version  string `json:"version"`
	} `json:"deviceInfo"`
}

// ProofInput is the submitted proof. For algorithm groth16, Proof is
// snarkjs's proof.json as a string, PublicInputs the public signals in hex
// and VKHash names the key registered with POST /api/zkverify/register-vk.
type ProofInput struct {
	Commitment   string   `json:"commitment"`
	Proof        string   `json:"proof"`
	PublicInputs []string `json:"publicInputs"`
	Timestamp    string   `json:"timestamp"`
	Algorithm    string   `json:"algorithm"`
	VKHash       string   `json:"vkHash"`
}

var (
	hex64     = regexp.MustCompile(`^[0-9a-fA-F]{64}$`)
	hexString = regexp.MustCompile(`^(0x)?[0-9a-fA-F]+$`)
	algoName  = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_.\-]{0,63}$`)
)

// check applies the spec's rules, one 400 per rule broken (all named).
func (s *Service) check(in Submission) (time.Time, error) {
	var p errs.Problems
	if in.Proof == nil {
		p.Add("proof", "is required: {commitment, proof, publicInputs, timestamp, algorithm}")
		return time.Time{}, p.Err("the proof")
	}
	x := in.Proof
	if !hex64.MatchString(x.Commitment) {
		p.Add("proof.commitment", "must be exactly 64 hex characters")
	}
	if len(x.Proof) < 65 {
		p.Add("proof.proof", "must be at least 65 characters")
	} else if len(x.Proof) > maxProof {
		p.Add("proof.proof", fmt.Sprintf("must be at most %d characters", maxProof))
	}
	ts, err := time.Parse(time.RFC3339Nano, x.Timestamp)
	if err != nil {
		p.Add("proof.timestamp", "must be an ISO 8601 (RFC 3339) time")
	} else if d := s.now().Sub(ts); d > Freshness || d < -Freshness {
		p.Add("proof.timestamp", "must be within 1 hour of the submission")
	}
	switch {
	case len(x.PublicInputs) == 0:
		p.Add("proof.publicInputs", "must be a non-empty array of hex strings")
	case len(x.PublicInputs) > maxInputs:
		p.Add("proof.publicInputs", fmt.Sprintf("must hold at most %d values", maxInputs))
	default:
		for i, h := range x.PublicInputs {
			if !hexString.MatchString(h) || len(h) > maxInputSz {
				p.Add(fmt.Sprintf("proof.publicInputs[%d]", i), "must be a hex string")
			}
		}
	}
	if !algoName.MatchString(x.Algorithm) {
		p.Add("proof.algorithm", "must be an algorithm's name (a letter, then letters, digits, _ . or -; at most 64)")
	}
	if strings.EqualFold(x.Algorithm, "groth16") {
		if h, ok := strings.CutPrefix(x.VKHash, "0x"); !ok || len(h) != 64 {
			p.Add("proof.vkHash", "is required for groth16: the vkHash of a key registered with POST /api/zkverify/register-vk")
		}
	}
	if len(in.UserID) > 256 {
		p.Add("userId", "must be at most 256 characters")
	}
	return ts, p.Err("the proof")
}

// Digest is what the chain records of a proof: keccak256 of a tag, the
// commitment, keccak256(proof) and keccak256 of the public inputs' JSON.
func Digest(commitment, proof string, inputs []string) common.Hash {
	c, _ := hex.DecodeString(commitment)
	in, _ := json.Marshal(inputs)
	return crypto.Keccak256Hash([]byte("conduit/kyc/v1"), c, crypto.Keccak256([]byte(proof)), crypto.Keccak256(in))
}

// Submitted answers POST /api/kyc/proof.
type Submitted struct {
	workflows.KYCSubmitted
	BlockchainProofID string `json:"blockchainProofId"`
	VerificationURL   string `json:"verificationUrl"`
}

const admitWait = 30 * time.Second

// Submit checks the proof and has its workflow admit it
// (Update-with-Start).
func (s *Service) Submit(ctx context.Context, account string, in Submission) (Submitted, error) {
	ts, err := s.check(in)
	if err != nil {
		return Submitted{}, err
	}
	x := in.Proof
	now := s.now().UTC()
	p := store.KYCProof{ID: uuid.NewString(), AccountID: account, UserID: in.UserID, Commitment: strings.ToLower(x.Commitment), Proof: x.Proof,
		PublicInputs: x.PublicInputs, Algorithm: x.Algorithm, VKHash: strings.ToLower(x.VKHash), Timestamp: ts, ExpiresAt: now.Add(Expiry)}
	if in.DeviceInfo != nil {
		p.DevicePlatform, p.DeviceVersion = in.DeviceInfo.Platform, in.DeviceInfo.Version
	}
	p.Digest = Digest(p.Commitment, p.Proof, p.PublicInputs).Hex()
	waitCtx, cancel := context.WithTimeout(ctx, admitWait)
	defer cancel()
	op := s.Temporal.NewWithStartWorkflowOperation(client.StartWorkflowOptions{
		ID: workflows.KYCProofWorkflowID(p.ID), TaskQueue: workflows.ZKQueue,
		WorkflowIDReusePolicy:    enumspb.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE,
		WorkflowIDConflictPolicy: enumspb.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING,
	}, workflows.WfKYCProof, workflows.KYCProofInput{Proof: p, AskedAt: time.Now(), Limit: s.Limit})
	sub, err := temporalx.Admit[workflows.KYCSubmitted](waitCtx, s.Temporal, op, client.UpdateWorkflowOptions{UpdateName: workflows.KYCSubmitUpdate})
	out := Submitted{KYCSubmitted: sub}
	var app *temporal.ApplicationError
	switch {
	case err == nil:
	case errors.As(err, &app) && app.Type() == activities.ErrKYCQuota:
		var used, limit int64
		_ = app.Details(&used, &limit)
		return out, quota.Exceeded(quota.KYCProofs, used, limit)
	default:
		logging.From(ctx).Error("a KYC proof could not be admitted", "proof", p.ID, "err", err)
		return out, &errs.Error{Kind: errs.Unavailable, Msg: "the proof could not be recorded now; nothing was kept; try again shortly", RetryAfter: 5 * time.Second}
	}
	out.BlockchainProofID = registry.ID("kyc/" + p.ID).Hex()
	out.VerificationURL = s.BaseURL + "/api/kyc/proof/" + p.ID + "/verify"
	return out, nil
}

// Public is a proof's public record.
type Public struct {
	ProofID                   string     `json:"proofId"`
	Commitment                string     `json:"commitment"`
	PublicInputs              []string   `json:"publicInputs"`
	Algorithm                 string     `json:"algorithm"`
	Status                    string     `json:"status"`
	CryptographicallyVerified bool       `json:"cryptographicallyVerified"`
	VerificationNote          string     `json:"verificationNote"`
	VerifiedAt                *time.Time `json:"verifiedAt"`
	ExpiresAt                 time.Time  `json:"expiresAt"`
	CreatedAt                 time.Time  `json:"createdAt"`
	ChainTxHash               string     `json:"chainTxHash,omitempty"`
	BlockchainProofID         string     `json:"blockchainProofId"`
	// The private fields (includePrivate=true, the owner's key).
	Proof      string     `json:"proof,omitempty"`
	Timestamp  *time.Time `json:"timestamp,omitempty"`
	UserID     string     `json:"userId,omitempty"`
	VKHash     string     `json:"vkHash,omitempty"`
	DeviceInfo *Device    `json:"deviceInfo,omitempty"`
}

// Device is the submitter's device, as it said.
type Device struct {
	Platform string `json:"platform"`
	Version  string `json:"version"`
}

// Caller is who reads a proof: the owning account's key may see its
// private fields.
type Caller struct {
	AccountID string
	// CanRead: the key holds proofs:read.
	CanRead bool
}

// load reads a live proof: a missing one is a 404, an expired one a 410
// (by the service's clock, whatever the workflow has written yet).
func (s *Service) load(ctx context.Context, id string) (store.KYCProof, error) {
	if _, err := uuid.Parse(id); err != nil {
		return store.KYCProof{}, errs.NotFoundf("no KYC proof %s", id)
	}
	p, err := s.Store.KYCProofByID(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return p, errs.NotFoundf("no KYC proof %s", id)
	}
	if err != nil {
		return p, err
	}
	if !s.now().Before(p.ExpiresAt) || p.Status == activities.KYCExpired {
		e := errs.New(errs.Gone, "Proof expired")
		return p, e.With("expiresAt", p.ExpiresAt.UTC().Format(time.RFC3339))
	}
	return p, nil
}

// Get answers a proof's public record, and its private fields when asked
// by a key of the owning account holding proofs:read (403 otherwise).
func (s *Service) Get(ctx context.Context, id string, private bool, caller Caller) (Public, error) {
	p, err := s.load(ctx, id)
	if err != nil {
		return Public{}, err
	}
	out := Public{ProofID: p.ID, Commitment: p.Commitment, PublicInputs: p.PublicInputs, Algorithm: p.Algorithm, Status: p.Status,
		CryptographicallyVerified: p.CryptoVerified, VerificationNote: p.Note, VerifiedAt: p.VerifiedAt, ExpiresAt: p.ExpiresAt,
		CreatedAt: p.CreatedAt, ChainTxHash: p.ChainTxHash, BlockchainProofID: registry.ID("kyc/" + p.ID).Hex()}
	if private {
		if caller.AccountID != p.AccountID || !caller.CanRead {
			return Public{}, errs.Forbiddenf("includePrivate=true needs an API key of the account that submitted the proof, holding proofs:read")
		}
		ts := p.Timestamp
		out.Proof, out.Timestamp, out.UserID, out.VKHash = p.Proof, &ts, p.UserID, p.VKHash
		if p.DevicePlatform != "" || p.DeviceVersion != "" {
			out.DeviceInfo = &Device{Platform: p.DevicePlatform, Version: p.DeviceVersion}
		}
	}
	return out, nil
}

// Verification answers GET /api/kyc/proof/{id}/verify.
type Verification struct {
	ProofID                   string     `json:"proofId"`
	IsValid                   bool       `json:"isValid"`
	CryptographicallyVerified bool       `json:"cryptographicallyVerified"`
	PublicInputs              []string   `json:"publicInputs"`
	VerifiedAt                *time.Time `json:"verifiedAt"`
	ChainVerified             bool       `json:"chainVerified"`
	ExpiresAt                 time.Time  `json:"expiresAt"`
}

// Verify answers whether the proof is valid (verified) and whether the
// chain holds its record, read back from the contract now.
func (s *Service) Verify(ctx context.Context, id string) (Verification, error) {
	p, err := s.load(ctx, id)
	if err != nil {
		return Verification{}, err
	}
	onChain, err := s.Registry.IsRecorded(ctx, "kyc/"+p.ID, common.HexToHash(p.Digest))
	if err != nil {
		return Verification{}, errs.New(errs.Unavailable, "the chain cannot be read now: %v", err)
	}
	return Verification{ProofID: p.ID, IsValid: p.Status == activities.KYCVerified, CryptographicallyVerified: p.CryptoVerified,
		PublicInputs: p.PublicInputs, VerifiedAt: p.VerifiedAt, ChainVerified: onChain, ExpiresAt: p.ExpiresAt}, nil
}

// Usage reports the account's KYC proofs not yet expired against their
// limit (a quota.Source for GET /api/account/usage).
func (s *Service) Usage(ctx context.Context, account string) ([]quota.Item, error) {
	return quota.CountEach(ctx, s.Store, account, quota.Bound{Resource: quota.KYCProofs, Limit: s.Limit})
}
