package frontend_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/rand"
	"math/big"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/gagliardetto/solana-go"
	"github.com/gagliardetto/solana-go/rpc"

	"conduit/frontend"
	"conduit/internal/config"
	"conduit/internal/money"
	"conduit/internal/payments"
	"conduit/internal/x402"
)

const topUpPath = "/api/billing/credits/x402"

// wallet is a payer with test tokens on the local EVM network.
type wallet struct {
	key  *ecdsa.PrivateKey
	addr common.Address
}

func newWallet(t *testing.T, usd money.Micros) wallet {
	t.Helper()
	k, _ := crypto.GenerateKey()
	w := wallet{key: k, addr: crypto.PubkeyToAddress(k.PublicKey)}
	if usd > 0 {
		if _, err := env.Platform.Payments.Mint(context.Background(), w.addr.Hex(), usd); err != nil {
			t.Fatal(err)
		}
	}
	return w
}

// challenge asks the endpoint for its 402 and decodes PAYMENT-REQUIRED.
func challenge(t *testing.T) x402.PaymentRequired {
	t.Helper()
	r := env.Do(t, "POST", topUpPath, nil)
	if r.Status != http.StatusPaymentRequired {
		t.Fatalf("unpaid call: %d %s", r.Status, r.Body)
	}
	pr, err := x402.DecodePaymentRequired(r.Header.Get("PAYMENT-REQUIRED"))
	if err != nil {
		t.Fatal(err)
	}
	return pr
}

