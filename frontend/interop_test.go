package frontend_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os/exec"
	"sync"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/crypto"

	"conduit/app/apptest"
	"conduit/internal/config"
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

// runOfficial runs one of the interop/x402 scripts (the official clients,
// unmodified) and returns what it printed.
func runOfficial(t *testing.T, script string, args ...string) []byte {
	t.Helper()
	cmd := exec.Command("node", append([]string{script}, args...)...)
	cmd.Dir = "../interop/x402"
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("official client %s: %v\n%s", script, err, out)
	}
	return bytes.TrimSpace(out)
}

// TestOfficialX402ClientPaysTopUp pays the top-up endpoint with the
// official @x402/fetch + @x402/evm packages and a viem private-key
// account, unmodified (interop/x402/pay.mjs): on the spec's default
// network, and on the play chain the dev command runs (a second platform
// configured like it).
func TestOfficialX402ClientPaysTopUp(t *testing.T) {
	officialClients(t)
	t.Run("eip155:8453", func(t *testing.T) { payWithOfficialClient(t, env, "eip155:8453") })
	t.Run(config.PlayNetwork, func(t *testing.T) {
		play := env.StartPlay(t)
		payWithOfficialClient(t, play, config.PlayNetwork)

		// A payment signed for the play chain is no payment on the main
		// network's platform: its offer is another network, its EIP-712
		// domain another chain id.
		r := play.Do(t, http.MethodPost, topUpPath, nil)
		pr, err := x402.DecodePaymentRequired(r.Header.Get(x402.HeaderPaymentRequired))
		if err != nil || r.Status != http.StatusPaymentRequired || len(pr.Accepts) == 0 || pr.Accepts[0].Network != config.PlayNetwork {
			t.Fatalf("play challenge: %d %+v %v", r.Status, pr, err)
		}
		key, _ := crypto.GenerateKey()
		if _, err := play.Platform.Payments.Mint(context.Background(), crypto.PubkeyToAddress(key.PublicKey).Hex(), 8*money.USD); err != nil {
			t.Fatal(err)
		}
		p, err := x402.SignEVM(pr.Accepts[0], hexutil.Encode(crypto.FromECDSA(key)), [32]byte{1}, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		p.Resource = &pr.Resource
		h, _ := x402.EncodeHeader(p)
		if r := env.Do(t, http.MethodPost, topUpPath, nil, x402.HeaderPaymentSignature, h); r.Status != http.StatusPaymentRequired ||
			r.JSON(t)["error"] != "No matching payment requirements" {
			t.Fatalf("a play-chain payment on the main network's platform: %d %s", r.Status, r.Body)
		}
	})
}

func payWithOfficialClient(t *testing.T, e *apptest.Env, network string) {
	t.Helper()
	acct, bearer := e.NewAccount(t)
	key, _ := crypto.GenerateKey()
	payer := crypto.PubkeyToAddress(key.PublicKey)
	if _, err := e.Platform.Payments.Mint(context.Background(), payer.Hex(), 8*money.USD); err != nil {
		t.Fatal(err)
	}
	out := runOfficial(t, "pay.mjs", e.URL+topUpPath, hexutil.Encode(crypto.FromECDSA(key)), network, e.Platform.Payments.Chain.Token.Hex(), bearer)
	var res struct {
		Status          int            `json:"status"`
		PaymentResponse string         `json:"paymentResponse"`
		Body            map[string]any `json:"body"`
	}
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if res.Status != 200 || res.Body["grantedUsd"].(float64) != 5 || res.Body["payer"] != payer.Hex() || res.Body["duplicate"] != false || res.Body["network"] != network {
		t.Fatalf("%s", out)
	}
	sr, err := x402.DecodeSettleResponse(res.PaymentResponse)
	if err != nil || !sr.Success || sr.Transaction != res.Body["transaction"] || sr.Network != network {
		t.Fatalf("PAYMENT-RESPONSE %+v %v", sr, err)
	}
	if bal, _ := e.Platform.Store.Balance(context.Background(), acct); bal != 10*money.USD {
		t.Fatalf("balance %s", bal)
	}
	if b, _ := e.Platform.Payments.Chain.BalanceOf(context.Background(), payer); b.Int64() != 3_000_000 {
		t.Fatalf("payer tokens %s", b)
	}
}
