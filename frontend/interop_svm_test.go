package frontend_test

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strconv"
	"testing"

	"github.com/gagliardetto/solana-go"
	"github.com/gagliardetto/solana-go/rpc"

	"conduit/app/apptest"
	"conduit/frontend"
	"conduit/internal/config"
	"conduit/internal/money"
	"conduit/internal/x402"
)

type officialSvmResult struct {
	Status          int            `json:"status"`
	PaymentResponse string         `json:"paymentResponse"`
	Body            map[string]any `json:"body"`
	RPCMethods      []string       `json:"rpcMethods"`
}

// payWithOfficialSvmClient runs interop/x402/pay-svm.mjs: the official
// @x402/fetch + @x402/svm clients, unmodified, told only the network's RPC
// URL and its mint.
func payWithOfficialSvmClient(t *testing.T, e *apptest.Env, k solana.PrivateKey, path, bearer, body string) officialSvmResult {
	t.Helper()
	pay := e.Platform.Payments
	args := []string{e.URL + path, k.String(), pay.SolanaNetwork, pay.SolanaMint, pay.SolanaRPC, bearer, http.MethodPost}
	if body != "" {
		args = append(args, body)
	}
	out := runOfficial(t, "pay-svm.mjs", args...)
	var res officialSvmResult
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	return res
}

// tokenBalance reads owner's play-token balance through the network's
// JSON-RPC, as a wallet does.
func tokenBalance(t *testing.T, cl *rpc.Client, mint, owner solana.PublicKey) uint64 {
	t.Helper()
	ata, _, _ := solana.FindAssociatedTokenAddress(owner, mint)
	res, err := cl.GetTokenAccountBalance(context.Background(), ata, rpc.CommitmentFinalized)
	if err != nil {
		t.Fatalf("getTokenAccountBalance of %s: %v", owner, err)
	}
	n, _ := strconv.ParseUint(res.Value.Amount, 10, 64)
	return n
}

