package store_test

import (
	"context"
	"sync"
	"testing"

	"conduit/internal/store"
)

func intent(nonce, purpose string) store.PaymentIntent {
	return store.PaymentIntent{Network: "eip155:8453", Payer: "0xpayer", Nonce: nonce, Amount: 5_000_000,
		Asset: "0xasset", PayTo: "0xpayee", Resource: "/api/billing/credits/x402", Purpose: purpose}
}

// A payment is claimed before settling, once per authorization, and the
// claim is bound to its purchase.
func TestPaymentClaimSubmitSettle(t *testing.T) {
	ctx := context.Background()
	in := intent("0x01", "topup/wallet")
	p, err := st.ClaimPayment(ctx, in)
	if err != nil || p.Status != store.PaymentPending || !p.Answers(in) || p.Transaction != "" || p.SettledAt != nil {
		t.Fatalf("%+v %v", p, err)
	}
	if err := st.MarkPaymentSubmitted(ctx, in.Network, in.Payer, in.Nonce); err != nil {
		t.Fatal(err)
	}
	settled, err := st.SettlePayment(ctx, in.Network, in.Payer, in.Nonce, "0xabc")
	if err != nil || settled.Status != store.PaymentSettled || settled.Transaction != "0xabc" || settled.SettledAt == nil {
		t.Fatalf("%+v %v", settled, err)
	}
	// Settling again with the same transaction is a no-op; with another
	// one it is refused.
	if again, err := st.SettlePayment(ctx, in.Network, in.Payer, in.Nonce, "0xabc"); err != nil || !again.SettledAt.Equal(*settled.SettledAt) {
		t.Fatalf("%+v %v", again, err)
	}
	if _, err := st.SettlePayment(ctx, in.Network, in.Payer, in.Nonce, "0xdef"); err == nil {
		t.Fatal("a payment settled twice")
	}
	// A later claim of the same authorization gets the recorded row, which
	// answers only the same purchase on the same terms.
	for _, other := range []store.PaymentIntent{intent("0x01", "topup/acct_x"), func() store.PaymentIntent {
		o := in
		o.Amount = 20_000
		return o
	}(), func() store.PaymentIntent { o := in; o.Resource = "/api/x402/speech"; return o }()} {
		got, err := st.ClaimPayment(ctx, other)
		if err != nil || got.Purpose != "topup/wallet" || got.Answers(other) {
			t.Fatalf("%+v answers %+v (%v)", got, other, err)
		}
	}
	if got, _ := st.ClaimPayment(ctx, in); !got.Answers(in) || got.Status != store.PaymentSettled {
		t.Fatalf("%+v", got)
	}
	// A settled payment is never dropped.
	if err := st.DropPaymentIntent(ctx, in.Network, in.Payer, in.Nonce, in.Purpose); err != nil {
		t.Fatal(err)
	}
	if _, err := st.PaymentByAuthorization(ctx, in.Network, in.Payer, in.Nonce); err != nil {
		t.Fatalf("settled payment dropped: %v", err)
	}
	// One transaction cannot settle two authorizations.
	in2 := intent("0x02", "topup/wallet")
	if _, err := st.ClaimPayment(ctx, in2); err != nil {
		t.Fatal(err)
	}
	if _, err := st.SettlePayment(ctx, in2.Network, in2.Payer, in2.Nonce, "0xabc"); err == nil {
		t.Fatal("one transaction recorded for two authorizations")
	}
	// A refused claim is dropped, so the payment may come again.
	if err := st.DropPaymentIntent(ctx, in2.Network, in2.Payer, in2.Nonce, in2.Purpose); err != nil {
		t.Fatal(err)
	}
	if _, err := st.PaymentByAuthorization(ctx, in2.Network, in2.Payer, in2.Nonce); err != store.ErrNotFound {
		t.Fatalf("%v", err)
	}
}

// Concurrent claims of one authorization for different purchases: exactly
// one wins.
func TestPaymentClaimRace(t *testing.T) {
	ctx := context.Background()
	var wg sync.WaitGroup
	won := make(chan string, 10)
	for i := range 10 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			in := intent("0x99", "render/run-"+string(rune('a'+i)))
			p, err := st.ClaimPayment(ctx, in)
			if err != nil {
				t.Error(err)
				return
			}
			if p.Answers(in) {
				won <- in.Purpose
			}
		}()
	}
	wg.Wait()
	close(won)
	if n := len(won); n != 1 {
		t.Fatalf("%d claims won", n)
	}
}
