package store_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"conduit/internal/store"
)

func TestOAuthTokensAndLogins(t *testing.T) {
	ctx := context.Background()
	acct, err := st.EnsureHumanAccount(ctx, store.NewID("acct"), "oauth", 0)
	if err != nil {
		t.Fatal(err)
	}
	c, err := st.CreateOAuthClient(ctx, store.OAuthClient{ID: store.NewID("client"), Name: "c", RedirectURIs: []string{"https://a.example/cb"},
		GrantTypes: []string{"authorization_code"}, ResponseTypes: []string{"code"}, Scopes: []string{"pipelines:read"}, Metadata: []byte(`{}`)})
	if err != nil {
		t.Fatal(err)
	}
	tok := func(kind, sig string) store.OAuthToken {
		return store.OAuthToken{Kind: kind, Signature: sig, RequestID: "req-1", ClientID: c.ID, AccountID: acct.ID, Request: []byte(`{}`), ExpiresAt: time.Now().Add(time.Hour)}
	}
	if err := st.CreateOAuthToken(ctx, tok("refresh", "sig-r1")); err != nil {
		t.Fatal(err)
	}
	// A use wins once: the second finds it used.
	if ok, err := st.DeactivateOAuthToken(ctx, "refresh", "sig-r1"); !ok || err != nil {
		t.Fatalf("first use: %v %v", ok, err)
	}
	if ok, err := st.DeactivateOAuthToken(ctx, "refresh", "sig-r1"); ok || err != nil {
		t.Fatalf("second use: %v %v", ok, err)
	}
	if got, err := st.OAuthToken(ctx, "refresh", "sig-r1"); err != nil || got.Active {
		t.Fatalf("a used token: %+v %v", got, err)
	}
	// A rolled-back transaction leaves nothing.
	txCtx, err := st.OAuthBegin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.CreateOAuthToken(txCtx, tok("access", "sig-a1")); err != nil {
		t.Fatal(err)
	}
	if err := st.OAuthRollback(txCtx); err != nil {
		t.Fatal(err)
	}
	if _, err := st.OAuthToken(ctx, "access", "sig-a1"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("after rollback: %v", err)
	}
	// A committed one stays; revoking the grant removes its access tokens.
	txCtx, _ = st.OAuthBegin(ctx)
	if err := st.CreateOAuthToken(txCtx, tok("access", "sig-a2")); err != nil {
		t.Fatal(err)
	}
	if err := st.OAuthCommit(txCtx); err != nil || st.OAuthRollback(txCtx) != nil {
		t.Fatalf("commit: %v", err)
	}
	if err := st.DeleteOAuthGrant(ctx, "access", "req-1"); err != nil {
		t.Fatal(err)
	}
	if _, err := st.OAuthToken(ctx, "access", "sig-a2"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("after revoking the grant: %v", err)
	}

	// Logins: one per email; sessions expire; a new password ends them.
	l, err := st.CreateLogin(ctx, store.NewLogin{AccountID: acct.ID, Email: "a@oauth.test", PasswordHash: "h", Permissions: []string{}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.CreateLogin(ctx, store.NewLogin{AccountID: acct.ID, Email: "a@oauth.test", PasswordHash: "h", Permissions: []string{}}); !errors.Is(err, store.ErrEmailTaken) {
		t.Fatalf("same email twice: %v", err)
	}
	if err := st.CreateLoginSession(ctx, []byte("live"), l.ID, time.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if err := st.CreateLoginSession(ctx, []byte("dead"), l.ID, time.Now().Add(-time.Second)); err != nil {
		t.Fatal(err)
	}
	if got, _, err := st.LoginBySession(ctx, []byte("live")); err != nil || got.ID != l.ID {
		t.Fatalf("live session: %v", err)
	}
	if _, _, err := st.LoginBySession(ctx, []byte("dead")); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("expired session: %v", err)
	}
	if err := st.SetLoginPassword(ctx, l.ID, "h2"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := st.LoginBySession(ctx, []byte("live")); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("session after a new password: %v", err)
	}
}
