package frontend_test

import (
	"context"
	"encoding/json"
	"os/exec"
	"strings"
	"sync"
	"testing"

	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/crypto"

	"conduit/internal/money"
	"conduit/internal/x402"
)

var (
	npmOnce sync.Once
	npmErr  error
)

// officialClients installs the official x402 clients of interop/x402
// (npm ci), once per test binary.
func officialClients(t *testing.T) {
	t.Helper()
	npmOnce.Do(func() {
		cmd := exec.Command("npm", "ci", "--no-audit", "--no-fund", "--silent")
		cmd.Dir = "../interop/x402"
		if out, err := cmd.CombinedOutput(); err != nil {
			npmErr = err
			t.Logf("npm ci: %s", out)
		}
	})
	if npmErr != nil {
		t.Fatalf("installing the official x402 clients failed: %v", npmErr)
	}
}

// TestOfficialX402ClientPaysTopUp pays the top-up endpoint with the
// official @x402/fetch + @x402/evm packages and a viem private-key
// account, unmodified (interop/x402/pay.mjs).
func TestOfficialX402ClientPaysTopUp(t *testing.T) {
	officialClients(t)
	acct, bearer := env.NewAccount(t)
	key, _ := crypto.GenerateKey()
	payer := crypto.PubkeyToAddress(key.PublicKey)
	if _, err := env.Platform.Payments.Mint(context.Background(), payer.Hex(), 8*money.USD); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("node", "pay.mjs", env.URL+topUpPath, hexutil.Encode(crypto.FromECDSA(key)), env.Platform.Payments.Chain.Token.Hex(), bearer)
	cmd.Dir = "../interop/x402"
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("official client: %v\n%s", err, out)
	}
	var res struct {
		Status          int            `json:"status"`
		PaymentResponse string         `json:"paymentResponse"`
		Body            map[string]any `json:"body"`
	}
	if err := json.Unmarshal([]byte(strings.TrimSpace(string(out))), &res); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if res.Status != 200 || res.Body["grantedUsd"].(float64) != 5 || res.Body["payer"] != payer.Hex() || res.Body["duplicate"] != false {
		t.Fatalf("%s", out)
	}
	sr, err := x402.DecodeSettleResponse(res.PaymentResponse)
	if err != nil || !sr.Success || sr.Transaction != res.Body["transaction"] {
		t.Fatalf("PAYMENT-RESPONSE %+v %v", sr, err)
	}
	if bal, _ := env.Platform.Store.Balance(context.Background(), acct); bal != 10*money.USD {
		t.Fatalf("balance %s", bal)
	}
	if b, _ := env.Platform.Payments.Chain.BalanceOf(context.Background(), payer); b.Int64() != 3_000_000 {
		t.Fatalf("payer tokens %s", b)
	}
}
