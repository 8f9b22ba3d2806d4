package oauth

import (
	"context"
	"encoding/json"
	"errors"
	"net/url"
	"time"

	"github.com/ory/fosite"

	"conduit/internal/pgtext"
	"conduit/internal/store"
)

// storage is fosite's storage on PostgreSQL (internal/store): clients,
// authorization codes, PKCE challenges, access and refresh tokens. Rows
// are found by the token's HMAC signature; no token is ever stored. It
// implements fosite's transactional storage, so a code exchange and a
// refresh-token rotation commit whole or not at all.
type storage struct {
	st       *store.Store
	resource string
}

// The kinds of oauth_tokens rows.
const (
	kindCode    = "code"
	kindPKCE    = "pkce"
	kindAccess  = "access"
	kindRefresh = "refresh"
)

// grant is how a fosite request is kept (the oauth_tokens.request JSON).
// The form is already sanitized by fosite: at most redirect_uri and the
// PKCE challenge, never a code, a token or a verifier.
type grant struct {
	ID                string          `json:"id"`
	RequestedAt       time.Time       `json:"requestedAt"`
	ClientID          string          `json:"clientId"`
	RequestedScopes   []string        `json:"requestedScopes"`
	GrantedScopes     []string        `json:"grantedScopes"`
	RequestedAudience []string        `json:"requestedAudience"`
	GrantedAudience   []string        `json:"grantedAudience"`
	Form              url.Values      `json:"form"`
	Session           json.RawMessage `json:"session"`
}

// newSession is the session every request carries: the account is the
// subject; Extra["login"] names the human login that consented.
func newSession() *fosite.DefaultSession {
	return &fosite.DefaultSession{Extra: map[string]any{}}
}

// GetClient loads a registered client. An id that cannot be stored cannot
// exist (and must not reach PostgreSQL as a failed statement).
func (s *storage) GetClient(ctx context.Context, id string) (fosite.Client, error) {
	if id == "" || len(id) > 100 || pgtext.Problem(id) != "" {
		return nil, fosite.ErrNotFound
	}
	c, err := s.st.OAuthClient(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return nil, fosite.ErrNotFound
	}
	if err != nil {
		return nil, err
	}
	return toClient(c, s.resource), nil
}

// No client authenticates with a signed JWT (every client is public), so
// no assertion id is ever seen.
func (s *storage) ClientAssertionJWTValid(context.Context, string) error { return nil }

func (s *storage) SetClientAssertionJWT(context.Context, string, time.Time) error { return nil }

func (s *storage) save(ctx context.Context, kind, signature string, r fosite.Requester, expiry fosite.TokenType) error {
	sess := r.GetSession()
	raw, err := json.Marshal(sess)
	if err != nil {
		return err
	}
	g := grant{
		ID: r.GetID(), RequestedAt: r.GetRequestedAt(), ClientID: r.GetClient().GetID(),
		RequestedScopes: r.GetRequestedScopes(), GrantedScopes: r.GetGrantedScopes(),
		RequestedAudience: r.GetRequestedAudience(), GrantedAudience: r.GetGrantedAudience(),
		Form: r.GetRequestForm(), Session: raw,
	}
	b, err := json.Marshal(g)
	if err != nil {
		return err
	}
	expires := sess.GetExpiresAt(expiry)
	if expires.IsZero() {
		expires = time.Now().Add(24 * time.Hour)
	}
	return s.st.CreateOAuthToken(ctx, store.OAuthToken{
		Kind: kind, Signature: signature, RequestID: r.GetID(), ClientID: r.GetClient().GetID(),
		AccountID: sess.GetSubject(), Request: b, ExpiresAt: expires,
	})
}

// load reads a request back, decoding its session into session (a fresh
// one when nil: revocation asks without one). It returns the row's active
// flag beside it.
func (s *storage) load(ctx context.Context, kind, signature string, session fosite.Session) (fosite.Requester, bool, error) {
	// The signature comes from what a caller presented: text PostgreSQL
	// cannot hold matches no row.
	if signature == "" || len(signature) > 200 || pgtext.Problem(signature) != "" {
		return nil, false, fosite.ErrNotFound
	}
	t, err := s.st.OAuthToken(ctx, kind, signature)
	if errors.Is(err, store.ErrNotFound) {
		return nil, false, fosite.ErrNotFound
	}
	if err != nil {
		return nil, false, err
	}
	var g grant
	if err := json.Unmarshal(t.Request, &g); err != nil {
		return nil, false, err
	}
	client, err := s.GetClient(ctx, g.ClientID)
	if err != nil {
		return nil, false, err
	}
	if session == nil {
		session = newSession()
	}
	if err := json.Unmarshal(g.Session, session); err != nil {
		return nil, false, err
	}
	return &fosite.Request{
		ID: g.ID, RequestedAt: g.RequestedAt, Client: client,
		RequestedScope: g.RequestedScopes, GrantedScope: g.GrantedScopes,
		RequestedAudience: g.RequestedAudience, GrantedAudience: g.GrantedAudience,
		Form: g.Form, Session: session,
	}, t.Active, nil
}

