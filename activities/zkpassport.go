package activities

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"go.temporal.io/sdk/temporal"

	"conduit/internal/errs"
	"conduit/internal/store"
)

// ZKPassport runs a zkPassport request's side effects
// (workflows/zkpassport.go).
type ZKPassport struct {
	Store *store.Store
}

// ZKPassportOpen is a request to admit: its row, and the bound on its
// account's open requests at the time it was made.
type ZKPassportOpen struct {
	ID        string          `json:"id"`
	AccountID string          `json:"accountId"`
	Domain    string          `json:"domain"`
	Scope     string          `json:"scope"`
	Name      string          `json:"name"`
	Logo      string          `json:"logo,omitempty"`
	Purpose   string          `json:"purpose"`
	Mode      string          `json:"mode"`
	Query     json.RawMessage `json:"query"`
	CreatedAt time.Time       `json:"createdAt"`
	ExpiresAt time.Time       `json:"expiresAt"`
	MaxOpen   int             `json:"maxOpen"`
}

// ErrZKPassportRefused types an admission refused for the account's bound.
const ErrZKPassportRefused = "zkpassport_refused"

// Open writes the request unless its account holds its bound of open
// requests (a non-retryable refusal the workflow answers with).
func (a *ZKPassport) Open(ctx context.Context, in ZKPassportOpen) error {
	err := a.Store.OpenZKPassportRequest(ctx, store.ZKPassportRequest{ID: in.ID, AccountID: in.AccountID, Domain: in.Domain,
		Scope: in.Scope, Name: in.Name, Logo: in.Logo, Purpose: in.Purpose, Mode: in.Mode, Query: in.Query,
		CreatedAt: in.CreatedAt, ExpiresAt: in.ExpiresAt}, in.MaxOpen)
	var e *errs.Error
	if errors.As(err, &e) && e.Kind == errs.TooManyRequests {
		// The quota's use and limit ride along for the refusal's body.
		return temporal.NewNonRetryableApplicationError(e.Msg, ErrZKPassportRefused, nil, e.Extra["used"], e.Extra["limit"])
	}
	return err
}

// Expire closes the request if it is still open (its expiry passed).
func (a *ZKPassport) Expire(ctx context.Context, id string) error {
	return a.Store.ExpireZKPassportRequest(ctx, id, time.Now().UTC())
}