// pay signs the first offer as the official EVM client would.
func (w wallet) pay(t *testing.T, pr x402.PaymentRequired) string {
	t.Helper()
	var nonce [32]byte
	_, _ = rand.Read(nonce[:])
	p, err := x402.SignEVM(pr.Accepts[0], hexutil.Encode(crypto.FromECDSA(w.key)), nonce, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	p.Resource = &pr.Resource
	h, err := x402.EncodeHeader(p)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// signed is an EIP-3009 authorization with its parts.
type signed struct {
	header string
	sig    []byte
	va, vb int64
}

// signWith signs req with a chosen nonce.
func signWith(t *testing.T, w wallet, req x402.PaymentRequirements, nonce [32]byte) signed {
	t.Helper()
	p, err := x402.SignEVM(req, hexutil.Encode(crypto.FromECDSA(w.key)), nonce, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	ep, sig, err := x402.ParseEVMPayload(p.Payload)
	if err != nil {
		t.Fatal(err)
	}
	h, _ := x402.EncodeHeader(p)
	va, _ := new(big.Int).SetString(ep.Authorization.ValidAfter, 10)
	vb, _ := new(big.Int).SetString(ep.Authorization.ValidBefore, 10)
	return signed{header: h, sig: sig, va: va.Int64(), vb: vb.Int64()}
}

func (w wallet) tokens(t *testing.T) int64 {
	t.Helper()
	b, err := env.Platform.Payments.Chain.BalanceOf(context.Background(), w.addr)
	if err != nil {
		t.Fatal(err)
	}
	return b.Int64()
}

func TestTopUpChallenge(t *testing.T) {
	pr := challenge(t)
	a := pr.Accepts[0]
	if pr.X402Version != 2 || pr.Error != "PAYMENT-SIGNATURE header is required" || pr.Resource.URL != env.URL+topUpPath ||
		a.Scheme != "exact" || a.Network != "eip155:8453" || a.Amount != "5000000" || a.Asset != env.Platform.Payments.Chain.Token.Hex() ||
		a.Extra["name"] != "USDC" || a.Extra["version"] != "2" || a.MaxTimeoutSeconds != 300 {
		t.Fatalf("%+v", pr)
	}
	// The balance endpoint advertises top-up while it is enabled.
	_, key := env.NewAccount(t)
	x := wantStatus(t, do(t, "GET", "/api/account/balance", key, nil), http.StatusOK)["x402"].(map[string]any)
	if x["url"] != env.URL+topUpPath || x["topUpPerCallUsd"].(float64) != 5 || x["network"] != "eip155:8453" {
		t.Fatalf("%v", x)
	}
}

func TestTopUpWithBearerThenReplay(t *testing.T) {
	_, key := env.NewAccount(t)
	w := newWallet(t, 12*money.USD)
	payTo := common.HexToAddress(challenge(t).Accepts[0].PayTo)
	payeeBefore, _ := env.Platform.Payments.Chain.BalanceOf(context.Background(), payTo)
	sig := w.pay(t, challenge(t))

	r := do(t, "POST", topUpPath, key, nil, "PAYMENT-SIGNATURE", sig)
	body := wantStatus(t, r, http.StatusOK)
	if body["grantedUsd"].(float64) != 5 || body["duplicate"] != false || body["balanceUsd"].(float64) != 10 ||
		body["network"] != "eip155:8453" || body["payer"] != w.addr.Hex() || len(body["transaction"].(string)) != 66 {
		t.Fatalf("%v", body)
	}
	sr, err := x402.DecodeSettleResponse(r.Header.Get("PAYMENT-RESPONSE"))
	if err != nil || !sr.Success || sr.Transaction != body["transaction"] {
		t.Fatalf("PAYMENT-RESPONSE %+v %v", sr, err)
	}
	if w.tokens(t) != 7_000_000 {
		t.Fatalf("payer tokens %d", w.tokens(t))
	}
	payeeAfter, _ := env.Platform.Payments.Chain.BalanceOf(context.Background(), payTo)
	if new(big.Int).Sub(payeeAfter, payeeBefore).Int64() != 5_000_000 {
		t.Fatalf("payee received %s", new(big.Int).Sub(payeeAfter, payeeBefore))
	}

	// The same payment again: answered, not granted again, not settled again.
	r = do(t, "POST", topUpPath, key, nil, "PAYMENT-SIGNATURE", sig)
	again := wantStatus(t, r, http.StatusOK)
	if again["duplicate"] != true || again["balanceUsd"].(float64) != 10 || again["transaction"] != body["transaction"] {
		t.Fatalf("replay %v", again)
	}
	if w.tokens(t) != 7_000_000 {
		t.Fatal("a replay moved tokens")
	}
}

// One payment presented by several callers at once reaches one workflow
// (or, once it closed, the payment's record): it is settled and granted
// once, and exactly one answer reports the grant, every other one a
// duplicate of the same transaction.
func TestTopUpPresentedConcurrentlyGrantsOnce(t *testing.T) {
	_, key := env.NewAccount(t)
	w := newWallet(t, 10*money.USD)
	sig := w.pay(t, challenge(t))
	var mu sync.Mutex
	var answers []map[string]any
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := do(t, "POST", topUpPath, key, nil, "PAYMENT-SIGNATURE", sig)
			mu.Lock()
			defer mu.Unlock()
			if r.Status != http.StatusOK {
				t.Errorf("status %d: %s", r.Status, r.Body)
				return
			}
			answers = append(answers, r.JSON(t))
		}()
	}
	wg.Wait()
	if len(answers) != 4 {
		t.FailNow()
	}
	fresh := 0
	for _, a := range answers {
		switch {
		case a["duplicate"] == false && a["grantedUsd"].(float64) == 5:
			fresh++
		case a["duplicate"] == true && a["grantedUsd"].(float64) == 0:
		default:
			t.Errorf("answer %v", a)
		}
		if a["transaction"] != answers[0]["transaction"] || a["balanceUsd"].(float64) != 10 {
			t.Errorf("answer %v", a)
		}
	}
	if fresh != 1 || w.tokens(t) != 5_000_000 || balanceUSD(t, key) != 10 {
		t.Fatalf("%d answers reported the grant (%v); tokens %d", fresh, answers, w.tokens(t))
	}
}

func TestTopUpWithoutBearerCreditsTheWalletAccount(t *testing.T) {
	w := newWallet(t, 5*money.USD)
	body := wantStatus(t, env.Do(t, "POST", topUpPath, nil, "PAYMENT-SIGNATURE", w.pay(t, challenge(t))), http.StatusOK)
	// A new wallet account holds what it bought: no free credit.
	if body["balanceUsd"].(float64) != 5 || body["grantedUsd"].(float64) != 5 {
		t.Fatalf("%v", body)
	}
	acct, err := env.Platform.Store.WalletAccount(context.Background(), "eip155:8453", strings.ToLower(w.addr.Hex()))
	if err != nil || acct.Balance != 5*money.USD {
		t.Fatalf("wallet account %+v %v", acct, err)
	}
	if sum, _ := env.Platform.Store.LedgerSum(context.Background(), acct.ID); sum != acct.Balance {
		t.Fatalf("ledger %s vs balance %s", sum, acct.Balance)
	}
}

func TestTopUpRefusals(t *testing.T) {
	_, key := env.NewAccount(t)

	// Underfunded wallet: refused, nothing granted.
	poor := newWallet(t, 2*money.USD)
	r := do(t, "POST", topUpPath, key, nil, "PAYMENT-SIGNATURE", poor.pay(t, challenge(t)))
	body := wantStatus(t, r, http.StatusPaymentRequired)
	if !strings.HasPrefix(body["error"].(string), "invalid_payload: execution reverted") || r.Header.Get("PAYMENT-REQUIRED") == "" {
		t.Fatalf("%v", body)
	}
	if poor.tokens(t) != 2_000_000 || balanceUSD(t, key) != 5 {
		t.Fatal("an underfunded payment changed balances")
	}

	// A nonce the payer already spent elsewhere (another transfer, settled
	// straight on the chain): refused in the spec's words.
	w := newWallet(t, 10*money.USD)
	pr := challenge(t)
	var nonce [32]byte
	_, _ = rand.Read(nonce[:])
	elsewhere := pr.Accepts[0]
	elsewhere.PayTo = newWallet(t, 0).addr.Hex()
	spent := signWith(t, w, elsewhere, nonce)
	if _, err := env.Platform.Payments.Chain.TransferWithAuthorization(context.Background(), w.addr, common.HexToAddress(elsewhere.PayTo),
		big.NewInt(5_000_000), big.NewInt(spent.va), big.NewInt(spent.vb), nonce, spent.sig); err != nil {
		t.Fatal(err)
	}
	r = do(t, "POST", topUpPath, key, nil, "PAYMENT-SIGNATURE", signWith(t, w, pr.Accepts[0], nonce).header)
	if body := wantStatus(t, r, http.StatusPaymentRequired); body["error"] != "invalid_payload: authorization nonce already submitted" {
		t.Fatalf("%v", body)
	}
	if balanceUSD(t, key) != 5 {
		t.Fatal("a spent nonce was credited")
	}

	// This very authorization settled to our payee by someone else: the
	// money arrived, so it is found on the chain and credited, once.
	pr = challenge(t)
	sig := w.pay(t, pr)
	p, _ := x402.DecodePaymentPayload(sig)
	if s, err := env.Platform.Payments.Facilitator.Settle(context.Background(), p, pr.Accepts[0]); err != nil || !s.Success {
		t.Fatalf("%+v %v", s, err)
	}
	body = wantStatus(t, do(t, "POST", topUpPath, key, nil, "PAYMENT-SIGNATURE", sig), http.StatusOK)
	if body["grantedUsd"].(float64) != 5 || balanceUSD(t, key) != 10 || w.tokens(t) != 0 {
		t.Fatalf("%v tokens %d", body, w.tokens(t))
	}

	// A bad bearer costs nothing: 401 before anything settles.
	w2 := newWallet(t, 10*money.USD)
	sig = w2.pay(t, challenge(t))
	r = env.Do(t, "POST", topUpPath, nil, "Authorization", "Bearer cnd_nope", "PAYMENT-SIGNATURE", sig)
	if body := wantStatus(t, r, http.StatusUnauthorized); body["error"] != "Invalid or expired credentials" {
		t.Fatalf("%v", body)
	}
	_, noPipelines := env.NewAccount(t, "keys:manage")
	wantStatus(t, do(t, "POST", topUpPath, noPipelines, nil, "PAYMENT-SIGNATURE", sig), http.StatusUnauthorized)
	p2, _ := x402.DecodePaymentPayload(sig)
	ep, _, _ := x402.ParseEVMPayload(p2.Payload)
	used, _ := env.Platform.Payments.Chain.AuthorizationUsed(context.Background(), w2.addr, [32]byte(hexutil.MustDecode(ep.Authorization.Nonce)))
	if used || w2.tokens(t) != 10_000_000 {
		t.Fatal("a refused bearer settled the payment")
	}

	// Garbage and mismatched payments get a fresh challenge.
	r = env.Do(t, "POST", topUpPath, nil, "PAYMENT-SIGNATURE", "not base64!")
	if body := wantStatus(t, r, http.StatusPaymentRequired); !strings.Contains(body["error"].(string), "not standard base64") {
		t.Fatalf("%v", body)
	}
	cheap := challenge(t)
	cheap.Accepts[0].Amount = "1"
	r = env.Do(t, "POST", topUpPath, nil, "PAYMENT-SIGNATURE", w2.pay(t, cheap))
	if body := wantStatus(t, r, http.StatusPaymentRequired); body["error"] != "No matching payment requirements" {
		t.Fatalf("%v", body)
	}
}

func TestTopUpDisabledIs503AndUnadvertised(t *testing.T) {
	off, err := payments.New(config.X402{Enabled: false}, nil)
	if err != nil {
		t.Fatal(err)
	}
	deps := env.Platform.FrontendDeps()
	deps.Payments = off
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: frontend.New(deps).Handler()}
	go srv.Serve(ln)
	defer srv.Close()
	base := "http://" + ln.Addr().String()

	resp, err := http.Post(base+topUpPath, "application/json", nil)
	if err != nil {
		t.Fatal(err)
	}
	b := make([]byte, 200)
	n, _ := resp.Body.Read(b)
	resp.Body.Close()
	if resp.StatusCode != 503 || strings.TrimSpace(string(b[:n])) != `{"error":"x402 payments are not configured on this deployment"}` {
		t.Fatalf("%d %s", resp.StatusCode, b[:n])
	}
	_, key := env.NewAccount(t)
	req, _ := http.NewRequest("GET", base+"/api/account/balance", nil)
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	n, _ = resp.Body.Read(b)
	resp.Body.Close()
	if strings.Contains(string(b[:n]), "x402") {
		t.Fatalf("disabled top-up still advertised: %s", b[:n])
	}
}

