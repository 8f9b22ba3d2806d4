package accounts

import (
	"time"

	"conduit/internal/apikey"
	"conduit/internal/store"
)

// KeyRecord is an API key as its owner sees it; the secret appears only
// in the creation answer, as Key.
type KeyRecord struct {
	ID            string     `json:"id"`
	Name          string     `json:"name"`
	Permissions   []string   `json:"permissions" jsonschema:"the scopes the key holds"`
	Status        string     `json:"status" jsonschema:"active or inactive"`
	WalletAddress *string    `json:"walletAddress"`
	Prefix        string     `json:"prefix" jsonschema:"how the key is shown after creation"`
	CreatedAt     time.Time  `json:"createdAt"`
	UpdatedAt     time.Time  `json:"updatedAt"`
	LastUsedAt    *time.Time `json:"lastUsedAt"`
	Key           string     `json:"key,omitempty" jsonschema:"the secret: shown once, at creation; send it as Authorization: Bearer <key>"`
}

// Record is k's record, without its secret.
func Record(k store.APIKey) KeyRecord {
	return KeyRecord{ID: k.ID, Name: k.Name, Permissions: k.Permissions, Status: k.Status, WalletAddress: k.WalletAddress,
		Prefix: apikey.Display(k.Prefix), CreatedAt: k.CreatedAt, UpdatedAt: k.UpdatedAt, LastUsedAt: k.LastUsedAt}
}