// Authorization codes.

func (s *storage) CreateAuthorizeCodeSession(ctx context.Context, signature string, r fosite.Requester) error {
	return s.save(ctx, kindCode, signature, r, fosite.AuthorizeCode)
}

func (s *storage) GetAuthorizeCodeSession(ctx context.Context, signature string, session fosite.Session) (fosite.Requester, error) {
	r, active, err := s.load(ctx, kindCode, signature, session)
	if err == nil && !active {
		// A used code: fosite revokes what it was exchanged for.
		return r, fosite.ErrInvalidatedAuthorizeCode
	}
	return r, err
}

// InvalidateAuthorizeCodeSession marks a code used. Of two concurrent
// exchanges of one code only one finds it active; the other fails.
func (s *storage) InvalidateAuthorizeCodeSession(ctx context.Context, signature string) error {
	ok, err := s.st.DeactivateOAuthToken(ctx, kindCode, signature)
	if err == nil && !ok {
		return fosite.ErrSerializationFailure
	}
	return err
}

// PKCE challenges, kept beside their code.

func (s *storage) CreatePKCERequestSession(ctx context.Context, signature string, r fosite.Requester) error {
	return s.save(ctx, kindPKCE, signature, r, fosite.AuthorizeCode)
}

func (s *storage) GetPKCERequestSession(ctx context.Context, signature string, session fosite.Session) (fosite.Requester, error) {
	r, _, err := s.load(ctx, kindPKCE, signature, session)
	return r, err
}

func (s *storage) DeletePKCERequestSession(ctx context.Context, signature string) error {
	return s.st.DeleteOAuthToken(ctx, kindPKCE, signature)
}

// Access tokens.

func (s *storage) CreateAccessTokenSession(ctx context.Context, signature string, r fosite.Requester) error {
	return s.save(ctx, kindAccess, signature, r, fosite.AccessToken)
}

func (s *storage) GetAccessTokenSession(ctx context.Context, signature string, session fosite.Session) (fosite.Requester, error) {
	r, active, err := s.load(ctx, kindAccess, signature, session)
	if err == nil && !active {
		return r, fosite.ErrInactiveToken
	}
	return r, err
}

func (s *storage) DeleteAccessTokenSession(ctx context.Context, signature string) error {
	return s.st.DeleteOAuthToken(ctx, kindAccess, signature)
}

// RevokeAccessToken deletes every access token of the grant.
func (s *storage) RevokeAccessToken(ctx context.Context, requestID string) error {
	return s.st.DeleteOAuthGrant(ctx, kindAccess, requestID)
}

// Refresh tokens.

func (s *storage) CreateRefreshTokenSession(ctx context.Context, signature, _ string, r fosite.Requester) error {
	return s.save(ctx, kindRefresh, signature, r, fosite.RefreshToken)
}

// GetRefreshTokenSession returns a used (rotated or revoked) refresh
// token with ErrInactiveToken: fosite takes that as reuse and revokes the
// whole grant.
func (s *storage) GetRefreshTokenSession(ctx context.Context, signature string, session fosite.Session) (fosite.Requester, error) {
	r, active, err := s.load(ctx, kindRefresh, signature, session)
	if err == nil && !active {
		return r, fosite.ErrInactiveToken
	}
	return r, err
}

func (s *storage) DeleteRefreshTokenSession(ctx context.Context, signature string) error {
	return s.st.DeleteOAuthToken(ctx, kindRefresh, signature)
}

// RevokeRefreshToken marks every refresh token of the grant used: they
// stay recognisable, so presenting one again still counts as reuse.
func (s *storage) RevokeRefreshToken(ctx context.Context, requestID string) error {
	return s.st.DeactivateOAuthGrant(ctx, kindRefresh, requestID)
}

// RotateRefreshToken retires the presented refresh token (and the grant's
// access tokens) as its successor is issued. Only one of two concurrent
// refreshes with the same token finds it active; the other is refused
// (fosite answers it "retry"; the retry is then reuse).
func (s *storage) RotateRefreshToken(ctx context.Context, requestID, signature string) error {
	ok, err := s.st.DeactivateOAuthToken(ctx, kindRefresh, signature)
	if err != nil {
		return err
	}
	if !ok {
		return fosite.ErrSerializationFailure
	}
	if err := s.st.DeactivateOAuthGrant(ctx, kindRefresh, requestID); err != nil {
		return err
	}
	return s.st.DeleteOAuthGrant(ctx, kindAccess, requestID)
}

// Transactions (fosite's storage.Transactional).

func (s *storage) BeginTX(ctx context.Context) (context.Context, error) { return s.st.OAuthBegin(ctx) }
func (s *storage) Commit(ctx context.Context) error                     { return s.st.OAuthCommit(ctx) }
func (s *storage) Rollback(ctx context.Context) error                   { return s.st.OAuthRollback(ctx) }
