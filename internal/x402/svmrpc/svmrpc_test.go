package svmrpc_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"conduit/internal/x402"
	"conduit/internal/x402/svmrpc"

	bin "github.com/gagliardetto/binary"
	"github.com/gagliardetto/solana-go"
	"github.com/gagliardetto/solana-go/programs/token"
	"github.com/gagliardetto/solana-go/rpc"
)

type fakeLedger struct {
	balances map[string]uint64 // owner → amount
	txs      map[string][]byte
	at       time.Time
}

func (l *fakeLedger) Balance(_ context.Context, _, owner string) (uint64, bool, error) {
	a, ok := l.balances[owner]
	return a, ok, nil
}

func (l *fakeLedger) Holders(context.Context, string) ([]string, error) {
	var out []string
	for o := range l.balances {
		out = append(out, o)
	}
	return out, nil
}

func (l *fakeLedger) Supply(context.Context, string) (uint64, error) {
	var s uint64
	for _, a := range l.balances {
		s += a
	}
	return s, nil
}

func (l *fakeLedger) Transaction(_ context.Context, sig string) ([]byte, time.Time, bool, error) {
	tx, ok := l.txs[sig]
	return tx, l.at, ok, nil
}

type fixture struct {
	net            *svmrpc.Network
	url            string
	client         *rpc.Client
	payer, feePay  solana.PrivateKey
	payerATA       solana.PublicKey
	settledSig     solana.Signature
	now            time.Time
	ledger         *fakeLedger
	mint, mintAuth solana.PublicKey
}

