package zkpassport

import (
	"context"
	"encoding/json"
	"time"

	"conduit/internal/errs"
	"conduit/internal/logging"
	"conduit/workflows"
)

// Outcome is a verification's answer and what the attestation signs.
type Outcome struct {
	RequestID string `json:"requestId"`
	// Status is this verification's: verified, unconfirmed or failed.
	Status string `json:"status"`
	// RequestStatus is the request's after it (a failed attempt leaves it
	// open until its last one).
	RequestStatus string           `json:"requestStatus"`
	Verified      bool             `json:"verified"`
	Levels        map[string]Level `json:"levels"`
	Domain        string           `json:"domain"`
	Scope         string           `json:"scope"`
	Query         Query            `json:"query"`
	Disclosed     map[string]any   `json:"disclosed,omitempty"`
	// UniqueIdentifier is the holder's identifier for this domain and
	// scope, given only when the cryptographic level passed.
	UniqueIdentifier string    `json:"uniqueIdentifier,omitempty"`
	ProofDate        time.Time `json:"proofDate,omitzero"`
	VerifiedAt       time.Time `json:"verifiedAt"`
	// Attestation is the outcome signed by the platform (compact JWS,
	// EdDSA); KeysURL publishes the key (KeyID) that checks it.
	Attestation string `json:"attestation,omitempty"`
	KeyID       string `json:"keyId,omitempty"`
	KeysURL     string `json:"keysUrl,omitempty"`
}

// attestationClaims is the signed payload.
type attestationClaims struct {
	Issuer    string `json:"iss"`
	Subject   string `json:"sub"`
	IssuedAt  int64  `json:"iat"`
	ExpiresAt int64  `json:"requestExpiresAt"`
	Outcome
}

// Verify checks a submission for one of the account's requests at every
// level, signs the outcome and records it. A request verified (or
// unconfirmed) closes; a failed attempt leaves it open until its last.
func (s *Service) Verify(ctx context.Context, accountID string, sub Submission) (Outcome, error) {
	if sub.RequestID == "" {
		return Outcome{}, errs.Invalidf("requestId is required")
	}
	row, r, err := s.load(ctx, accountID, sub.RequestID)
	if err != nil {
		return Outcome{}, err
	}
	now := s.now()
	if row.Status == StatusExpired || !now.Before(r.ExpiresAt) {
		return Outcome{}, errs.New(errs.Gone, "request %s expired at %s", r.ID, r.ExpiresAt.Format(time.RFC3339))
	}
	if row.Status != StatusOpen {
		return Outcome{}, errs.Conflictf("request %s was already verified (status %s)", r.ID, row.Status)
	}
	out := s.check(ctx, r, sub, now)
	if s.Signer != nil {
		out.KeyID, out.KeysURL = s.Signer.KeyID, s.BaseURL+"/api/zkpassport/keys"
	}
	final := out.Status
	result, _ := json.Marshal(out)
	out.RequestStatus, err = s.Store.RecordZKPassportAttempt(ctx, accountID, r.ID, final, result, MaxAttempts, now)
	if err != nil {
		return Outcome{}, err
	}
	if s.Signer != nil {
		jws, err := s.Signer.Sign(attestationClaims{Issuer: s.BaseURL, Subject: r.ID, IssuedAt: now.Unix(), ExpiresAt: r.ExpiresAt.Unix(), Outcome: out})
		if err != nil {
			return Outcome{}, err
		}
		out.Attestation = jws
		result, _ = json.Marshal(out)
		_ = s.Store.SaveZKPassportResult(ctx, accountID, r.ID, result)
	}
	if out.RequestStatus != StatusOpen {
		// The request's workflow ends now instead of at its expiry; if the
		// signal is lost it ends then, finding the request closed.
		if err := s.Temporal.SignalWorkflow(ctx, workflows.ZKPassportRequestWorkflowID(r.ID), "", workflows.SignalZKPassportClosed, nil); err != nil {
			logging.From(ctx).Warn("the request's workflow was not told it closed", "request", r.ID, "err", err)
		}
	}
	return out, nil
}

