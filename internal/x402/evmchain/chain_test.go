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