func TestTopUpRateLimit(t *testing.T) {
	cfg := *env.Config
	cfg.X402.RateLimit = "2-M"
	deps := env.Platform.FrontendDeps()
	deps.Config = &cfg
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: frontend.New(deps).Handler()}
	go srv.Serve(ln)
	defer srv.Close()
	url := "http://" + ln.Addr().String() + topUpPath
	for i := range 3 {
		resp, err := http.Post(url, "application/json", nil)
		if err != nil {
			t.Fatal(err)
		}
		b := make([]byte, 300)
		n, _ := resp.Body.Read(b)
		resp.Body.Close()
		if i < 2 && resp.StatusCode != http.StatusPaymentRequired {
			t.Fatalf("call %d: %d %s", i, resp.StatusCode, b[:n])
		}
		if i == 2 && (resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "" ||
			!strings.HasPrefix(string(b[:n]), `{"error":"rate limit exceeded: at most 2 calls per 1m0s from one address; retry after`)) {
			t.Fatalf("call %d: %d %v %s", i, resp.StatusCode, resp.Header, b[:n])
		}
	}
}

// solWallet is a payer on the embedded Solana network.
func solWallet(t *testing.T, usd money.Micros) solana.PrivateKey {
	t.Helper()
	k, _ := solana.NewRandomPrivateKey()
	if usd > 0 {
		if _, err := env.Platform.Payments.Mint(context.Background(), k.PublicKey().String(), usd); err != nil {
			t.Fatal(err)
		}
	}
	return k
}

