package app

import (
	"context"
	"strings"
	"testing"

	"github.com/gagliardetto/solana-go"

	"conduit/internal/x402"
)

// The Go payer builds on the challenge's extra.recentBlockhash when it
// carries one (asking no RPC), and says what is wrong when it is bad or
// when there is neither.
func TestRecentBlockhashSources(t *testing.T) {
	ctx := context.Background()
	want := solana.Hash{4, 2}
	offer := x402.PaymentRequirements{Extra: map[string]any{"recentBlockhash": want.String()}}
	if got, err := recentBlockhash(ctx, offer, "http://127.0.0.1:1"); err != nil || got != want {
		t.Fatalf("from the offer: %s %v", got, err)
	}
	offer.Extra["recentBlockhash"] = "not-base58!"
	if _, err := recentBlockhash(ctx, offer, ""); err == nil || !strings.Contains(err.Error(), "extra.recentBlockhash") {
		t.Fatalf("bad offer blockhash: %v", err)
	}
	if _, err := recentBlockhash(ctx, x402.PaymentRequirements{}, ""); err == nil || !strings.Contains(err.Error(), "-rpc") {
		t.Fatalf("no source: %v", err)
	}
	if _, err := recentBlockhash(ctx, x402.PaymentRequirements{}, "http://127.0.0.1:1"); err == nil || !strings.Contains(err.Error(), "CONDUIT_SOLANA_RPC") {
		t.Fatalf("unreachable RPC: %v", err)
	}
}
