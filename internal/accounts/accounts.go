// Package accounts holds the rules of accounts and API keys: free credit for
// new accounts, key minting and validation, authentication of a presented
// bearer key, and credit-pack purchases. Storage is the store's job; HTTP is
// the frontend's.
package accounts

import (
	"context"
	"errors"
	"slices"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	"conduit/internal/apikey"
	"conduit/internal/errs"
	"conduit/internal/money"
	"conduit/internal/quota"
	"conduit/internal/store"
	"conduit/internal/ticket"
)

// FreeCredit is granted once to every new human account (spec §8), when
// its email is verified (SignUp, VerifyEmail) or an operator vouches for
// it.
const FreeCredit = 5 * money.USD

// Service applies the rules on top of the store.
type Service struct {
	Store *store.Store
	// Tokens, when set, resolves bearer values that are not API keys:
	// OAuth access tokens (internal/oauth). Nil: only API keys.
	Tokens TokenVerifier
	// BaseURL is the API's public address (a ledger page's nextUrl, a
	// verification link).
	BaseURL string
	// KeyLimit bounds the API keys an account holds when it mints them
	// through the API (quota.api_keys; 0: no limit). The operator's
	// commands are not bound.
	KeyLimit int64
	// VerifyLinks signs sign-up verification links (signup.secret); nil:
	// sign-up is off and says why (SignUpOff).
	VerifyLinks *ticket.Signer
	SignUpOff   error
	// Outbox starts the delivery of the messages a sign-up writes.
	Outbox Outbox
}

// TokenVerifier resolves an OAuth access token to its caller: valid,
// unexpired, unrevoked and issued for this service's resource. Anything
// else is ErrUnauthenticated; other errors mean the check itself failed
// (the database is down).
type TokenVerifier interface {
	VerifyAccessToken(ctx context.Context, token string) (Principal, error)
}

// grantError refuses a key that asked to give permissions it does not
// hold, or to change or delete a key holding some: missingPermissions
// lists them, sorted.
func grantError(missing []string, format string, args ...any) error {
	return errs.Forbiddenf(format, args...).With("missingPermissions", missing)
}

var (
	// ErrUnauthenticated: no key, an unknown or malformed key, an inactive
	// or deleted key. One error for all, so callers learn nothing about
	// which keys exist. The wording is the spec's.
	ErrUnauthenticated error = errs.Unauthorizedf("Invalid or expired credentials")
	// ErrNoCredentials: the request carried no bearer key at all.
	ErrNoCredentials error = errs.Unauthorizedf("missing API key: send Authorization: Bearer <key>")
)

// Principal is the authenticated caller.
type Principal struct {
	AccountID string
	// KeyID is the API key's id; empty for an OAuth access token.
	KeyID  string
	Scopes []string
	// OAuth is set when the caller presented an OAuth access token instead
	// of an API key (create_api_key is meant for such connections).
	OAuth *OAuthGrant
}

// OAuthGrant says which OAuth grant an access token belongs to.
type OAuthGrant struct {
	// ClientID is the registered client (the assistant) holding the token.
	ClientID string
	// GrantID names the grant: every token refreshed from the same
	// consent shares it, and revoking one revokes them all.
	GrantID string
	// LoginID is the human login that consented.
	LoginID string
	// Expires is when this access token stops working.
	Expires time.Time
}

// ViaOAuth reports whether the caller authenticated with an OAuth access
// token rather than an API key.
func (p Principal) ViaOAuth() bool { return p.OAuth != nil }

// Has reports whether the caller holds scope.
func (p Principal) Has(scope string) bool {
	for _, s := range p.Scopes {
		if s == scope {
			return true
		}
	}
	return false
}

