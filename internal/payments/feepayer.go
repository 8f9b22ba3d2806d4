package payments

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/gagliardetto/solana-go"

	"conduit/internal/x402"
)

// FeePayerRefresh is how often the hosted facilitator's /supported is read
// again: facilitators rotate their Solana fee payers, and a challenge
// naming a retired one gets every payment refused
// (fee_payer_not_managed_by_facilitator).
var FeePayerRefresh = 5 * time.Minute

// supportedFeePayer is the fee payer the facilitator advertises for
// network's exact scheme (kinds[i].extra.feePayer), as the official server
// reads it.
func supportedFeePayer(ctx context.Context, f x402.Facilitator, network string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	sup, err := f.Supported(ctx)
	if err != nil {
		return "", err
	}
	for _, k := range sup.Kinds {
		if k.Network != network || k.Scheme != x402.SchemeExact {
			continue
		}
		fp, _ := k.Extra["feePayer"].(string)
		if _, err := solana.PublicKeyFromBase58(fp); err != nil {
			return "", fmt.Errorf("the facilitator's /supported gives %s no base58 extra.feePayer (%q)", network, fp)
		}
		return fp, nil
	}
	return "", fmt.Errorf("the facilitator's /supported does not list the exact scheme on %s", network)
}

// watchFeePayer makes the Solana offer's fee payer the one the hosted
// facilitator advertises: read once now, then every `every`. Until a read
// succeeds the configured x402.solana_fee_payer stands in, if any;
// without either the Solana network is not offered (the EVM one is).
// A failed refresh keeps the last known fee payer.
func (s *Service) watchFeePayer(f x402.Facilitator, sol x402.Offer, fallback string, every time.Duration) {
	current := fallback
	apply := func(ctx context.Context) {
		fp, err := supportedFeePayer(ctx, f, sol.Network)
		if err != nil {
			slog.Warn("x402: the Solana fee payer could not be read from the facilitator", "network", sol.Network, "err", err, "using", current)
		} else {
			current = fp
		}
		if current == "" {
			s.setOffers(s.evm, nil)
			return
		}
		o := sol
		o.Extra = map[string]any{"feePayer": current}
		s.setOffers(s.evm, &o)
	}
	ctx, cancel := context.WithCancel(context.Background())
	s.stopWatch = cancel
	apply(ctx)
	go func() {
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				apply(ctx)
			}
		}
	}()
}
