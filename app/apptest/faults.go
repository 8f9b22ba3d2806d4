package apptest

import (
	"context"
	"errors"
	"sync/atomic"

	"conduit/internal/x402"
)

// ErrLostAnswer is what a settlement whose answer was lost reports.
var ErrLostAnswer = errors.New("apptest: the settlement's answer was lost")

// Faults wraps the facilitator the worker settles with, so tests can put a
// fault at the exact point where settlement is not crash-safe by default:
// after the chain accepted a payment and before it was recorded.
type Faults struct {
	inner x402.Facilitator
	// lose counts the next settlements that go through on chain and then
	// fail as if the worker died or the connection dropped.
	lose atomic.Int64
	// down counts the next settlements that fail before reaching the
	// facilitator (nothing settled).
	down atomic.Int64
	// expire counts the next settlements refused as a Solana validator
	// refuses a transaction whose blockhash aged out (nothing settled).
	expire atomic.Int64
}

// LoseSettleAnswers makes the next n settlements settle, then fail.
func (f *Faults) LoseSettleAnswers(n int) { f.lose.Store(int64(n)) }

// FailSettles makes the next n settlements fail without settling.
func (f *Faults) FailSettles(n int) { f.down.Store(int64(n)) }

// ExpireSettles makes the next n settlements (after any lost answers) be refused as a transaction
// whose blockhash expired: what a resubmission of a Solana payment meets
// once it is older than the validity window, before any duplicate check.
func (f *Faults) ExpireSettles(n int) { f.expire.Store(int64(n)) }

func take(c *atomic.Int64) bool {
	for {
		n := c.Load()
		if n <= 0 {
			return false
		}
		if c.CompareAndSwap(n, n-1) {
			return true
		}
	}
}

func (f *Faults) Verify(ctx context.Context, p x402.PaymentPayload, req x402.PaymentRequirements) (x402.VerifyResponse, error) {
	return f.inner.Verify(ctx, p, req)
}

func (f *Faults) Settle(ctx context.Context, p x402.PaymentPayload, req x402.PaymentRequirements) (x402.SettleResponse, error) {
	if take(&f.down) {
		return x402.SettleResponse{}, errors.New("apptest: the facilitator is unreachable")
	}
	// After the lost answers: the resubmission is what expires.
	if f.lose.Load() <= 0 && take(&f.expire) {
		return x402.SettleResponse{Success: false, ErrorReason: x402.ReasonSVMSimulation,
			ErrorMessage: "Transaction simulation failed: Blockhash not found", Network: req.Network}, nil
	}
	resp, err := f.inner.Settle(ctx, p, req)
	if err == nil && resp.Success && take(&f.lose) {
		return x402.SettleResponse{}, ErrLostAnswer
	}
	return resp, err
}

func (f *Faults) Supported(ctx context.Context) (x402.Supported, error) {
	return f.inner.Supported(ctx)
}

// FindSettlement passes through to the facilitator's finder.
func (f *Faults) FindSettlement(ctx context.Context, p x402.PaymentPayload, req x402.PaymentRequirements) (x402.SettleResponse, bool, error) {
	finder, ok := f.inner.(x402.SettlementFinder)
	if !ok {
		return x402.SettleResponse{}, false, nil
	}
	return finder.FindSettlement(ctx, p, req)
}