// Lacking lists the scopes of want that p does not hold, sorted, without
// duplicates.
func (p Principal) Lacking(want []string) []string {
	var out []string
	for _, s := range want {
		if !p.Has(s) && !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	sort.Strings(out)
	return out
}

// CreateAccount opens a human account without an email (an operator's,
// `account create` without -email). With verified the operator vouches
// for it and its free credit is granted now; otherwise it has none: free
// credit follows a verified email (SignUp), and this account has none.
func (s *Service) CreateAccount(ctx context.Context, name string, verified bool) (store.Account, error) {
	return s.EnsureAccount(ctx, store.NewID("acct"), name, verified)
}

// EnsureAccount opens the account id if it does not exist (idempotent),
// with its free credit when verified (see CreateAccount).
func (s *Service) EnsureAccount(ctx context.Context, id, name string, verified bool) (store.Account, error) {
	name = strings.TrimSpace(name)
	if name == "" || utf8.RuneCountInString(name) > 100 {
		return store.Account{}, errs.Invalidf("account name must be 1 to 100 characters")
	}
	var credit money.Micros
	if verified {
		credit = FreeCredit
	}
	return s.Store.EnsureHumanAccount(ctx, id, name, credit)
}

// KeyRequest is what a caller sends to create a key.
type KeyRequest struct {
	Name          string
	Permissions   []string // nil: the default scopes
	WalletAddress *string
}

// CreateKey mints a key for the account and returns it with the plain
// secret, which is never stored or shown again. It is the operator's way
// (the CLI, the dev bootstrap): any permissions may be given.
func (s *Service) CreateKey(ctx context.Context, account string, r KeyRequest) (store.APIKey, string, error) {
	return s.createKey(ctx, account, r, nil)
}

// CreateKeyAs mints a key for the account of the key by, which can grant
// at most the permissions it holds itself: asking for more (the default
// scopes included, when by lacks them) is a Forbidden error naming what it
// lacks, and nothing is created.
func (s *Service) CreateKeyAs(ctx context.Context, by Principal, r KeyRequest) (store.APIKey, string, error) {
	return s.createKey(ctx, by.AccountID, r, &by)
}

func (s *Service) createKey(ctx context.Context, account string, r KeyRequest, by *Principal) (store.APIKey, string, error) {
	name, err := checkKeyName(r.Name)
	if err != nil {
		return store.APIKey{}, "", err
	}
	perms := apikey.DefaultScopes()
	if r.Permissions != nil {
		if perms, err = apikey.NormalizeScopes(r.Permissions); err != nil {
			return store.APIKey{}, "", errs.Invalidf("%s", err)
		}
	}
	if err := checkWallet(r.WalletAddress); err != nil {
		return store.APIKey{}, "", err
	}
	if by != nil {
		if missing := by.Lacking(perms); len(missing) > 0 {
			what := "permissions"
			if r.Permissions == nil {
				what = "the default permissions"
			}
			return store.APIKey{}, "", grantError(missing, "this API key cannot grant %s it does not hold: %s; a key can grant at most the permissions it holds", what, strings.Join(missing, ", "))
		}
	}
	var limit int64
	if by != nil {
		limit = s.KeyLimit
	}
	// The count and the insert share the slot's transaction: two keys
	// minted at once cannot both take the last place.
	slot, err := s.Store.TakeSlot(ctx, account, quota.APIKeys, limit)
	if err != nil {
		return store.APIKey{}, "", err
	}
	defer slot.Release(ctx)
	m, err := apikey.Mint()
	if err != nil {
		return store.APIKey{}, "", err
	}
	k, err := slot.CreateAPIKey(ctx, store.NewAPIKey{
		AccountID: account, Name: name, Prefix: m.Prefix, Hash: m.Hash, Permissions: perms, WalletAddress: r.WalletAddress,
	})
	return k, m.Plain, err
}

// KeyPatch is a partial update of a key; nil fields stay as they are.
type KeyPatch struct {
	Name          *string
	Permissions   []string
	Status        *string
	WalletAddress **string
}

// UpdateKey validates and applies a patch on behalf of the key by. A key
// can give at most the permissions it holds, so it cannot widen any key,
// itself included; and it can change only keys whose permissions it holds
// all of (re-activating a stronger key would hand out what it lacks).
// Either refusal is Forbidden (grantError) and changes nothing.
func (s *Service) UpdateKey(ctx context.Context, by Principal, id string, p KeyPatch) (store.APIKey, error) {
	patch := store.APIKeyPatch{Within: nonNil(by.Scopes)}
	if p.Name != nil {
		name, err := checkKeyName(*p.Name)
		if err != nil {
			return store.APIKey{}, err
		}
		patch.Name = &name
	}
	if p.Permissions != nil {
		perms, err := apikey.NormalizeScopes(p.Permissions)
		if err != nil {
			return store.APIKey{}, errs.Invalidf("%s", err)
		}
		if missing := by.Lacking(perms); len(missing) > 0 {
			return store.APIKey{}, grantError(missing, "this API key cannot grant permissions it does not hold: %s; a key can grant at most the permissions it holds", strings.Join(missing, ", "))
		}
		patch.Permissions = perms
	}
	if p.Status != nil {
		if *p.Status != "active" && *p.Status != "inactive" {
			return store.APIKey{}, errs.Invalidf("status must be active or inactive, got %q", *p.Status)
		}
		patch.Status = p.Status
	}
	if p.WalletAddress != nil {
		if err := checkWallet(*p.WalletAddress); err != nil {
			return store.APIKey{}, err
		}
		patch.Wallet = p.WalletAddress
	}
	k, err := s.Store.UpdateAPIKey(ctx, by.AccountID, id, patch)
	if errors.Is(err, store.ErrKeyOutranks) {
		return k, s.outranked(ctx, by, id, "change")
	}
	return k, err
}

// DeleteKey revokes one of the account's keys for good on behalf of the
// key by, which may delete only keys whose permissions it holds all of.
func (s *Service) DeleteKey(ctx context.Context, by Principal, id string) error {
	err := s.Store.DeleteAPIKey(ctx, by.AccountID, id, nonNil(by.Scopes))
	if errors.Is(err, store.ErrKeyOutranks) {
		return s.outranked(ctx, by, id, "delete")
	}
	return err
}

// outranked explains a refused change to a key holding more than by.
func (s *Service) outranked(ctx context.Context, by Principal, id, verb string) error {
	k, err := s.Store.APIKey(ctx, by.AccountID, id)
	if err != nil {
		return err
	}
	missing := by.Lacking(k.Permissions)
	return grantError(missing, "this API key cannot %s a key that holds permissions it does not hold: %s", verb, strings.Join(missing, ", "))
}

// nonNil makes "no scopes at all" a limit too (nil means no limit).
func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// Keys are the account's API keys.
func (s *Service) Keys(ctx context.Context, account string) ([]store.APIKey, error) {
	return s.Store.APIKeys(ctx, account)
}

// Key is one of the account's API keys (NotFound for another's).
func (s *Service) Key(ctx context.Context, account, id string) (store.APIKey, error) {
	return s.Store.APIKey(ctx, account, id)
}

// Authenticate resolves an Authorization header value to its caller.
func (s *Service) Authenticate(ctx context.Context, authorization string) (Principal, error) {
	scheme, token, ok := strings.Cut(strings.TrimSpace(authorization), " ")
	if authorization == "" {
		return Principal{}, ErrNoCredentials
	}
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return Principal{}, ErrUnauthenticated
	}
	token = strings.TrimSpace(token)
	prefix, secret, err := apikey.Split(token)
	if err != nil {
		// Not shaped like an API key: an OAuth access token, if anything.
		if s.Tokens != nil && token != "" {
			return s.Tokens.VerifyAccessToken(ctx, token)
		}
		return Principal{}, ErrUnauthenticated
	}
	k, hash, err := s.Store.KeyByPrefix(ctx, prefix)
	if errors.Is(err, store.ErrNotFound) {
		return Principal{}, ErrUnauthenticated
	}
	if err != nil {
		return Principal{}, err
	}
	if !apikey.Matches(secret, hash) || k.Status != "active" {
		return Principal{}, ErrUnauthenticated
	}
	// last_used_at is kept to the minute: a key used within the last one
	// (as the row just read says) needs no write.
	if k.LastUsedAt == nil || time.Since(*k.LastUsedAt) >= time.Minute {
		_ = s.Store.TouchAPIKey(ctx, k.ID)
	}
	return Principal{AccountID: k.AccountID, KeyID: k.ID, Scopes: k.Permissions}, nil
}