// TestOfficialSvmClientPays pays the top-up and one render on the
// embedded Solana network (the dev command's configuration) with the
// official Solana x402 client, checks the balances through the network's
// RPC before and after, and has a payment built on an expired blockhash
// refused.
func TestOfficialSvmClientPays(t *testing.T) {
	officialClients(t)
	play := env.StartPlay(t)
	pay := play.Platform.Payments
	if pay.SolanaNetwork != config.PlaySolanaNetwork || pay.SolanaRPC == "" {
		t.Fatalf("the play platform's Solana network %q, RPC %q", pay.SolanaNetwork, pay.SolanaRPC)
	}
	ctx := context.Background()
	cl := rpc.New(pay.SolanaRPC)
	mint := solana.MustPublicKeyFromBase58(pay.SolanaMint)
	r := play.Do(t, http.MethodPost, topUpPath, nil)
	pr, err := x402.DecodePaymentRequired(r.Header.Get(x402.HeaderPaymentRequired))
	if err != nil || len(pr.Accepts) != 2 {
		t.Fatalf("challenge: %d %+v %v", r.Status, pr, err)
	}
	offer := pr.Accepts[1]
	payTo := solana.MustPublicKeyFromBase58(offer.PayTo)

	k, _ := solana.NewRandomPrivateKey()
	if _, err := pay.Mint(ctx, k.PublicKey().String(), 8*money.USD); err != nil {
		t.Fatal(err)
	}
	payerBefore, payeeBefore := tokenBalance(t, cl, mint, k.PublicKey()), tokenBalance(t, cl, mint, payTo)
	if payerBefore != 8_000_000 {
		t.Fatalf("payer holds %d before paying", payerBefore)
	}

	// The top-up, credited to an account.
	acct, bearer := play.NewAccount(t)
	res := payWithOfficialSvmClient(t, play, k, topUpPath, bearer, "")
	if res.Status != http.StatusOK || res.Body["grantedUsd"] != 5.0 || res.Body["payer"] != k.PublicKey().String() || res.Body["network"] != config.PlaySolanaNetwork {
		t.Fatalf("top-up: %+v", res)
	}
	sr, err := x402.DecodeSettleResponse(res.PaymentResponse)
	if err != nil || !sr.Success || sr.Transaction != res.Body["transaction"] {
		t.Fatalf("PAYMENT-RESPONSE %+v %v", sr, err)
	}
	for _, m := range []string{"getAccountInfo", "getLatestBlockhash"} {
		if !slices.Contains(res.RPCMethods, m) {
			t.Errorf("the client did not call %s (it called %v)", m, res.RPCMethods)
		}
	}
	t.Logf("the official client called %v", res.RPCMethods)
	if bal, _ := play.Platform.Store.Balance(ctx, acct); bal != 10*money.USD {
		t.Fatalf("account balance %s", bal)
	}
	if p, q := tokenBalance(t, cl, mint, k.PublicKey()), tokenBalance(t, cl, mint, payTo); p != payerBefore-5_000_000 || q != payeeBefore+5_000_000 {
		t.Fatalf("after the top-up: payer %d (was %d), payee %d (was %d)", p, payerBefore, q, payeeBefore)
	}
	sig := solana.MustSignatureFromBase58(sr.Transaction)
	st, err := cl.GetSignatureStatuses(ctx, true, sig)
	if err != nil || st.Value[0] == nil || st.Value[0].Err != nil {
		t.Fatalf("getSignatureStatuses: %+v %v", st, err)
	}
	zero := uint64(0)
	tx, err := cl.GetTransaction(ctx, sig, &rpc.GetTransactionOpts{MaxSupportedTransactionVersion: &zero})
	if err != nil || tx.Version != 0 || tx.Meta.Err != nil {
		t.Fatalf("getTransaction: %+v %v", tx, err)
	}

	// One render: speech, paid from what is left, at its Solana price.
	payerMid := tokenBalance(t, cl, mint, k.PublicKey())
	speech := map[string]any{"text": "Paid by the official Solana client."}
	sp, err := x402.DecodePaymentRequired(play.Do(t, http.MethodPost, frontend.SpeechPath, speech).Header.Get(x402.HeaderPaymentRequired))
	if err != nil || len(sp.Accepts) != 2 {
		t.Fatalf("speech challenge: %+v %v", sp, err)
	}
	price, _ := strconv.ParseUint(sp.Accepts[1].Amount, 10, 64)
	speechBody, _ := json.Marshal(speech)
	res = payWithOfficialSvmClient(t, play, k, frontend.SpeechPath, "", string(speechBody))
	if res.Status != http.StatusOK || res.Body["status"] != "success" || res.Body["network"] != config.PlaySolanaNetwork {
		t.Fatalf("render: %+v", res)
	}
	rsr, err := x402.DecodeSettleResponse(res.PaymentResponse)
	if err != nil || !rsr.Success {
		t.Fatalf("render PAYMENT-RESPONSE %+v %v", rsr, err)
	}
	if p := tokenBalance(t, cl, mint, k.PublicKey()); price == 0 || p != payerMid-price {
		t.Fatalf("after the render: payer %d, was %d, price %d", p, payerMid, price)
	}

	// A payment on a blockhash past the validity window is refused, as a
	// validator refuses it, and moves nothing.
	clock := pay.SolanaClock
	stale := clock.Blockhash(clock.Slot() - x402.SVMBlockhashWindow - 5)
	if v, err := cl.IsBlockhashValid(ctx, stale, rpc.CommitmentFinalized); err != nil || v.Value {
		t.Fatalf("isBlockhashValid(stale): %+v %v", v, err)
	}
	before := tokenBalance(t, cl, mint, k.PublicKey())
	p, err := x402.SignSVM(offer, k, stale)
	if err != nil {
		t.Fatal(err)
	}
	p.Resource = &pr.Resource
	h, _ := x402.EncodeHeader(p)
	r = play.Do(t, http.MethodPost, topUpPath, nil, x402.HeaderPaymentSignature, h)
	if r.Status != http.StatusPaymentRequired || r.JSON(t)["error"] != "invalid_payload: Transaction simulation failed: Blockhash not found" {
		t.Fatalf("stale blockhash: %d %s", r.Status, r.Body)
	}
	if after := tokenBalance(t, cl, mint, k.PublicKey()); after != before {
		t.Fatalf("a refused payment moved tokens: %d → %d", before, after)
	}
}
