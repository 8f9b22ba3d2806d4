package app_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/gagliardetto/solana-go"
	"github.com/gagliardetto/solana-go/rpc"

	"conduit/app"
)

// The dev tooling a newcomer uses: mint play tokens on the embedded
// network, then pay a paid endpoint with the Go payer (402 → sign → retry).
func TestMintThenPayTheTopUp(t *testing.T) {
	key, _ := crypto.GenerateKey()
	addr := crypto.PubkeyToAddress(key.PublicKey).Hex()
	r := env.Do(t, http.MethodPost, "/dev/x402/mint", map[string]any{"address": addr, "usd": 6})
	if r.Status != http.StatusOK || r.JSON(t)["mintedUsd"].(float64) != 6 {
		t.Fatalf("mint: %d %s", r.Status, r.Body)
	}
	if r := env.Do(t, http.MethodPost, "/dev/x402/mint", map[string]any{"address": "nope", "usd": 1}); r.Status != http.StatusBadRequest {
		t.Fatalf("bad address: %d %s", r.Status, r.Body)
	}

	res, err := app.Pay(context.Background(), env.HTTP, http.MethodPost, env.URL+"/api/billing/credits/x402", nil, hexutil.Encode(crypto.FromECDSA(key)), "", "")
	if err != nil {
		t.Fatal(err)
	}
	var body map[string]any
	_ = json.Unmarshal(res.Body, &body)
	if res.Status != http.StatusOK || body["grantedUsd"].(float64) != 5 || res.Settlement == nil || !res.Settlement.Success || res.Settlement.Payer != addr {
		t.Fatalf("%d %s %+v", res.Status, res.Body, res.Settlement)
	}
	// 1.00 left: the next payment is refused with the chain's reason.
	res, err = app.Pay(context.Background(), env.HTTP, http.MethodPost, env.URL+"/api/billing/credits/x402", nil, hexutil.Encode(crypto.FromECDSA(key)), "", "")
	if err != nil || res.Status != http.StatusPaymentRequired {
		t.Fatalf("%d %s %v", res.Status, res.Body, err)
	}
}

func TestPayOnSolana(t *testing.T) {
	k, _ := solana.NewRandomPrivateKey()
	if r := env.Do(t, http.MethodPost, "/dev/x402/mint", map[string]any{"address": k.PublicKey().String(), "usd": 5}); r.Status != http.StatusOK {
		t.Fatalf("mint: %d %s", r.Status, r.Body)
	}
	rpcURL := env.Platform.Payments.SolanaRPC
	res, err := app.Pay(context.Background(), env.HTTP, http.MethodPost, env.URL+"/api/billing/credits/x402", nil, k.String(), "", rpcURL)
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != http.StatusOK || res.Settlement == nil || !strings.HasPrefix(res.Settlement.Network, "solana:") || res.Settlement.Payer != k.PublicKey().String() {
		t.Fatalf("%d %s %+v", res.Status, res.Body, res.Settlement)
	}
	// The settled payment is on the network's RPC, and moved the tokens.
	ctx := context.Background()
	cl := rpc.New(rpcURL)
	zero := uint64(0)
	sig := solana.MustSignatureFromBase58(res.Settlement.Transaction)
	if tx, err := cl.GetTransaction(ctx, sig, &rpc.GetTransactionOpts{MaxSupportedTransactionVersion: &zero}); err != nil || tx.Meta.Err != nil {
		t.Fatalf("getTransaction: %+v %v", tx, err)
	}
	mint := solana.MustPublicKeyFromBase58(env.Platform.Payments.SolanaMint)
	ata, _, _ := solana.FindAssociatedTokenAddress(k.PublicKey(), mint)
	if bal, err := cl.GetTokenAccountBalance(ctx, ata, ""); err != nil || bal.Value.Amount != "0" {
		t.Fatalf("payer's balance after paying 5.00: %+v %v", bal, err)
	}
	// Without a blockhash source the payer says what it needs.
	if _, err := app.Pay(ctx, env.HTTP, http.MethodPost, env.URL+"/api/billing/credits/x402", nil, k.String(), "", ""); err == nil || !strings.Contains(err.Error(), "-rpc") {
		t.Fatalf("no RPC: %v", err)
	}
}
