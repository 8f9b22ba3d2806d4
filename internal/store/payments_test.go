package store_test

import (
	"context"
	"testing"

	"conduit/internal/store"
)

func TestPaymentsAreRecordedOncePerAuthorization(t *testing.T) {
	ctx := context.Background()
	p := store.Payment{Network: "eip155:8453", Transaction: "0xabc", Payer: "0xpayer", Nonce: "0x01", Amount: 5_000_000, Resource: "/api/billing/credits/x402"}
	first, err := st.RecordPayment(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	again, err := st.RecordPayment(ctx, p)
	if err != nil || again.SettledAt != first.SettledAt || again.Transaction != "0xabc" {
		t.Fatalf("%+v %v", again, err)
	}
	got, err := st.PaymentByAuthorization(ctx, "eip155:8453", "0xpayer", "0x01")
	if err != nil || got.Amount != 5_000_000 {
		t.Fatalf("%+v %v", got, err)
	}
	if _, err := st.PaymentByAuthorization(ctx, "eip155:8453", "0xpayer", "0x02"); err != store.ErrNotFound {
		t.Fatalf("%v", err)
	}
	// The same transaction cannot be claimed by another authorization.
	p.Nonce = "0x03"
	if _, err := st.RecordPayment(ctx, p); err == nil {
		t.Fatal("one transaction recorded for two authorizations")
	}
}