// Packs are the dashboard's credit packs (spec §8): price paid → credit
// granted.
var Packs = map[money.Micros]money.Micros{
	10 * money.USD: 10 * money.USD,
	25 * money.USD: 25 * money.USD,
	50 * money.USD: 52*money.USD + money.Cents(50),
}

// RecordPack credits a purchased pack once per payment reference (the card
// processor's payment id): recording the same reference again is reported
// as a duplicate and grants nothing.
func (s *Service) RecordPack(ctx context.Context, account string, paid money.Micros, reference string) (store.GrantResult, error) {
	credit, ok := Packs[paid]
	if !ok {
		return store.GrantResult{}, errs.Invalidf("no credit pack costs %s USD (packs: 10, 25, 50)", paid)
	}
	reference = strings.TrimSpace(reference)
	if reference == "" {
		return store.GrantResult{}, errs.Invalidf("a pack purchase needs its payment reference")
	}
	return s.Store.Grant(ctx, account, store.EntryPack, credit, "pack/"+reference, "pack "+paid.String()+" USD")
}

func checkKeyName(name string) (string, error) {
	name = strings.TrimSpace(name)
	if name == "" {
		return "", errs.Invalidf("name must not be empty")
	}
	if utf8.RuneCountInString(name) > 100 {
		return "", errs.Invalidf("name must be at most 100 characters")
	}
	return name, nil
}

// checkWallet accepts an EVM (0x + 40 hex) or a base58 Solana address.
func checkWallet(w *string) error {
	if w == nil || *w == "" {
		return nil
	}
	a := *w
	if strings.HasPrefix(a, "0x") {
		if len(a) != 42 || strings.Trim(strings.ToLower(a[2:]), "0123456789abcdef") != "" {
			return errs.Invalidf("walletAddress %q is not a 0x address of 40 hex digits", a)
		}
		return nil
	}
	if len(a) < 32 || len(a) > 44 || strings.Trim(a, "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz") != "" {
		return errs.Invalidf("walletAddress %q is neither a 0x address nor a base58 address", a)
	}
	return nil
}
