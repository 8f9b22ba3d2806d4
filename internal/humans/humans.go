// Package humans holds the rules of human sign-in: email + password
// logins for accounts, browser sessions and the CSRF tokens of their
// forms. The OAuth consent page and the dashboard use it; storage is the
// store's job, cookies and pages the frontend's.
package humans

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"net/mail"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"conduit/internal/accounts"
	"conduit/internal/apikey"
	"conduit/internal/errs"
	"conduit/internal/pgtext"
	"conduit/internal/store"
)

// Password length bounds: long enough to resist guessing at the rate the
// sign-in limit allows, short enough that hashing it costs nothing extra.
const (
	MinPassword = 12
	MaxPassword = 256
)

// DefaultSessionTTL is how long a sign-in lasts unless configured.
const DefaultSessionTTL = 12 * time.Hour

var (
	// ErrBadCredentials: an unknown email or a wrong password. One error
	// for both, answered in the same time, so nobody learns which emails
	// have logins.
	ErrBadCredentials = errors.New("the email or the password is wrong")
	// ErrNoSession: no cookie, or an unknown, ended or expired session.
	ErrNoSession = errors.New("not signed in")
)

// Service applies the rules on top of the store.
type Service struct {
	Store *store.Store
	// SessionTTL is how long a sign-in lasts (DefaultSessionTTL when 0).
	SessionTTL time.Duration
	// Accounts opens accounts for sign-up (OpenAccount).
	Accounts *accounts.Service
}

// Human is a signed-in person: the login and when the session ends.
type Human struct {
	Login   store.Login
	Expires time.Time
}

// Principal is the human as a caller: the account, holding the login's
// permissions. What the human may grant an OAuth client is bounded by it
// with the keys' rule (accounts.Principal.Lacking): at most what it holds.
func (h Human) Principal() accounts.Principal {
	return accounts.Principal{AccountID: h.Login.AccountID, Scopes: h.Login.Permissions}
}

// NormalizeEmail checks an email address and returns it lower-cased: the
// bare address (no display name), at most 254 characters.
func NormalizeEmail(email string) (string, error) {
	email = strings.TrimSpace(email)
	if email == "" {
		return "", errs.Invalidf("email is required")
	}
	if len(email) > 254 || pgtext.Problem(email) != "" {
		return "", errs.Invalidf("email must be an address of at most 254 characters")
	}
	a, err := mail.ParseAddress(email)
	if err != nil || a.Address != email || a.Name != "" {
		return "", errs.Invalidf("email %q is not a plain address like name@example.com", email)
	}
	return strings.ToLower(email), nil
}

// CheckNewPassword applies the rule of a new password: its length.
func CheckNewPassword(pw string) error { return checkPassword(pw) }

func checkPassword(pw string) error {
	if n := utf8.RuneCountInString(pw); n < MinPassword || len(pw) > MaxPassword || !utf8.ValidString(pw) {
		return errs.Invalidf("a password must be %d to %d characters", MinPassword, MaxPassword)
	}
	return nil
}

// CreateLogin gives an account an email sign-in. permissions bound what
// the human may grant OAuth clients (nil: every scope; the account's
// owner is not a key and may hold them all).
func (s *Service) CreateLogin(ctx context.Context, account, email, password string, permissions []string) (store.Login, error) {
	email, perms, err := checkNew(email, password, permissions)
	if err != nil {
		return store.Login{}, err
	}
	hash, err := HashPassword(password)
	if err != nil {
		return store.Login{}, err
	}
	l, err := s.Store.CreateLogin(ctx, store.NewLogin{AccountID: account, Email: email, PasswordHash: hash, Permissions: perms})
	if errors.Is(err, store.ErrEmailTaken) {
		return l, errs.Invalidf("a login with email %s already exists", email)
	}
	return l, err
}

// EnsureLogin makes email sign in to account with password: it creates
// the login, or sets the password of the existing one when it differs
// (the dev command keeps its dev login's password in a file). An email
// that signs in to another account is refused.
func (s *Service) EnsureLogin(ctx context.Context, account, email, password string, permissions []string) (store.Login, error) {
	email, _, err := checkNew(email, password, permissions)
	if err != nil {
		return store.Login{}, err
	}
	l, hash, err := s.Store.LoginByEmail(ctx, email)
	if errors.Is(err, store.ErrNotFound) {
		return s.CreateLogin(ctx, account, email, password, permissions)
	}
	if err != nil {
		return l, err
	}
	if l.AccountID != account {
		return l, errs.Invalidf("email %s signs in to another account", email)
	}
	if CheckPassword(password, hash) {
		return l, nil
	}
	newHash, err := HashPassword(password)
	if err != nil {
		return l, err
	}
	return l, s.Store.SetLoginPassword(ctx, l.ID, newHash)
}

func checkNew(email, password string, permissions []string) (string, []string, error) {
	email, err := NormalizeEmail(email)
	if err != nil {
		return "", nil, err
	}
	if err := checkPassword(password); err != nil {
		return "", nil, err
	}
	perms := apikey.AllScopes()
	if permissions != nil {
		if perms, err = apikey.NormalizeScopes(permissions); err != nil {
			return "", nil, errs.Invalidf("%s", err)
		}
	}
	return email, perms, nil
}

// dummyHash is checked against when the email has no login, so an
// unknown email takes as long as a wrong password.
var dummyHash = sync.OnceValue(func() string {
	h, _ := HashPassword(rand.Text())
	return h
})