func newFixture(t testing.TB) *fixture {
	t.Helper()
	f := &fixture{now: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
	f.payer, f.feePay = solana.NewWallet().PrivateKey, solana.NewWallet().PrivateKey
	f.mint, f.mintAuth = solana.NewWallet().PublicKey(), solana.NewWallet().PublicKey()
	f.payerATA, _, _ = solana.FindAssociatedTokenAddress(f.payer.PublicKey(), f.mint)
	clock := &x402.SVMClock{Seed: []byte("test"), Now: func() time.Time { return f.now }}
	f.ledger = &fakeLedger{balances: map[string]uint64{f.payer.PublicKey().String(): 1_250_000}, txs: map[string][]byte{}, at: f.now.Add(-time.Minute)}

	// A settled payment: the payer's transfer, co-signed by the fee payer.
	_, hash, _ := clock.Latest()
	req := x402.PaymentRequirements{Scheme: "exact", Network: "solana:EtWTRABZaYq6iMfeYKouRu166VU2xqa1", Amount: "10000",
		Asset: f.mint.String(), PayTo: solana.NewWallet().PublicKey().String(), Extra: map[string]any{"feePayer": f.feePay.PublicKey().String()}}
	p, err := x402.SignSVM(req, f.payer, hash)
	if err != nil {
		t.Fatal(err)
	}
	var sp x402.SVMPayload
	_ = json.Unmarshal(p.Payload, &sp)
	tx, _ := solana.TransactionFromBase64(sp.Transaction)
	// The official client sends version 0 messages.
	tx.Message.SetVersion(solana.MessageVersionV0)
	sigs, err := tx.Sign(func(k solana.PublicKey) *solana.PrivateKey {
		for _, pk := range []solana.PrivateKey{f.payer, f.feePay} {
			if pk.PublicKey().Equals(k) {
				return &pk
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	f.settledSig = sigs[0]
	wire, _ := tx.MarshalBinary()
	f.ledger.txs[f.settledSig.String()] = wire

	f.net = &svmrpc.Network{Clock: clock, Ledger: f.ledger, Mint: f.mint, MintAuthority: f.mintAuth, Decimals: 6, FeePayer: f.feePay.PublicKey()}
	srv := httptest.NewServer(f.net.Handler())
	t.Cleanup(srv.Close)
	f.url, f.client = srv.URL, rpc.New(srv.URL)
	return f
}

// call posts a raw request and returns the raw response object.
func (f *fixture) call(t *testing.T, body string) map[string]any {
	t.Helper()
	resp, err := http.Post(f.url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var out map[string]any
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.UseNumber()
	if err := dec.Decode(&out); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	return out
}

func TestLatestBlockhashAndValidity(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	bh, err := f.client.GetLatestBlockhash(ctx, rpc.CommitmentFinalized)
	if err != nil {
		t.Fatal(err)
	}
	if bh.Value.LastValidBlockHeight != bh.Context.Slot+x402.SVMBlockhashWindow || bh.Value.Blockhash.IsZero() {
		t.Fatalf("latest blockhash %+v at slot %d", bh.Value, bh.Context.Slot)
	}
	valid, err := f.client.IsBlockhashValid(ctx, bh.Value.Blockhash, rpc.CommitmentFinalized)
	if err != nil || !valid.Value {
		t.Fatalf("fresh blockhash: %v %v", valid, err)
	}
	f.now = f.now.Add(61 * time.Second) // 152 slots later: out of the window
	valid, err = f.client.IsBlockhashValid(ctx, bh.Value.Blockhash, rpc.CommitmentFinalized)
	if err != nil || valid.Value {
		t.Fatalf("expired blockhash: %v %v", valid, err)
	}
	if valid, _ := f.client.IsBlockhashValid(ctx, solana.Hash{1}, ""); valid.Value {
		t.Fatal("an unknown blockhash is valid")
	}
}

func TestMintAccount(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	res, err := f.client.GetAccountInfoWithOpts(ctx, f.mint, &rpc.GetAccountInfoOpts{Encoding: solana.EncodingBase64})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Value.Owner.Equals(solana.TokenProgramID) || res.Value.Space != 82 || res.Value.Lamports != 1461600 {
		t.Fatalf("mint account %+v", res.Value)
	}
	var m token.Mint
	if err := bin.NewBinDecoder(res.Value.Data.GetBinary()).Decode(&m); err != nil {
		t.Fatal(err)
	}
	if m.Decimals != 6 || !m.IsInitialized || m.Supply != 1_250_000 || !m.MintAuthority.Equals(f.mintAuth) || m.FreezeAuthority != nil {
		t.Fatalf("mint %+v", m)
	}

	// jsonParsed, compared with the documented shape.
	raw := f.call(t, `{"jsonrpc":"2.0","id":1,"method":"getAccountInfo","params":["`+f.mint.String()+`",{"encoding":"jsonParsed"}]}`)
	got, _ := json.Marshal(raw["result"].(map[string]any)["value"])
	want := `{"data":{"parsed":{"info":{"decimals":6,"freezeAuthority":null,"isInitialized":true,"mintAuthority":"` + f.mintAuth.String() + `","supply":"1250000"},"type":"mint"},"program":"spl-token","space":82},"executable":false,"lamports":1461600,"owner":"TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA","rentEpoch":18446744073709551615,"space":82}`
	if string(got) != want {
		t.Fatalf("jsonParsed mint\n got %s\nwant %s", got, want)
	}
}

func TestTokenAccount(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	res, err := f.client.GetAccountInfoWithOpts(ctx, f.payerATA, &rpc.GetAccountInfoOpts{Encoding: solana.EncodingBase64})
	if err != nil {
		t.Fatal(err)
	}
	var a token.Account
	if err := bin.NewBinDecoder(res.Value.Data.GetBinary()).Decode(&a); err != nil {
		t.Fatal(err)
	}
	if len(res.Value.Data.GetBinary()) != 165 || !a.Owner.Equals(f.payer.PublicKey()) || !a.Mint.Equals(f.mint) || a.Amount != 1_250_000 || a.State != token.Initialized {
		t.Fatalf("token account %+v", a)
	}
	raw := f.call(t, `{"jsonrpc":"2.0","id":1,"method":"getAccountInfo","params":["`+f.payerATA.String()+`",{"encoding":"jsonParsed"}]}`)
	got, _ := json.Marshal(raw["result"].(map[string]any)["value"].(map[string]any)["data"])
	want := `{"parsed":{"info":{"isNative":false,"mint":"` + f.mint.String() + `","owner":"` + f.payer.PublicKey().String() + `","state":"initialized","tokenAmount":{"amount":"1250000","decimals":6,"uiAmount":1.25,"uiAmountString":"1.25"}},"type":"account"},"program":"spl-token","space":165}`
	if string(got) != want {
		t.Fatalf("jsonParsed token account\n got %s\nwant %s", got, want)
	}

	bal, err := f.client.GetTokenAccountBalance(ctx, f.payerATA, "")
	if err != nil || bal.Value.Amount != "1250000" || bal.Value.UiAmountString != "1.25" || bal.Value.Decimals != 6 {
		t.Fatalf("token balance %+v %v", bal, err)
	}
	byOwner, err := f.client.GetTokenAccountsByOwner(ctx, f.payer.PublicKey(), &rpc.GetTokenAccountsConfig{Mint: &f.mint}, &rpc.GetTokenAccountsOpts{Encoding: solana.EncodingBase64})
	if err != nil || len(byOwner.Value) != 1 || !byOwner.Value[0].Pubkey.Equals(f.payerATA) {
		t.Fatalf("token accounts by owner %+v %v", byOwner, err)
	}
	prog := solana.TokenProgramID
	byProg, err := f.client.GetTokenAccountsByOwner(ctx, f.payer.PublicKey(), &rpc.GetTokenAccountsConfig{ProgramId: &prog}, &rpc.GetTokenAccountsOpts{Encoding: solana.EncodingJSONParsed})
	if err != nil || len(byProg.Value) != 1 {
		t.Fatalf("token accounts by program %+v %v", byProg, err)
	}
	none, err := f.client.GetTokenAccountsByOwner(ctx, solana.NewWallet().PublicKey(), &rpc.GetTokenAccountsConfig{Mint: &f.mint}, nil)
	if err != nil || len(none.Value) != 0 {
		t.Fatalf("stranger's token accounts %+v %v", none, err)
	}

	// An unknown account is null; base58 refuses more than 128 bytes.
	if res, err := f.client.GetAccountInfoWithOpts(ctx, solana.NewWallet().PublicKey(), &rpc.GetAccountInfoOpts{Encoding: solana.EncodingBase64}); err != rpc.ErrNotFound {
		t.Fatalf("unknown account: %+v %v", res, err)
	}
	raw = f.call(t, `{"jsonrpc":"2.0","id":1,"method":"getAccountInfo","params":["`+f.payerATA.String()+`"]}`)
	if e := raw["error"].(map[string]any); e["code"] != json.Number("-32602") || !strings.Contains(e["message"].(string), "less than 128 bytes") {
		t.Fatalf("base58 token account: %v", raw)
	}
}

func TestBalancesAndRent(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	bal, err := f.client.GetBalance(ctx, f.feePay.PublicKey(), "")
	if err != nil || bal.Value == 0 {
		t.Fatalf("fee payer balance %+v %v", bal, err)
	}
	bal, err = f.client.GetBalance(ctx, f.payerATA, "")
	if err != nil || bal.Value != 2039280 {
		t.Fatalf("token account lamports %+v %v", bal, err)
	}
	rent, err := f.client.GetMinimumBalanceForRentExemption(ctx, 165, "")
	if err != nil || rent != 2039280 {
		t.Fatalf("rent %d %v", rent, err)
	}
}

func TestSettledTransaction(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	unknown := solana.Signature{7}
	st, err := f.client.GetSignatureStatuses(ctx, true, f.settledSig, unknown)
	if err != nil || len(st.Value) != 2 || st.Value[1] != nil || st.Value[0] == nil || st.Value[0].ConfirmationStatus != rpc.ConfirmationStatusFinalized || st.Value[0].Err != nil {
		t.Fatalf("statuses %+v %v", st, err)
	}
	v := uint64(0)
	tx, err := f.client.GetTransaction(ctx, f.settledSig, &rpc.GetTransactionOpts{Encoding: solana.EncodingBase64, MaxSupportedTransactionVersion: &v})
	if err != nil {
		t.Fatal(err)
	}
	parsed, err := tx.Transaction.GetTransaction()
	if err != nil || parsed.Signatures[0] != f.settledSig || tx.Meta.Err != nil || tx.BlockTime == nil {
		t.Fatalf("transaction %+v %v", tx, err)
	}
	if _, err := f.client.GetTransaction(ctx, unknown, &rpc.GetTransactionOpts{MaxSupportedTransactionVersion: &v}); err != rpc.ErrNotFound {
		t.Fatalf("unknown transaction: %v", err)
	}
}

func TestErrors(t *testing.T) {
	f := newFixture(t)
	for _, c := range []struct{ body, want string }{
		{`{"jsonrpc":"2.0","id":1,"method":"sendTransactionX","params":[]}`, `{"code":-32601,"message":"Method not found"}`},
		{`{"jsonrpc":"2.0","id":1,"method":"getBalance","params":["nope"]}`, `{"code":-32602,"message":"Invalid param: WrongSize"}`},
		{`{"jsonrpc":"2.0","id":1,"method":"getBalance","params":[]}`, `{"code":-32602,"message":"` + "`params` should have at least 1 argument(s)" + `"}`},
		{`{"jsonrpc":"2.0","id":1,"method":"getAccountInfo","params":["` + f.mint.String() + `",{"encoding":"hex"}]}`, "{\"code\":-32602,\"message\":\"Invalid params: unknown variant `hex`, expected one of `binary`, `base58`, `base64`, `jsonParsed`, `base64+zstd`.\"}"},
		{`{"jsonrpc":"2.0","id":1,"method":"getTokenAccountBalance","params":["` + solana.NewWallet().PublicKey().String() + `"]}`, `{"code":-32602,"message":"Invalid param: could not find account"}`},
		{`{"jsonrpc":"2.0","id":1,"method":"getTokenAccountBalance","params":["` + f.mint.String() + `"]}`, `{"code":-32602,"message":"Invalid param: not a Token account"}`},
		{`{"jsonrpc":"2.0","id":1,"method":"getTransaction","params":["` + f.settledSig.String() + `"]}`, `{"code":-32015,"message":"Transaction version (0) is not supported by the requesting client. Please try the request again with the following configuration parameter: \"maxSupportedTransactionVersion\": 0"}`},
		{`{"jsonrpc":"2.0","id":1,"method"`, `{"code":-32700,"message":"Parse error"}`},
		{`{"id":1,"method":"getHealth"}`, `{"code":-32600,"message":"Invalid request"}`},
	} {
		raw := f.call(t, c.body)
		got, _ := json.Marshal(raw["error"])
		if string(got) != c.want || raw["jsonrpc"] != "2.0" {
			t.Errorf("%s\n got %s (%v)\nwant %s", c.body, got, raw, c.want)
		}
	}
	// A batch answers each entry.
	resp, err := http.Post(f.url, "application/json", strings.NewReader(`[{"jsonrpc":"2.0","id":1,"method":"getHealth"},{"jsonrpc":"2.0","id":2,"method":"nope"}]`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var batch []map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&batch); err != nil || len(batch) != 2 || batch[0]["result"] != "ok" || batch[1]["error"] == nil || batch[1]["id"] != 2.0 {
		t.Fatalf("batch %v %v", batch, err)
	}
}

// Browser wallets call from their own origin: the preflight is allowed and
// answers carry the CORS header; other methods than POST are refused.
func TestHTTP(t *testing.T) {
	f := newFixture(t)
	req, _ := http.NewRequest(http.MethodOptions, f.url, nil)
	req.Header.Set("Origin", "https://wallet.example")
	req.Header.Set("Access-Control-Request-Method", "POST")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Access-Control-Allow-Origin") != "*" || !strings.Contains(resp.Header.Get("Access-Control-Allow-Methods"), "POST") {
		t.Fatalf("preflight: %d %v", resp.StatusCode, resp.Header)
	}
	resp, err = http.Get(f.url)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Fatalf("GET: %d", resp.StatusCode)
	}
	resp, err = http.Post(f.url, "application/json", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"getHealth"}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.Header.Get("Access-Control-Allow-Origin") != "*" || !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
		t.Fatalf("POST headers: %v", resp.Header)
	}
}
