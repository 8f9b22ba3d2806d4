package activities

import (
	"context"
	"errors"

	"conduit/internal/accounts"
	"conduit/internal/money"
	"conduit/internal/store"
	"conduit/internal/x402"
)

// Payments settles x402 payments and credits what they bought.
type Payments struct {
	Store       *store.Store
	Facilitator x402.Facilitator
}

// SettleInput is a verified-shape payment and the server's requirements.
type SettleInput struct {
	Payment      x402.PaymentPayload
	Requirements x402.PaymentRequirements
	Amount       money.Micros
	Resource     string
}

// SettleOutcome is a settlement or a refusal (refusals are answers, not
// errors: retrying cannot change them).
type SettleOutcome struct {
	Success     bool
	Reason      string
	Message     string
	Transaction string
	Payer       string
}

// Settle settles once: an authorization already recorded answers with its
// recorded settlement (an activity retry after the chain accepted it), and
// a new settlement is recorded before it is reported.
func (a *Payments) Settle(ctx context.Context, in SettleInput) (SettleOutcome, error) {
	payer, nonce, err := x402.Identify(in.Payment)
	if err != nil {
		return SettleOutcome{Reason: x402.ReasonInvalidPayload, Message: "invalid_payload: " + err.Error()}, nil
	}
	network := in.Requirements.Network
	if p, err := a.Store.PaymentByAuthorization(ctx, network, payer, nonce); err == nil {
		return SettleOutcome{Success: true, Transaction: p.Transaction, Payer: p.Payer}, nil
	} else if !errors.Is(err, store.ErrNotFound) {
		return SettleOutcome{}, err
	}
	resp, err := a.Facilitator.Settle(ctx, in.Payment, in.Requirements)
	if err != nil {
		return SettleOutcome{}, err
	}
	if !resp.Success {
		msg := resp.ErrorMessage
		if msg == "" {
			msg = "invalid_payload: " + resp.ErrorReason
		}
		return SettleOutcome{Reason: resp.ErrorReason, Message: msg, Payer: resp.Payer}, nil
	}
	if _, err := a.Store.RecordPayment(ctx, store.Payment{
		Network: network, Transaction: resp.Transaction, Payer: payer, Nonce: nonce, Amount: in.Amount, Resource: in.Resource,
	}); err != nil {
		return SettleOutcome{}, err
	}
	return SettleOutcome{Success: true, Transaction: resp.Transaction, Payer: resp.Payer}, nil
}

// GrantInput credits a settled top-up.
type GrantInput struct {
	// AccountID is the bearer's account; empty credits the wallet account
	// of (Network, Payer).
	AccountID   string
	Network     string
	Payer       string
	Transaction string
	Amount      money.Micros
}

// GrantOutcome is the credited account and its balance.
type GrantOutcome struct {
	AccountID string
	Balance   money.Micros
	Duplicate bool
}

// Grant credits once per settled transaction.
func (a *Payments) Grant(ctx context.Context, in GrantInput) (GrantOutcome, error) {
	account := in.AccountID
	if account == "" {
		acct, err := a.Store.WalletAccount(ctx, in.Network, x402.NormalizeAddress(in.Network, in.Payer), accounts.FreeCredit)
		if err != nil {
			return GrantOutcome{}, err
		}
		account = acct.ID
	}
	res, err := a.Store.Grant(ctx, account, store.EntryTopUp, in.Amount, "topup/"+in.Network+"/"+in.Transaction, "x402 top-up")
	if err != nil {
		return GrantOutcome{}, err
	}
	return GrantOutcome{AccountID: account, Balance: res.Balance, Duplicate: res.Duplicate}, nil
}