// SignIn checks an email and password and opens a session. It returns the
// session's secret (the cookie value; only its hash is stored) and the
// human. Anything wrong is ErrBadCredentials.
func (s *Service) SignIn(ctx context.Context, email, password string) (string, Human, error) {
	email, err := NormalizeEmail(email)
	if err != nil || len(password) > MaxPassword || pgtext.Problem(password) != "" {
		CheckPassword(password, dummyHash())
		return "", Human{}, ErrBadCredentials
	}
	l, hash, err := s.Store.LoginByEmail(ctx, email)
	if errors.Is(err, store.ErrNotFound) {
		CheckPassword(password, dummyHash())
		return "", Human{}, ErrBadCredentials
	}
	if err != nil {
		return "", Human{}, err
	}
	if !CheckPassword(password, hash) {
		return "", Human{}, ErrBadCredentials
	}
	return s.OpenSession(ctx, l)
}

// OpenSession signs the login in without its password (the sign-up that
// has just set it): a new session's secret and the human.
func (s *Service) OpenSession(ctx context.Context, l store.Login) (string, Human, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", Human{}, err
	}
	token := base64.RawURLEncoding.EncodeToString(b)
	ttl := s.SessionTTL
	if ttl <= 0 {
		ttl = DefaultSessionTTL
	}
	expires := time.Now().Add(ttl)
	if err := s.Store.CreateLoginSession(ctx, sessionHash(token), l.ID, expires); err != nil {
		return "", Human{}, err
	}
	return token, Human{Login: l, Expires: expires}, nil
}

// Session finds the human signed in with the session secret token.
func (s *Service) Session(ctx context.Context, token string) (Human, error) {
	if !wellFormed(token) {
		return Human{}, ErrNoSession
	}
	l, expires, err := s.Store.LoginBySession(ctx, sessionHash(token))
	if errors.Is(err, store.ErrNotFound) {
		return Human{}, ErrNoSession
	}
	if err != nil {
		return Human{}, err
	}
	return Human{Login: l, Expires: expires}, nil
}

// SignOut ends the session (nothing happens for an unknown one).
func (s *Service) SignOut(ctx context.Context, token string) error {
	if !wellFormed(token) {
		return nil
	}
	return s.Store.DeleteLoginSession(ctx, sessionHash(token))
}

// wellFormed: 32 bytes, base64url without padding.
func wellFormed(token string) bool {
	b, err := base64.RawURLEncoding.DecodeString(token)
	return err == nil && len(b) == 32
}

func sessionHash(token string) []byte {
	h := sha256.Sum256([]byte("session\x00" + token))
	return h[:]
}

// CSRFToken is the token a signed-in page puts in its forms: derived from
// the session secret (which only the browser's cookie holds), so a page
// on another site cannot know it, and nothing more is stored. It differs
// from the stored hash, so a copy of the database forges no form.
func CSRFToken(sessionToken string) string {
	h := sha256.Sum256([]byte("csrf\x00" + sessionToken))
	return base64.RawURLEncoding.EncodeToString(h[:])
}

// CheckCSRF reports, in constant time, whether presented is the session's
// CSRF token.
func CheckCSRF(sessionToken, presented string) bool {
	if sessionToken == "" || presented == "" {
		return false
	}
	return subtle.ConstantTimeCompare([]byte(CSRFToken(sessionToken)), []byte(presented)) == 1
}

// NewFormToken is a random token for a form shown before any session
// exists (the sign-in form): the page carries it in a hidden field and a
// cookie, and the post must bring both (double submit).
func NewFormToken() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

// SameToken compares two form tokens in constant time; empty never
// matches.
func SameToken(a, b string) bool {
	return a != "" && b != "" && subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1
}

// fieldError is a bad sign-up field, named in the error's "field".
func fieldError(field string, err error) error {
	return &errs.Error{Kind: errs.Invalid, Msg: err.Error(), Extra: map[string]any{"field": field}}
}

// OpenAccount is sign-up: a human account with an email sign-in
// (accounts.SignUp), for the dashboard's sign-up and `account create
// -email`. The account's free credit waits for the email's verification
// link, unless verified (an operator vouching for the email). name
// defaults to the email; permissions bound what the login may use and
// grant (nil: every scope). A bad email or password is an Invalid error
// naming the field. An email in use is not an error: its owner is mailed,
// and the outcome says so only to the caller's code (Existing), never to
// be shown. The password is hashed either way, so both take as long.
func (s *Service) OpenAccount(ctx context.Context, name, email, password string, permissions []string, verified bool) (accounts.SignUpOutcome, error) {
	norm, err := NormalizeEmail(email)
	if err != nil {
		return accounts.SignUpOutcome{}, fieldError("email", err)
	}
	if err := checkPassword(password); err != nil {
		return accounts.SignUpOutcome{}, fieldError("password", err)
	}
	_, perms, err := checkNew(norm, password, permissions)
	if err != nil {
		return accounts.SignUpOutcome{}, err
	}
	name = strings.TrimSpace(name)
	if name == "" {
		name = norm
		if r := []rune(name); len(r) > 100 {
			name = string(r[:100])
		}
	}
	if utf8.RuneCountInString(name) > 100 || pgtext.Problem(name) != "" {
		return accounts.SignUpOutcome{}, errs.Invalidf("account name must be 1 to 100 characters")
	}
	hash, err := HashPassword(password)
	if err != nil {
		return accounts.SignUpOutcome{}, err
	}
	if s.Accounts == nil {
		return accounts.SignUpOutcome{}, errs.Unavailablef("sign-up is not configured on this deployment")
	}
	return s.Accounts.SignUp(ctx, accounts.NewSignUp{Name: name, Email: norm, PasswordHash: hash, Permissions: perms, Verified: verified})
}
