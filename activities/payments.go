package activities

import (
	"context"
	"errors"
	"fmt"

	"go.temporal.io/sdk/temporal"

	"conduit/internal/money"
	"conduit/internal/payments"
	"conduit/internal/store"
	"conduit/internal/telemetry"
	"conduit/internal/x402"
)

// Payments settles x402 payments and credits what they bought.
type Payments struct {
	Store       *store.Store
	Facilitator x402.Facilitator
}

// SettleInput is a payment whose signature the frontend verified, the
// server's requirements it answers, and the one purchase it pays for.
type SettleInput struct {
	Payment      x402.PaymentPayload
	Requirements x402.PaymentRequirements
	Amount       money.Micros
	Resource     string
	// Purpose names the purchase: render/<runId>, topup/<accountId> or
	// topup/wallet. A settlement answers only its own purpose.
	Purpose string
}

// SettleOutcome is a settlement or a refusal (refusals are answers, not
// errors: retrying cannot change them).
type SettleOutcome struct {
	Success     bool
	Reason      string
	Message     string
	Transaction string
	Payer       string
	// AlreadyRedeemed: the payment was claimed by another purchase first;
	// Transaction is its settlement when it has one yet.
	AlreadyRedeemed bool
	// Claimed (Claim only): the intent is recorded for this purchase and
	// waits to be settled.
	Claimed bool `json:",omitempty"`
}

// ErrUnconfirmed types the error of a settlement whose outcome the chain
// could not confirm yet (the facilitator's answer was lost and no finder
// can look it up); retrying asks again.
const ErrUnconfirmed = "settlement_unconfirmed"

// Claim records the payment's intent for its purchase, the first step of
// a top-up (a local activity: one short write). It answers at once what
// the record already settles — the payment settled for this purchase, or
// claimed by another — and otherwise says Claimed: Settle takes it on.
func (a *Payments) Claim(ctx context.Context, in SettleInput) (SettleOutcome, error) {
	v, _, out, done, err := a.claim(ctx, in)
	if err != nil || done {
		return out, err
	}
	return SettleOutcome{Claimed: true, Payer: x402.DisplayAddress(v.Network, v.Payer)}, nil
}

// claim verifies the payment and records its intent; done says the record
// already answers (out), so nothing is to be settled.
func (a *Payments) claim(ctx context.Context, in SettleInput) (v x402.Verified, rec store.Payment, out SettleOutcome, done bool, err error) {
	v, err = x402.VerifySignature(in.Payment, in.Requirements)
	if err != nil {
		out = refused(err)
		telemetry.PaymentRefused("settle", out.Reason)
		return v, rec, out, true, nil
	}
	intent := payments.Intent(v, in.Requirements, in.Amount, in.Resource, in.Purpose)
	if rec, err = a.Store.ClaimPayment(ctx, intent); err != nil {
		return v, rec, SettleOutcome{}, true, err
	}
	payer := x402.DisplayAddress(v.Network, v.Payer)
	switch {
	case !rec.Answers(intent):
		return v, rec, SettleOutcome{AlreadyRedeemed: true, Reason: x402.ReasonNonceUsed, Message: payments.MessageAlreadyUsed, Transaction: rec.Transaction, Payer: payer}, true, nil
	case rec.Status == store.PaymentSettled:
		return v, rec, SettleOutcome{Success: true, Transaction: rec.Transaction, Payer: payer}, true, nil
	}
	return v, rec, SettleOutcome{}, false, nil
}

