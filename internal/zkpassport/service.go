// Package zkpassport verifies zkPassport proofs for verification requests
// (docs/proofs.md): requests in zkPassport's query language (query.go),
// the levels a submission is checked at — structure, binding, constraints
// here, the cryptographic level through a sidecar running zkPassport's own
// verifier (levels.go, constraints.go, verifier.go) — and attestations of
// the outcome signed by the platform (sign.go).
package zkpassport

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/url"
	"strings"
	"time"
	"unicode/utf8"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"conduit/activities"
	"conduit/internal/config"
	"conduit/internal/errs"
	"conduit/internal/logging"
	"conduit/internal/quota"
	"conduit/internal/store"
	"conduit/internal/temporalx"
	"conduit/workflows"
)

// Request statuses.
const (
	StatusOpen        = "open"
	StatusVerified    = "verified"    // every level passed, the cryptographic one included
	StatusUnconfirmed = "unconfirmed" // every level checked passed; the cryptographic one was not checked
	StatusFailed      = "failed"
	StatusExpired     = "expired"
)

// MaxAttempts bounds the failed verifications a request takes before it
// closes as failed.
const MaxAttempts = 5

// WalletURL is where the zkPassport app opens requests (the SDK's links).
const WalletURL = "https://zkpassport.id/r"

// Service registers requests and verifies submissions.
type Service struct {
	Store    *store.Store
	Temporal client.Client
	Config   config.ZKPassport
	// Domain is what requests bind to (zkpassport.domain, or the host of
	// the public URL).
	Domain  string
	BaseURL string
	Signer  *Signer
	// Verifier checks the cryptographic level (nil: not checked).
	Verifier Verifier
	Now      func() time.Time
}

func (s *Service) now() time.Time {
	if s.Now != nil {
		return s.Now().UTC()
	}
	return time.Now().UTC()
}

// Request is a registered request.
type Request struct {
	ID        string
	Domain    string
	Scope     string
	Mode      string
	Query     Query
	CreatedAt time.Time
	ExpiresAt time.Time
}

// CreateArgs is POST /api/zkpassport/request's body, the SDK's request()
// options plus the query.
type CreateArgs struct {
	Name     string          `json:"name"`
	Logo     string          `json:"logo,omitempty"`
	Purpose  string          `json:"purpose"`
	Scope    string          `json:"scope,omitempty"`
	Mode     string          `json:"mode,omitempty"`
	Validity int64           `json:"validity,omitempty"` // seconds
	DevMode  bool            `json:"devMode,omitempty"`
	Query    json.RawMessage `json:"query"`
}

// Created is its answer.
type Created struct {
	RequestID string `json:"requestId"`
	// URL is the link the zkPassport app opens (a QR code or a tap).
	URL string `json:"url"`
	// Payload is what URL carries, decoded.
	Payload   Payload   `json:"payload"`
	Domain    string    `json:"domain"`
	Scope     string    `json:"scope"`
	ExpiresAt time.Time `json:"expiresAt"`
	StatusURL string    `json:"statusUrl"`
}

// Payload is the request as the wallet reads it: d (domain), t (topic, our
// requestId), c (the query, base64 JSON — the SDK's encoding), s (the
// service: name, logo, purpose, scope, validity — base64 JSON), m (mode).
type Payload struct {
	Domain  string         `json:"d"`
	Topic   string         `json:"t"`
	Config  Query          `json:"c"`
	Service map[string]any `json:"s"`
	Mode    string         `json:"m"`
}

var modes = []string{"fast", "compressed", "compressed-evm"}

func text(field, v string, lo, hi int) error {
	if n := utf8.RuneCountInString(strings.TrimSpace(v)); n < lo || n > hi || !utf8.ValidString(v) {
		if lo == 0 {
			return errs.Invalidf("%s must be at most %d characters", field, hi)
		}
		return errs.Invalidf("%s must be %d to %d characters", field, lo, hi)
	}
	return nil
}

