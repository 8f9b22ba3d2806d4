package evmchain

import (
	"context"
	"math/big"
	"strings"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"

	"conduit/internal/x402"
)

// A payment signed the way the official client signs it settles on the
// chain; the same authorization again, or one the payer cannot cover,
// reverts with the token's reason.
func TestTransferWithAuthorizationOnTheLocalChain(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, 7_000_000)
	settle := func(p x402.PaymentPayload, nonce [32]byte) (common.Hash, error) {
		ep, from, err := x402.VerifyEVM(p, f.req, time.Now())
		if err != nil || from != f.payer {
			t.Fatalf("verify: %v", err)
		}
		a := ep.Authorization
		va, _ := new(big.Int).SetString(a.ValidAfter, 10)
		vb, _ := new(big.Int).SetString(a.ValidBefore, 10)
		sig, _ := hexutil.Decode(ep.Signature)
		return f.chain.TransferWithAuthorization(ctx, from, common.HexToAddress(a.To), big.NewInt(5_000_000), va, vb, nonce, sig)
	}
	p, nonce := f.pay(t)
	tx, err := settle(p, nonce)
	if err != nil || tx == (common.Hash{}) {
		t.Fatalf("settle: %v", err)
	}
	if b, _ := f.chain.BalanceOf(ctx, f.payTo); b.Int64() != 5_000_000 {
		t.Fatalf("payee balance %s", b)
	}
	if b, _ := f.chain.BalanceOf(ctx, f.payer); b.Int64() != 2_000_000 {
		t.Fatalf("payer balance %s", b)
	}
	if used, _ := f.chain.AuthorizationUsed(ctx, f.payer, nonce); !used {
		t.Fatal("nonce not marked used")
	}
	if _, err := settle(p, nonce); err == nil || !strings.Contains(err.Error(), "authorization nonce already submitted") {
		t.Fatalf("replay: %v", err)
	}
	// 2.00 left cannot cover another 5.00.
	p, nonce = f.pay(t)
	if _, err := settle(p, nonce); err == nil || !strings.Contains(err.Error(), "execution reverted") || !strings.Contains(err.Error(), "transfer amount exceeds balance") {
		t.Fatalf("underfunded: %v", err)
	}
}

// Settlements faster than one a second share blocks, so the chain's clock
// stays the wall clock's: it used to run a second ahead per settlement,
// and after a few hundred an authorization valid for 300 s by the payer's
// clock was expired by the chain's and its settlement reverted. A
// settlement waiting for its block is seen by every read at once, and a
// second use of its authorization is refused.
func TestSettlementsFasterThanBlocksKeepTheWallClock(t *testing.T) {
	ctx := context.Background()
	const n = 40
	f := newFixture(t, n*5_000_000)
	var nonces [][32]byte
	for range n {
		p, nonce := f.pay(t)
		ep, from, err := x402.VerifyEVM(p, f.req, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		a := ep.Authorization
		va, _ := new(big.Int).SetString(a.ValidAfter, 10)
		vb, _ := new(big.Int).SetString(a.ValidBefore, 10)
		sig, _ := hexutil.Decode(ep.Signature)
		if _, err := f.chain.TransferWithAuthorization(ctx, from, common.HexToAddress(a.To), big.NewInt(5_000_000), va, vb, nonce, sig); err != nil {
			t.Fatalf("settlement %d: %v", len(nonces), err)
		}
		nonces = append(nonces, nonce)
		if b, _ := f.chain.BalanceOf(ctx, f.payTo); b.Int64() != int64(len(nonces))*5_000_000 {
			t.Fatalf("after %d settlements the payee holds %s", len(nonces), b)
		}
		if _, err := f.chain.TransferWithAuthorization(ctx, from, common.HexToAddress(a.To), big.NewInt(5_000_000), va, vb, nonce, sig); err == nil || !strings.Contains(err.Error(), "authorization nonce already submitted") {
			t.Fatalf("the same authorization again: %v", err)
		}
	}
	head, err := f.chain.client.HeaderByNumber(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if now := uint64(time.Now().Unix()); head.Time > now {
		t.Fatalf("the chain's clock is %d s ahead of the wall clock after %d settlements", head.Time-now, n)
	}
	// Once sealed, the chain itself says the same.
	deadline := time.Now().Add(10 * time.Second)
	for {
		f.chain.mu.Lock()
		left := len(f.chain.waiting)
		f.chain.mu.Unlock()
		if left == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d settlements still waiting for a block", left)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if b, _ := f.chain.BalanceOf(ctx, f.payer); b.Sign() != 0 {
		t.Fatalf("payer holds %s", b)
	}
	for _, nonce := range nonces {
		if used, _ := f.chain.AuthorizationUsed(ctx, f.payer, nonce); !used {
			t.Fatal("an authorization is not spent on the chain")
		}
		if _, to, v, found, err := f.chain.AuthorizationTransfer(ctx, f.payer, nonce); err != nil || !found || to != f.payTo || v.Int64() != 5_000_000 {
			t.Fatalf("transfer of an authorization: %v %v %s %v", err, found, to, v)
		}
	}
}
