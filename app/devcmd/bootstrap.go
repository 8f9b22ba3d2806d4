package devcmd

import (
	"context"
	"crypto/rand"
	"errors"
	"os"
	"path/filepath"
	"strings"

	"conduit/internal/accounts"
	"conduit/internal/apikey"
	"conduit/internal/humans"
)

// DevAccountID is the account the dev command creates for its user.
const DevAccountID = "acct_dev"

// KeyFile is where the dev command keeps the dev account's all-scopes key,
// relative to the data folder, so scripts can read it.
const KeyFile = "dev-api-key"

// DevEmail signs in to the dev account (the consent page, the dashboard).
const DevEmail = "dev@conduit.local"

// PasswordFile is where the dev command keeps the dev login's password,
// relative to the data folder.
const PasswordFile = "dev-login-password"

// bootstrapLogin makes sure DevEmail signs in to the dev account with the
// password kept in PasswordFile (a random one, made on first start), and
// returns that password. Whatever the login's password was, the file's
// wins: the file is the dev's record of it.
func bootstrapLogin(ctx context.Context, svc *humans.Service, dataDir string) (string, error) {
	password, err := kept(dataDir, PasswordFile, func() (string, error) { return rand.Text(), nil })
	if err != nil {
		return "", err
	}
	if _, err := svc.EnsureLogin(ctx, DevAccountID, DevEmail, password, apikey.AllScopes()); err != nil {
		return "", err
	}
	return password, nil
}

// bootstrap makes sure the dev account exists and that the key file holds a
// working all-scopes key, minting one when the file is missing or stale.
func bootstrap(ctx context.Context, svc *accounts.Service, dataDir string) (string, error) {
	if _, err := svc.EnsureAccount(ctx, DevAccountID, "dev", true); err != nil {
		return "", err
	}
	path := filepath.Join(dataDir, KeyFile)
	if b, err := os.ReadFile(path); err == nil {
		key := strings.TrimSpace(string(b))
		p, err := svc.Authenticate(ctx, "Bearer "+key)
		if err == nil && p.AccountID == DevAccountID {
			return key, nil
		}
		if err != nil && !errors.Is(err, accounts.ErrUnauthenticated) {
			return "", err
		}
	}
	_, plain, err := svc.CreateKey(ctx, DevAccountID, accounts.KeyRequest{Name: "dev (all scopes)", Permissions: apikey.AllScopes()})
	if err != nil {
		return "", err
	}
	if err := os.WriteFile(path, []byte(plain+"\n"), 0o600); err != nil {
		return "", err
	}
	return plain, nil
}