// Create validates and registers a request: its workflow admits it (the
// row, within the account's bound of open requests) and lives until it is
// verified or expires. Bad input is refused before anything exists.
func (s *Service) Create(ctx context.Context, accountID string, in CreateArgs) (Created, error) {
	for _, c := range []struct {
		f, v   string
		lo, hi int
	}{{"name", in.Name, 1, 100}, {"purpose", in.Purpose, 1, 500}, {"logo", in.Logo, 0, 500}, {"scope", in.Scope, 0, 200}} {
		if err := text(c.f, c.v, c.lo, c.hi); err != nil {
			return Created{}, err
		}
	}
	if in.Logo != "" {
		if u, err := url.Parse(in.Logo); err != nil || u.Scheme != "https" || u.Host == "" {
			return Created{}, errs.Invalidf("logo must be an https URL")
		}
	}
	mode := in.Mode
	if mode == "" {
		mode = "fast"
	}
	if !contains(modes, mode) {
		return Created{}, errs.Invalidf("mode must be one of %s", strings.Join(modes, ", "))
	}
	if in.DevMode {
		return Created{}, errs.Invalidf("devMode requests are not accepted: development proofs use mock certificates and prove nothing")
	}
	validity := s.Config.DefaultValidity
	if in.Validity != 0 {
		validity = time.Duration(in.Validity) * time.Second
		if in.Validity < 1 || validity > s.Config.MaxValidity {
			return Created{}, errs.Invalidf("validity must be 1 to %d seconds", int64(s.Config.MaxValidity/time.Second))
		}
	}
	q, err := ParseQuery(in.Query)
	if err != nil {
		return Created{}, err
	}
	if err := q.Validate(); err != nil {
		return Created{}, err
	}
	if s.Domain == "" {
		return Created{}, errs.Unavailablef("zkPassport requests need a domain to bind to: set zkpassport.domain or http.public_url")
	}
	id := newID()
	scope := in.Scope
	if scope == "" {
		scope = id // the unique identifier is then this request's alone
	}
	now := s.now().Truncate(time.Second)
	canonical, _ := json.Marshal(q)
	open := activities.ZKPassportOpen{ID: id, AccountID: accountID, Domain: s.Domain, Scope: scope, Name: in.Name, Logo: in.Logo,
		Purpose: in.Purpose, Mode: mode, Query: canonical, CreatedAt: now, ExpiresAt: now.Add(validity), MaxOpen: s.Config.MaxOpen}
	start := s.Temporal.NewWithStartWorkflowOperation(client.StartWorkflowOptions{
		ID: workflows.ZKPassportRequestWorkflowID(id), TaskQueue: workflows.ZKPassportQueue,
		WorkflowIDReusePolicy:    enumspb.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE,
		WorkflowIDConflictPolicy: enumspb.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING,
	}, workflows.WfZKPassportRequest, open)
	waitCtx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	// The answer repeats what this call already knows; only a refusal matters.
	if _, err := temporalx.Admit[workflows.ZKPassportAdmitted](waitCtx, s.Temporal, start, client.UpdateWorkflowOptions{UpdateName: workflows.UpdateZKPassportAdmit}); err != nil {
		var app *temporal.ApplicationError
		if errors.As(err, &app) && app.Type() == activities.ErrZKPassportRefused {
			var used, limit int64
			if app.Details(&used, &limit) != nil || limit == 0 {
				used, limit = int64(s.Config.MaxOpen), int64(s.Config.MaxOpen)
			}
			return Created{}, quota.Exceeded(quota.ZKPassportRequests, used, limit)
		}
		logging.From(ctx).Error("registering a zkPassport request failed", "request", id, "err", err)
		return Created{}, errs.Unavailablef("the request could not be registered now; try again")
	}
	service := map[string]any{"name": in.Name, "purpose": in.Purpose, "scope": scope, "validity": int64(validity / time.Second)}
	if in.Logo != "" {
		service["logo"] = in.Logo
	}
	p := Payload{Domain: s.Domain, Topic: id, Config: q, Service: service, Mode: mode}
	return Created{RequestID: id, URL: p.URL(), Payload: p, Domain: s.Domain, Scope: scope, ExpiresAt: open.ExpiresAt,
		StatusURL: s.BaseURL + "/api/zkpassport/verify?requestId=" + id}, nil
}

// URL is the wallet link: the SDK's parameter names (d, t, c, s, m) with
// c and s base64 JSON as the SDK writes them, then URL-escaped. The SDK
// also adds p, its bridge session key (the encrypted channel the app
// answers on), and v/dt; this platform runs no bridge, so they are absent.
func (p Payload) URL() string {
	c, _ := json.Marshal(p.Config)
	sv, _ := json.Marshal(p.Service)
	v := url.Values{}
	v.Set("d", p.Domain)
	v.Set("t", p.Topic)
	v.Set("c", base64.StdEncoding.EncodeToString(c))
	v.Set("s", base64.StdEncoding.EncodeToString(sv))
	v.Set("m", p.Mode)
	return WalletURL + "?" + v.Encode()
}

func newID() string {
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	return "zkp_" + hex.EncodeToString(b)
}

func contains(list []string, v string) bool {
	for _, x := range list {
		if x == v {
			return true
		}
	}
	return false
}

// load reads an account's request (404 for another's).
func (s *Service) load(ctx context.Context, accountID, id string) (store.ZKPassportRequest, Request, error) {
	if !strings.HasPrefix(id, "zkp_") || len(id) != 28 {
		return store.ZKPassportRequest{}, Request{}, errs.NotFoundf("zkPassport request %q not found", id)
	}
	row, err := s.Store.ZKPassportRequest(ctx, accountID, id)
	if errors.Is(err, store.ErrNotFound) {
		return row, Request{}, errs.NotFoundf("zkPassport request %q not found", id)
	}
	if err != nil {
		return row, Request{}, err
	}
	var q Query
	if err := json.Unmarshal(row.Query, &q); err != nil {
		return row, Request{}, err
	}
	return row, Request{ID: row.ID, Domain: row.Domain, Scope: row.Scope, Mode: row.Mode, Query: q,
		CreatedAt: row.CreatedAt.UTC(), ExpiresAt: row.ExpiresAt.UTC()}, nil
}

// Usage reports the account's open requests against their limit (a
// quota.Source for GET /api/account/usage).
func (s *Service) Usage(ctx context.Context, account string) ([]quota.Item, error) {
	return quota.CountEach(ctx, s.Store, account, quota.Bound{Resource: quota.ZKPassportRequests, Limit: int64(s.Config.MaxOpen)})
}
