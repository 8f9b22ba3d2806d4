package payments

import (
	"context"
	"errors"

	"conduit/internal/money"
	"conduit/internal/store"
	"conduit/internal/telemetry"
	"conduit/internal/x402"
)

// MessageAlreadyUsed refuses a top-up paid with an authorization that was
// already spent, in the spec's words.
const MessageAlreadyUsed = "invalid_payload: authorization nonce already submitted"

// Presented is a payment taken from a request: decoded, answering one of
// the challenge's offers, naming the resource being bought (if it names
// one) and with a verified signature. Nothing from a request is keyed on
// before this.
type Presented struct {
	x402.Verified
	Payload      x402.PaymentPayload
	Requirements x402.PaymentRequirements
}

// Refused is why a presented payment is not taken; its text is the 402's
// error field.
type Refused struct{ Msg string }

func (r *Refused) Error() string { return r.Msg }

// Redeemed is an authentic payment that another purchase claimed first:
// pay-per-call answers 409 PAYMENT_ALREADY_REDEEMED, top-up 402 with
// MessageAlreadyUsed. Transaction is the settlement, once there is one.
type Redeemed struct{ Transaction string }

func (r *Redeemed) Error() string { return "payment already redeemed" }

// Purchase is what a presented payment is to buy.
type Purchase struct {
	Amount   money.Micros
	Resource string
	// Purpose names the purchase: render/<runId>, topup/<account>.
	Purpose string
}

// Take reads a PAYMENT-SIGNATURE header against the challenge it answers
// and the purchase it is for. Its errors are *Refused (answer 402 with the
// challenge), *Redeemed, or a failure to read the payment records. A
// payment's record is consulted only once its signature is authentic;
// then a payment recorded for another purchase is Redeemed even when it
// was rewritten to look like this one.
func (s *Service) Take(ctx context.Context, header string, challenge x402.PaymentRequired, buy Purchase) (Presented, error) {
	if header == "" {
		return Presented{}, refusedFor("missing", "PAYMENT-SIGNATURE header is required")
	}
	p, err := x402.DecodePaymentPayload(header)
	if err != nil {
		return Presented{}, refusedFor("malformed", err.Error())
	}
	req, err := x402.Match(p, challenge.Accepts)
	if err != nil {
		return Presented{}, refusedFor("no_matching_requirements", "No matching payment requirements")
	}
	v, terms := x402.VerifySignature(p, req)
	if !v.Authentic() {
		return Presented{}, refusal(terms)
	}
	rec, err := s.store.PaymentByAuthorization(ctx, v.Network, v.Payer, v.ID)
	switch {
	case err == nil && !rec.Answers(Intent(v, req, buy.Amount, buy.Resource, buy.Purpose)):
		telemetry.PaymentRefused("verify", "already_redeemed")
		return Presented{}, &Redeemed{Transaction: rec.Transaction}
	case err != nil && !errors.Is(err, store.ErrNotFound):
		return Presented{}, err
	case terms != nil:
		return Presented{}, refusal(terms)
	}
	if err := x402.CheckResource(p, challenge.Resource.URL); err != nil {
		return Presented{}, refusal(err)
	}
	telemetry.PaymentVerified()
	return Presented{Verified: v, Payload: p, Requirements: req}, nil
}

// refusedFor counts a refusal at the API by reason and returns it.
func refusedFor(reason, msg string) *Refused {
	telemetry.PaymentRefused("verify", reason)
	return &Refused{msg}
}

func refusal(err error) *Refused {
	var r *x402.Refusal
	if errors.As(err, &r) {
		return refusedFor(r.Reason, "invalid_payload: "+r.Msg)
	}
	return refusedFor("invalid_payload", "invalid_payload: "+err.Error())
}

// Intent is what a verified payment is recorded as when it pays for
// purpose (see store.PaymentIntent).
func Intent(v x402.Verified, req x402.PaymentRequirements, amount money.Micros, resource, purpose string) store.PaymentIntent {
	return store.PaymentIntent{
		Network: v.Network, Payer: v.Payer, Nonce: v.ID, Amount: amount,
		Asset: req.Asset, PayTo: req.PayTo, Resource: resource, Purpose: purpose,
	}
}