func solPay(t *testing.T, k solana.PrivateKey, pr x402.PaymentRequired) string {
	t.Helper()
	// A recent blockhash from the embedded network, as the official
	// client gets it.
	bh, err := rpc.New(env.Platform.Payments.SolanaRPC).GetLatestBlockhash(context.Background(), rpc.CommitmentFinalized)
	if err != nil {
		t.Fatal(err)
	}
	p, err := x402.SignSVM(pr.Accepts[1], k, bh.Value.Blockhash)
	if err != nil {
		t.Fatal(err)
	}
	h, _ := x402.EncodeHeader(p)
	return h
}

func TestTopUpOnSolana(t *testing.T) {
	pr := challenge(t)
	if len(pr.Accepts) != 2 || !strings.HasPrefix(pr.Accepts[1].Network, "solana:") || pr.Accepts[1].Amount != "5000000" || pr.Accepts[1].Extra["feePayer"] == "" {
		t.Fatalf("second offer: %+v", pr.Accepts)
	}
	network := pr.Accepts[1].Network
	k := solWallet(t, 12*money.USD)
	owner := k.PublicKey().String()

	// Without a bearer: the Solana wallet account, separate from any EVM one.
	sig := solPay(t, k, pr)
	body := wantStatus(t, env.Do(t, "POST", topUpPath, nil, "PAYMENT-SIGNATURE", sig), http.StatusOK)
	if body["network"] != network || body["payer"] != owner || body["grantedUsd"].(float64) != 5 || body["balanceUsd"].(float64) != 5 {
		t.Fatalf("%v", body)
	}
	tx := body["transaction"].(string)
	if _, err := solana.SignatureFromBase58(tx); err != nil {
		t.Fatalf("transaction %q is not a base58 signature: %v", tx, err)
	}
	left, _ := env.Platform.Store.SVMBalance(context.Background(), pr.Accepts[1].Asset, owner)
	got, _ := env.Platform.Store.SVMBalance(context.Background(), pr.Accepts[1].Asset, pr.Accepts[1].PayTo)
	if left != 7_000_000 || got < 5_000_000 {
		t.Fatalf("ledger: payer %d payee %d", left, got)
	}
	acct, err := env.Platform.Store.WalletAccount(context.Background(), network, owner)
	if err != nil || acct.Balance != 5*money.USD {
		t.Fatalf("%+v %v", acct, err)
	}

	// Replay: duplicate, nothing moves.
	again := wantStatus(t, env.Do(t, "POST", topUpPath, nil, "PAYMENT-SIGNATURE", sig), http.StatusOK)
	if again["duplicate"] != true || again["transaction"] != tx {
		t.Fatalf("%v", again)
	}
	if l, _ := env.Platform.Store.SVMBalance(context.Background(), pr.Accepts[1].Asset, owner); l != 7_000_000 {
		t.Fatal("a replay moved tokens")
	}

	// With a bearer: that account is credited.
	_, key := env.NewAccount(t)
	wantStatus(t, do(t, "POST", topUpPath, key, nil, "PAYMENT-SIGNATURE", solPay(t, k, pr)), http.StatusOK)
	if balanceUSD(t, key) != 10 {
		t.Fatal("bearer account not credited")
	}

	// 2.00 left: refused, nothing moves.
	r := env.Do(t, "POST", topUpPath, nil, "PAYMENT-SIGNATURE", solPay(t, k, pr))
	if b := wantStatus(t, r, http.StatusPaymentRequired); !strings.HasPrefix(b["error"].(string), "invalid_payload: execution reverted: insufficient funds") {
		t.Fatalf("%v", b)
	}
	if l, _ := env.Platform.Store.SVMBalance(context.Background(), pr.Accepts[1].Asset, owner); l != 2_000_000 {
		t.Fatalf("payer %d", l)
	}
}
