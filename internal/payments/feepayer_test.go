package payments

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gagliardetto/solana-go"

	"conduit/app/apptest/wait"
	"conduit/internal/config"
)

// The hosted facilitator's Solana fee payer comes from its /supported, at
// start-up and again on every refresh; a failed read keeps the last one,
// and without any the Solana network is not offered.
func TestSolanaFeePayerFromSupported(t *testing.T) {
	const network = "solana:EtWTRABZaYq6iMfeYKouRu166VU2xqa1"
	a, b := solana.NewWallet().PublicKey().String(), solana.NewWallet().PublicKey().String()
	var feePayer atomic.Value // string; "" answers 500
	feePayer.Store(a)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fp := feePayer.Load().(string)
		if r.URL.Path != "/supported" || fp == "" {
			http.Error(w, "down", http.StatusInternalServerError)
			return
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"kinds": []any{
			map[string]any{"x402Version": 2, "scheme": "exact", "network": "eip155:84532"},
			map[string]any{"x402Version": 2, "scheme": "exact", "network": network, "extra": map[string]any{"feePayer": fp}},
		}, "extensions": []string{}, "signers": map[string]any{}})
	}))
	defer srv.Close()
	defer func(d time.Duration) { FeePayerRefresh = d }(FeePayerRefresh)
	FeePayerRefresh = 20 * time.Millisecond

	cfg := config.X402{Enabled: true, Network: "eip155:84532", Facilitator: srv.URL, PayTo: "0x0000000000000000000000000000000000000001",
		Asset: "0x036CbD53842c5426634e7929541eC2318f3dCF7e", TopUpUSD: "5", SolanaNetwork: network,
		SolanaPayTo: solana.NewWallet().PublicKey().String(), SolanaAsset: solana.NewWallet().PublicKey().String()}
	offered := func(s *Service) string {
		o := s.Offers()
		if len(o) < 2 {
			return ""
		}
		fp, _ := o[1].Extra["feePayer"].(string)
		return fp
	}
	eventually := func(s *Service, want string) {
		t.Helper()
		wait.Eventually(t, 5*time.Second, "the fee payer "+want, func() error {
			if got := offered(s); got != want {
				return fmt.Errorf("offered %q", got)
			}
			return nil
		})
	}

	s, err := New(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if got := offered(s); got != a {
		t.Fatalf("at start-up the fee payer is %q, want /supported's %q", got, a)
	}
	feePayer.Store(b) // rotated
	eventually(s, b)
	feePayer.Store("") // the facilitator is down: the last one stands
	time.Sleep(5 * FeePayerRefresh)
	if got := offered(s); got != b {
		t.Fatalf("after a failed refresh the fee payer is %q, want %q", got, b)
	}

	// Down at start-up: the configured key stands in, or no Solana offer.
	cfg.SolanaFeePayer = a
	s2, _ := New(cfg, nil)
	defer s2.Close()
	if got := offered(s2); got != a {
		t.Fatalf("fallback fee payer %q", got)
	}
	cfg.SolanaFeePayer = ""
	s3, _ := New(cfg, nil)
	defer s3.Close()
	if o := s3.Offers(); len(o) != 1 || o[0].Network != "eip155:84532" {
		t.Fatalf("without a fee payer: %+v", o)
	}
	feePayer.Store(a) // back: the Solana offer appears
	eventually(s3, a)
}
