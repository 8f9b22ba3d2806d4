package tools

import (
	"context"

	"conduit/internal/accounts"
	"conduit/internal/payments"
)

func (t *toolset) getCreditBalance(ctx context.Context, c *Call, _ NoArgs) (payments.Balance, error) {
	return t.Payments.Balance(ctx, t.Store, c.Principal.AccountID, t.BaseURL, t.TopUpURL)
}

// CreateKeyArgs are create_api_key's arguments.
type CreateKeyArgs struct {
	Name          string   `json:"name" jsonschema:"what the key is for, 1 to 100 characters"`
	Permissions   []string `json:"permissions,omitempty" jsonschema:"the scopes the key gets, at most those of this connection (default: pipelines:read and pipelines:run)"`
	WalletAddress *string  `json:"walletAddress,omitempty" jsonschema:"a wallet (0x… or base58) to associate with the key"`
}

// createAPIKey mints a key with accounts' subset rule: a caller grants at
// most the scopes it holds.
func (t *toolset) createAPIKey(ctx context.Context, c *Call, in CreateKeyArgs) (accounts.KeyRecord, error) {
	k, plain, err := t.Accounts.CreateKeyAs(ctx, c.Principal, accounts.KeyRequest{Name: in.Name, Permissions: in.Permissions, WalletAddress: in.WalletAddress})
	if err != nil {
		return accounts.KeyRecord{}, err
	}
	out := accounts.Record(k)
	out.Key = plain
	return out, nil
}