// check runs the levels in order; a level after a failed one is not
// checked (and says so).
func (s *Service) check(ctx context.Context, r Request, sub Submission, now time.Time) Outcome {
	out := Outcome{RequestID: r.ID, Domain: r.Domain, Scope: r.Scope, Query: r.Query, VerifiedAt: now, Levels: map[string]Level{}}
	structure, ps := checkStructure(sub)
	out.Levels[LevelStructure] = structure
	skipped := Level{Status: NotChecked, Reason: "an earlier level failed"}
	if structure.Status != Passed {
		out.Levels[LevelBinding], out.Levels[LevelConstraints], out.Levels[LevelCryptographic] = skipped, skipped, skipped
		out.Status = StatusFailed
		return out
	}
	binding, date := checkBinding(r, sub, ps, now)
	constraints, disclosed := checkConstraints(r.Query, sub, ps)
	out.Levels[LevelBinding], out.Levels[LevelConstraints] = binding, constraints
	out.ProofDate = date
	if binding.Status != Passed || constraints.Status != Passed {
		out.Levels[LevelCryptographic] = skipped
		out.Status = StatusFailed
		return out
	}
	out.Disclosed = disclosed
	out.Levels[LevelCryptographic] = s.cryptographic(ctx, r, sub, &out)
	switch out.Levels[LevelCryptographic].Status {
	case Passed:
		out.Status, out.Verified = StatusVerified, true
	case Failed:
		out.Status, out.Disclosed = StatusFailed, nil
	default:
		out.Status = StatusUnconfirmed
	}
	return out
}

// cryptographic asks the sidecar; without one, or when it cannot answer,
// the level is not checked.
func (s *Service) cryptographic(ctx context.Context, r Request, sub Submission, out *Outcome) Level {
	if s.Verifier == nil {
		return Level{Status: NotChecked, Reason: "no zkPassport verifier is configured (zkpassport.verifier_url): the UltraHonk proofs and the certificate registry root were not checked"}
	}
	query, _ := json.Marshal(r.Query)
	res, err := s.Verifier.Verify(ctx, SidecarRequest{Proofs: sub.Proofs, OriginalQuery: query, QueryResult: sub.QueryResult,
		ServiceConfig: ServiceConfig{Domain: r.Domain, Scope: r.Scope, ValidityPeriodInSeconds: int64(r.ExpiresAt.Sub(r.CreatedAt) / time.Second)}})
	if err != nil {
		logging.From(ctx).Warn("the zkPassport verifier could not check a submission", "request", r.ID, "err", err)
		return Level{Status: NotChecked, Reason: "the zkPassport verifier could not be reached: " + err.Error()}
	}
	l := Level{Checks: []string{"UltraHonk proofs against zkPassport's circuit registry", "certificate registry root", "query result against the proofs (zkPassport's verifier)"}}
	if !res.Verified {
		msg := res.Error
		if msg == "" {
			msg = "the zkPassport verifier did not verify the proofs"
		}
		if len(res.QueryResultErrors) > 0 {
			msg += ": " + string(res.QueryResultErrors)
		}
		l.fail("%s", msg)
	} else {
		out.UniqueIdentifier = res.UniqueIdentifier
	}
	l.close()
	return l
}

// Status is GET /api/zkpassport/verify?requestId=.
type Status struct {
	RequestID string     `json:"requestId"`
	Status    string     `json:"status"`
	Domain    string     `json:"domain"`
	Scope     string     `json:"scope"`
	Mode      string     `json:"mode"`
	Query     Query      `json:"query"`
	Attempts  int        `json:"attempts"`
	CreatedAt time.Time  `json:"createdAt"`
	ExpiresAt time.Time  `json:"expiresAt"`
	ClosedAt  *time.Time `json:"closedAt,omitempty"`
	// Result is the last verification's outcome with its attestation.
	Result json.RawMessage `json:"result,omitempty"`
}

// Status reads a request's status and last result. A request past its
// expiry reads expired even before its workflow has closed it.
func (s *Service) Status(ctx context.Context, accountID, id string) (Status, error) {
	if id == "" {
		return Status{}, errs.Invalidf("requestId is required")
	}
	row, r, err := s.load(ctx, accountID, id)
	if err != nil {
		return Status{}, err
	}
	st := row.Status
	if st == StatusOpen && !s.now().Before(r.ExpiresAt) {
		st = StatusExpired
	}
	return Status{RequestID: r.ID, Status: st, Domain: r.Domain, Scope: r.Scope, Mode: r.Mode, Query: r.Query, Attempts: row.Attempts,
		CreatedAt: r.CreatedAt, ExpiresAt: r.ExpiresAt, ClosedAt: row.ClosedAt, Result: row.Result}, nil
}