// Settle settles a payment once for its purchase, crash-safely: the intent
// is recorded before the facilitator is asked, marked submitted right
// before, and completed with the transaction after. A retry that finds its
// own intent submitted asks the chain whether the payment was settled
// (reconciliation) before settling again, so a settlement whose answer was
// lost is found instead of refused as "nonce already used". A payment
// already claimed by another purchase is refused as already redeemed.
func (a *Payments) Settle(ctx context.Context, in SettleInput) (SettleOutcome, error) {
	v, rec, out, done, err := a.claim(ctx, in)
	if err != nil || done {
		return out, err
	}
	payer := x402.DisplayAddress(v.Network, v.Payer)
	// Submitted before: an earlier attempt may have settled it and died
	// before recording; settling again then reports the nonce used, and
	// the chain says where it went.
	resubmitted := rec.Status == store.PaymentSubmitted
	if err := a.Store.MarkPaymentSubmitted(ctx, v.Network, v.Payer, v.ID); err != nil {
		return SettleOutcome{}, err
	}
	resp, err := a.Facilitator.Settle(ctx, in.Payment, in.Requirements)
	if err != nil {
		return SettleOutcome{}, err // the intent stays submitted: the retry reconciles
	}
	if resp.Success {
		return a.settled(ctx, v, resp.Transaction)
	}
	// A refusal may hide this payment's own earlier settlement: the spent
	// nonce (or Solana's duplicate) says so outright, and a resubmission
	// can be refused for another reason first — Solana refuses a
	// transaction whose blockhash aged out before it looks for the
	// duplicate. Either way the chain says where the payment went.
	if alreadyUsed(resp.ErrorReason) || resubmitted {
		// The exact authorization reaching our payee is this payment,
		// whoever sent the transaction: find it and take it as settled.
		finder, ok := a.Facilitator.(x402.SettlementFinder)
		if !ok && resubmitted && alreadyUsed(resp.ErrorReason) {
			telemetry.PaymentUnconfirmed()
			return SettleOutcome{}, temporal.NewApplicationError("the facilitator reports the payment used and nothing here can confirm where", ErrUnconfirmed)
		}
		if ok {
			found, settled, err := finder.FindSettlement(ctx, in.Payment, in.Requirements)
			if err != nil {
				return SettleOutcome{}, fmt.Errorf("reconciling the payment with the chain: %w", err)
			}
			if settled {
				telemetry.PaymentReconciled()
				return a.settled(ctx, v, found.Transaction)
			}
		}
	}
	// A refusal: forget the claim, since it may depend on chain state (an
	// unfunded wallet can be funded and pay again).
	if err := a.Store.DropPaymentIntent(ctx, v.Network, v.Payer, v.ID, in.Purpose); err != nil {
		return SettleOutcome{}, err
	}
	telemetry.PaymentRefused("settle", resp.ErrorReason)
	out = SettleOutcome{Reason: resp.ErrorReason, Message: resp.ErrorMessage, Payer: payer}
	switch {
	case alreadyUsed(resp.ErrorReason):
		out.Message = payments.MessageAlreadyUsed
	case out.Message == "":
		out.Message = "invalid_payload: " + resp.ErrorReason
	}
	return out, nil
}

func (a *Payments) settled(ctx context.Context, v x402.Verified, tx string) (SettleOutcome, error) {
	if _, err := a.Store.SettlePayment(ctx, v.Network, v.Payer, v.ID, tx); err != nil {
		return SettleOutcome{}, err
	}
	telemetry.PaymentSettled()
	return SettleOutcome{Success: true, Transaction: tx, Payer: x402.DisplayAddress(v.Network, v.Payer)}, nil
}

// alreadyUsed says a refusal means the authorization was spent.
func alreadyUsed(reason string) bool {
	return reason == x402.ReasonNonceUsed || reason == x402.ReasonSVMDuplicate
}

func refused(err error) SettleOutcome {
	var r *x402.Refusal
	if errors.As(err, &r) {
		return SettleOutcome{Reason: r.Reason, Message: "invalid_payload: " + r.Msg}
	}
	return SettleOutcome{Reason: x402.ReasonInvalidPayload, Message: "invalid_payload: " + err.Error()}
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
		acct, err := a.Store.WalletAccount(ctx, in.Network, x402.NormalizeAddress(in.Network, in.Payer))
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
