package activities

import (
	"context"

	"go.temporal.io/sdk/temporal"

	"conduit/internal/accounts"
	"conduit/internal/errs"
	"conduit/internal/money"
	"conduit/internal/store"
)

// Packs grants credit packs bought by card.
type Packs struct {
	Accounts *accounts.Service
	Store    *store.Store
}

// PackInput is a paid checkout, as our own record of it says.
type PackInput struct {
	SessionID string
	AccountID string
	Paid      money.Micros
}

// PackOutcome is what the grant did.
type PackOutcome struct {
	Credit    money.Micros
	Balance   money.Micros
	Duplicate bool
}

// Record grants the pack once per checkout (the ledger's idempotency key
// pack/checkout/<session id>) and marks the checkout complete; run again,
// it grants nothing more.
func (a *Packs) Record(ctx context.Context, in PackInput) (PackOutcome, error) {
	res, err := a.Accounts.RecordPack(ctx, in.AccountID, in.Paid, "checkout/"+in.SessionID)
	if bad, ok := errs.As(err); ok && bad.Kind == errs.Invalid {
		return PackOutcome{}, temporal.NewNonRetryableApplicationError(bad.Msg, ErrPermanent, err)
	}
	if err != nil {
		return PackOutcome{}, err
	}
	if err := a.Store.CompleteCheckoutSession(ctx, in.SessionID); err != nil {
		return PackOutcome{}, err
	}
	return PackOutcome{Credit: accounts.Packs[in.Paid], Balance: res.Balance, Duplicate: res.Duplicate}, nil
}
