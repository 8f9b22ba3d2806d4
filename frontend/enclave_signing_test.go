package frontend_test

import (
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"math/big"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	ethaccounts "github.com/ethereum/go-ethereum/accounts"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/rlp"
	"github.com/gagliardetto/solana-go"
	"github.com/gagliardetto/solana-go/programs/system"
	"github.com/mr-tron/base58"

	"conduit/app/apptest"
	"conduit/internal/accounts"
	"conduit/internal/apikey"
	"conduit/internal/attest"
	"conduit/internal/signer"
)

// scopedKey is another key of acct holding only scopes.
func scopedKey(t *testing.T, acct string, scopes ...string) string {
	t.Helper()
	_, k, err := env.Platform.Accounts().CreateKey(context.Background(), acct, accounts.KeyRequest{Name: "scoped", Permissions: scopes})
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// deployedEnclave creates an enclave from the test app and waits for it
// to run; it answers the id and the record.
func deployedEnclave(t *testing.T, key, repo string) (string, map[string]any) {
	t.Helper()
	return deployedFrom(t, key, env.PushEnclaveApp(t, repo, "v1"))
}

// deployedFrom deploys the image ref names.
func deployedFrom(t *testing.T, key, ref string) (string, map[string]any) {
	t.Helper()
	created := wantStatus(t, do(t, "POST", "/api/enclaves", key, enclaveBody(ref)), http.StatusAccepted)
	id := created["id"].(string)
	// Nothing keeps running after the test (a test that destroyed it
	// already gets a 409 here, which is fine).
	t.Cleanup(func() { do(t, "POST", "/api/enclaves/"+id+"/terminate", key, nil) })
	return id, waitEnclave(t, key, id, "DEPLOYED", 2*time.Minute)
}

func checkNamed(t *testing.T, checks []any, name string) map[string]any {
	t.Helper()
	for _, c := range checks {
		if m := c.(map[string]any); m["name"] == name {
			return m
		}
	}
	t.Fatalf("no check %q in %v", name, checks)
	return nil
}

func recordPCRs(t *testing.T, rec map[string]any) map[int][]byte {
	t.Helper()
	out := map[int][]byte{}
	for k, v := range rec["pcrs"].(map[string]any) {
		var i int
		fmt.Sscan(k, &i)
		b, err := hex.DecodeString(v.(string))
		if err != nil {
			t.Fatal(err)
		}
		out[i] = b
	}
	return out
}

// The attestation record, verified here independently of the platform's
// verdict: the document chains to the platform's root, carries the PCRs
// the deployment recorded and the nonce, and binds the enclave's address.
func TestEnclaveAttestationRoutes(t *testing.T) {
	acct, key := env.NewAccount(t)
	id, rec := deployedEnclave(t, key, "attest/echo")
	root := env.Platform.Enclaves.Root
	if root == nil {
		t.Fatal("the platform has no attestation root")
	}

	a := wantStatus(t, do(t, "GET", "/api/enclaves/"+id+"/attestation", key, nil), http.StatusOK)
	v := a["verification"].(map[string]any)
	if v["verificationStatus"] != "verified" || v["trustLevel"] != "local" || v["integrityScore"] != float64(100) {
		t.Fatalf("verification: %v", v)
	}
	doc := a["attestationDocument"].(map[string]any)
	pcrs := doc["pcrs"].(map[string]any)
	for _, k := range []string{"0", "1", "2"} {
		if pcrs[k] != rec["pcrs"].(map[string]any)[k] {
			t.Fatalf("PCR%s: %v, record %v", k, pcrs[k], rec["pcrs"])
		}
	}
	if _, ok := pcrs["8"]; !ok || pcrs["8"] != nil {
		t.Fatalf("PCR8 of an unsigned image: %v", pcrs)
	}
	if doc["moduleId"] != id || doc["digest"] != "SHA384" || doc["certificate"] == "" {
		t.Fatalf("document fields: %v", doc)
	}
	ep := a["endpoints"].(map[string]any)
	if ep["verificationUrl"] != env.URL+"/api/enclaves/"+id+"/attestation/verify" || ep["apiEndpoint"] != "http://"+rec["endpoint"].(string) || ep["webhookUrl"] != nil {
		t.Fatalf("endpoints: %v", ep)
	}
	if a["signingKeys"].(map[string]any)["evmAddress"] != rec["walletAddress"] {
		t.Fatalf("signing keys %v, wallet %v", a["signingKeys"], rec["walletAddress"])
	}
	raw, err := base64.StdEncoding.DecodeString(doc["document"].(string))
	if err != nil {
		t.Fatal(err)
	}
	nonce, _ := hex.DecodeString(v["nonce"].(string))
	if len(nonce) != 32 {
		t.Fatalf("a fresh nonce: %x", nonce)
	}
	own := attest.Verify(raw, attest.VerifyOptions{Root: root, PCRs: recordPCRs(t, rec), Nonce: nonce})
	if !own.Verified() || own.IntegrityScore != 100 {
		t.Fatalf("verified independently: %+v", own)
	}
	if addr, err := own.EVMAddress(); err != nil || addr.Hex() != rec["walletAddress"] {
		t.Fatalf("attested address %v %v", addr, err)
	}

	// verify with the caller's nonce, hex and base64.
	for _, n := range []struct{ q, want string }{
		{"0x00112233445566778899aabbccddeeff", "00112233445566778899aabbccddeeff"},
		{"c2lnbi1tZS0x", hex.EncodeToString([]byte("sign-me-1"))},
		{base64.RawURLEncoding.EncodeToString([]byte{0xfb, 0xff, 0xfe}), "fbfffe"},
	} {
		r := wantStatus(t, do(t, "GET", "/api/enclaves/"+id+"/attestation/verify?nonce="+url.QueryEscape(n.q), key, nil), http.StatusOK)
		v := r["verification"].(map[string]any)
		if v["verificationStatus"] != "verified" || v["nonce"] != n.want || v["nonceSource"] != "caller" ||
			r["attestationDocument"].(map[string]any)["nonce"] != n.want {
			t.Fatalf("nonce %s: %v", n.q, r)
		}
		checks := v["checks"].([]any)
		if len(checks) != 10 {
			t.Fatalf("every check is reported: %v", checks)
		}
		for _, c := range checks {
			if c.(map[string]any)["ok"] != true {
				t.Fatalf("check %v", c)
			}
		}
	}
	for _, bad := range []string{"not*base64", "0x123", strings.Repeat("ab", 513), ""} {
		r := wantStatus(t, do(t, "GET", "/api/enclaves/"+id+"/attestation/verify?nonce="+url.QueryEscape(bad), key, nil), http.StatusBadRequest)
		if !strings.Contains(r["error"].(string), "nonce") {
			t.Fatalf("nonce %q: %v", bad, r)
		}
	}

	// Tampering with what the deployment measured: the record's PCR2 is
	// what the verifier expects, so the live document fails on pcrs.
	conn := dbConn(t)
	ctx := context.Background()
	if _, err := conn.Exec(ctx, `UPDATE enclaves SET pcrs = jsonb_set(pcrs, '{2}', to_jsonb($2::text)) WHERE id = $1`, id, strings.Repeat("ab", 48)); err != nil {
		t.Fatal(err)
	}
	r := wantStatus(t, do(t, "GET", "/api/enclaves/"+id+"/attestation/verify?nonce=0xabcd", key, nil), http.StatusOK)
	v = r["verification"].(map[string]any)
	if v["verificationStatus"] != "failed" || v["trustLevel"] != "none" || v["integrityScore"] != float64(0) {
		t.Fatalf("tampered PCRs: %v", v)
	}
	pc := checkNamed(t, v["checks"].([]any), "pcrs")
	if pc["ok"] != false || !strings.Contains(pc["detail"].(string), "PCR2") {
		t.Fatalf("the pcrs check: %v", pc)
	}
	if c := checkNamed(t, v["checks"].([]any), "signature"); c["ok"] != true {
		t.Fatalf("only the pcrs check fails: %v", v["checks"])
	}
	if _, ok := r["signingKeys"]; ok {
		t.Fatalf("an unverified document's keys are not offered: %v", r)
	}
	// A record with no PCRs at all verifies nothing.
	if _, err := conn.Exec(ctx, `UPDATE enclaves SET pcrs = '{}' WHERE id = $1`, id); err != nil {
		t.Fatal(err)
	}
	v = wantStatus(t, do(t, "GET", "/api/enclaves/"+id+"/attestation", key, nil), http.StatusOK)["verification"].(map[string]any)
	if c := checkNamed(t, v["checks"].([]any), "pcrs"); v["verificationStatus"] != "failed" || c["ok"] != false || !strings.Contains(c["detail"].(string), "recorded no PCRs") {
		t.Fatalf("no recorded PCRs: %v", v)
	}
	if _, err := conn.Exec(ctx, `UPDATE enclaves SET pcrs = $2 WHERE id = $1`, id, rec["pcrs"]); err != nil {
		t.Fatal(err)
	}
	if v := wantStatus(t, do(t, "GET", "/api/enclaves/"+id+"/attestation", key, nil), http.StatusOK)["verification"].(map[string]any); v["verificationStatus"] != "verified" {
		t.Fatalf("restored: %v", v)
	}

	// Many callers at once: each gets a verified document of its own, or
	// a 429 when more updates are in flight than Temporal takes per
	// workflow; never an error.
	var wg sync.WaitGroup
	results := make([]*apptest.Response, 16)
	for i := range results {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i] = env.Do(t, "GET", fmt.Sprintf("/api/enclaves/%s/attestation/verify?nonce=%04x", id, i), nil, apptest.Bearer(key)...)
		}()
	}
	wg.Wait()
	busy := 0
	for i, r := range results {
		switch r.Status {
		case http.StatusOK:
			v := r.JSON(t)["verification"].(map[string]any)
			if v["verificationStatus"] != "verified" || v["nonce"] != fmt.Sprintf("%04x", i) {
				t.Fatalf("concurrent %d: %v", i, v)
			}
		case http.StatusTooManyRequests:
			if r.Header.Get("Retry-After") == "" {
				t.Fatalf("a 429 without Retry-After")
			}
			busy++
		default:
			t.Fatalf("concurrent %d: %d %s", i, r.Status, r.Body)
		}
	}
	t.Logf("%d concurrent verifications, %d answered busy", len(results), busy)

	// Scopes and ownership.
	_, other := env.NewAccount(t)
	wantStatus(t, do(t, "GET", "/api/enclaves/"+id+"/attestation", other, nil), http.StatusNotFound)
	wantStatus(t, do(t, "GET", "/api/enclaves/"+id+"/attestation/verify", other, nil), http.StatusNotFound)
	writeOnly := scopedKey(t, acct, apikey.EnclavesWrite)
	wantStatus(t, do(t, "GET", "/api/enclaves/"+id+"/attestation", writeOnly, nil), http.StatusForbidden)
	wantStatus(t, do(t, "GET", "/api/enclaves/"+id+"/attestation/verify", writeOnly, nil), http.StatusForbidden)

	// Only a running enclave attests.
	wantStatus(t, do(t, "POST", "/api/enclaves/"+id+"/pause", key, nil), http.StatusOK)
	r = wantStatus(t, do(t, "GET", "/api/enclaves/"+id+"/attestation", key, nil), http.StatusConflict)
	if r["status"] != "PAUSED" || !strings.Contains(r["error"].(string), "PAUSED") {
		t.Fatalf("paused: %v", r)
	}
	wantStatus(t, do(t, "POST", "/api/enclaves/"+id+"/terminate", key, nil), http.StatusOK)
	r = wantStatus(t, do(t, "GET", "/api/enclaves/"+id+"/attestation/verify", key, nil), http.StatusConflict)
	if r["status"] != "DESTROYED" {
		t.Fatalf("destroyed: %v", r)
	}
}

// evmTx is a wallet-style unsigned transaction from the enclave.
func evmTx(t *testing.T, nonce uint64, to common.Address, value int64) map[string]any {
	t.Helper()
	chain := env.Platform.Payments.Chain
	fee, tip, err := chain.Fees(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return map[string]any{
		"chainId": hexutil.EncodeBig(chain.ChainID), "nonce": fmt.Sprint(nonce), "to": to.Hex(),
		"value": value, "gas": "0x5208", "maxFeePerGas": fee.String(), "maxPriorityFeePerGas": hexutil.EncodeBig(tip), "data": "0x",
	}
}

func recoverPersonal(t *testing.T, msg []byte, sigHex string) common.Address {
	t.Helper()
	sig := hexutil.MustDecode(sigHex)
	if len(sig) != 65 || (sig[64] != 27 && sig[64] != 28) {
		t.Fatalf("a wallet signature: %x", sig)
	}
	sig[64] -= 27
	pub, err := crypto.SigToPub(ethaccounts.TextHash(msg), sig)
	if err != nil {
		t.Fatal(err)
	}
	return crypto.PubkeyToAddress(*pub)
}

// mailTypedData is EIP-712's own example; its digest is given in the EIP.
func mailTypedData() map[string]any {
	return map[string]any{
		"types": map[string]any{
			"EIP712Domain": []map[string]string{{"name": "name", "type": "string"}, {"name": "version", "type": "string"}, {"name": "chainId", "type": "uint256"}, {"name": "verifyingContract", "type": "address"}},
			"Person":       []map[string]string{{"name": "name", "type": "string"}, {"name": "wallet", "type": "address"}},
			"Mail":         []map[string]string{{"name": "from", "type": "Person"}, {"name": "to", "type": "Person"}, {"name": "contents", "type": "string"}},
		},
		"primaryType": "Mail",
		"domain":      map[string]any{"name": "Ether Mail", "version": "1", "chainId": 1, "verifyingContract": "0xCcCCccccCCCCcCCCCCCcCcCccCcCCCcCcccccccC"},
		"message": map[string]any{
			"from":     map[string]any{"name": "Cow", "wallet": "0xCD2a3d9F938E13CD947Ec05AbC7FE734Df8DD826"},
			"to":       map[string]any{"name": "Bob", "wallet": "0xbBbBBBBbbBBBbbbBbbBbbbbBBbBbbbbBbBbbBBbB"},
			"contents": "Hello, Bob!",
		},
	}
}

const mailDigest = "0xbe609aee343fb3c4b28e1df9e632fca64fcfaede20f02e86244efddf30957bd2"

// solanaTransfer is an unsigned transfer paid by payer, base64.
func solanaTransfer(t *testing.T, payer, to solana.PublicKey) string {
	t.Helper()
	var bh solana.Hash
	copy(bh[:], crypto.Keccak256([]byte(t.Name())))
	tx, err := solana.NewTransaction([]solana.Instruction{system.NewTransferInstruction(1000, payer, to).Build()}, bh, solana.TransactionPayer(payer))
	if err != nil {
		t.Fatal(err)
	}
	b, err := tx.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	return base64.StdEncoding.EncodeToString(b)
}

// Signing with the enclave-held keys: every signature recovers to the
// attested address (go-ethereum, solana-go), and the signed EVM
// transactions are accepted by the embedded EVM chain.
func TestEnclaveSigning(t *testing.T) {
	acct, key := env.NewAccount(t)
	id, rec := deployedEnclave(t, key, "sign/echo")
	ctx := context.Background()
	chain := env.Platform.Payments.Chain
	base := "/api/enclaves/" + id

	st := wantStatus(t, do(t, "GET", base+"/signer", key, nil), http.StatusOK)
	if s := st["signer"].(map[string]any); s["state"] != "attestation_verified" || s["canSign"] != true || st["evmAddress"] != rec["walletAddress"] {
		t.Fatalf("signer: %v", st)
	}
	if s := wantStatus(t, do(t, "GET", base+"/signer?verify=false", key, nil), http.StatusOK)["signer"].(map[string]any); s["state"] != "connected" || s["canSign"] != false {
		t.Fatalf("connected: %v", s)
	}
	wallet := common.HexToAddress(rec["walletAddress"].(string))
	solKey := solana.MustPublicKeyFromBase58(st["solanaPublicKey"].(string))

	// EVM: fund the attested address, sign a transfer, send it.
	if _, err := chain.Fund(ctx, wallet, big.NewInt(1e18)); err != nil {
		t.Fatal(err)
	}
	to := common.BytesToAddress(crypto.Keccak256([]byte("payee " + id))[:20])
	r := do(t, "POST", base+"/sign/transaction", key, map[string]any{"transaction": evmTx(t, 0, to, 12345)})
	out := wantStatus(t, r, http.StatusOK)
	if r.Header.Get("Warning") != "" || r.Header.Get("X-Signer-State") != "attestation_verified" {
		t.Fatalf("headers: %v", r.Header)
	}
	if out["from"] != wallet.Hex() || out["signer"].(map[string]any)["state"] != "attestation_verified" ||
		out["attestation"].(map[string]any)["verificationStatus"] != "verified" {
		t.Fatalf("signed: %v", out)
	}
	var tx types.Transaction
	if err := tx.UnmarshalBinary(hexutil.MustDecode(out["signedTransaction"].(string))); err != nil {
		t.Fatal(err)
	}
	if from, err := types.Sender(types.NewCancunSigner(chain.ChainID), &tx); err != nil || from != wallet {
		t.Fatalf("the transaction recovers to %v (%v), want %v", from, err, wallet)
	}
	if from, err := types.Sender(types.NewLondonSigner(chain.ChainID), &tx); err != nil || from != wallet {
		t.Fatalf("London signer: %v %v", from, err)
	}
	if tx.Hash().Hex() != out["transactionHash"] || tx.Type() != types.DynamicFeeTxType || tx.Value().Int64() != 12345 {
		t.Fatalf("transaction %v vs %v", tx.Hash(), out)
	}
	// The attestation in the answer was made for this request.
	att := out["attestation"].(map[string]any)
	doc, _ := base64.StdEncoding.DecodeString(att["document"].(string))
	nonce, _ := hex.DecodeString(att["nonce"].(string))
	signingHash := types.LatestSignerForChainID(chain.ChainID).Hash(&tx)
	if rep := attest.Verify(doc, attest.VerifyOptions{Root: env.Platform.Enclaves.Root, PCRs: recordPCRs(t, rec), Nonce: nonce}); !rep.Verified() ||
		!signer.CommitsTo(nonce, signer.Request{Purpose: signer.PurposeEVMHash, Payload: signingHash[:]}) {
		t.Fatalf("the attestation before signing: %+v", rep.Checks)
	}
	receipt, err := chain.SendRawTransaction(ctx, hexutil.MustDecode(out["signedTransaction"].(string)))
	if err != nil || receipt.Status != types.ReceiptStatusSuccessful {
		t.Fatalf("the chain refused the transaction: %v %v", receipt, err)
	}
	if b, _ := chain.Balance(ctx, to); b.Int64() != 12345 {
		t.Fatalf("the payee holds %v", b)
	}

	// The RLP form wallets serialise (0x02 ‖ rlp of the unsigned fields).
	fee, tip, _ := chain.Fees(ctx)
	unsigned, err := rlp.EncodeToBytes([]any{chain.ChainID, uint64(1), tip, fee, uint64(21000), to, big.NewInt(5), []byte{}, types.AccessList{}})
	if err != nil {
		t.Fatal(err)
	}
	out = wantStatus(t, do(t, "POST", base+"/sign/transaction", key, map[string]any{"unsignedTransaction": hexutil.Encode(append([]byte{2}, unsigned...))}), http.StatusOK)
	if receipt, err := chain.SendRawTransaction(ctx, hexutil.MustDecode(out["signedTransaction"].(string))); err != nil || receipt.Status != types.ReceiptStatusSuccessful {
		t.Fatalf("the RLP-form transaction: %v %v", receipt, err)
	}
	if b, _ := chain.Balance(ctx, to); b.Int64() != 12350 {
		t.Fatalf("the payee holds %v", b)
	}

	// personal_sign and EIP-712.
	out = wantStatus(t, do(t, "POST", base+"/sign/message", key, map[string]any{"message": "hello enclave"}), http.StatusOK)
	if got := recoverPersonal(t, []byte("hello enclave"), out["signature"].(string)); got != wallet || out["address"] != wallet.Hex() {
		t.Fatalf("personal_sign recovers to %v: %v", got, out)
	}
	out = wantStatus(t, do(t, "POST", base+"/sign/message", key, map[string]any{"message": "0xdeadbeef"}), http.StatusOK)
	if got := recoverPersonal(t, []byte{0xde, 0xad, 0xbe, 0xef}, out["signature"].(string)); got != wallet {
		t.Fatalf("hex message recovers to %v", got)
	}
	out = wantStatus(t, do(t, "POST", base+"/sign/typed-data", key, mailTypedData()), http.StatusOK)
	if out["digest"] != mailDigest {
		t.Fatalf("EIP-712 digest %v", out["digest"])
	}
	sig := hexutil.MustDecode(out["signature"].(string))
	sig[64] -= 27
	if pub, err := crypto.SigToPub(hexutil.MustDecode(mailDigest), sig); err != nil || crypto.PubkeyToAddress(*pub) != wallet {
		t.Fatalf("typed data recovers to %v %v", pub, err)
	}
	// The ethers form: value, no primaryType, no EIP712Domain.
	td := mailTypedData()
	delete(td["types"].(map[string]any), "EIP712Domain")
	delete(td, "primaryType")
	td["value"] = td["message"]
	delete(td, "message")
	if out := wantStatus(t, do(t, "POST", base+"/sign/typed-data", key, td), http.StatusOK); out["digest"] != mailDigest {
		t.Fatalf("ethers form digest %v", out["digest"])
	}

	// Solana: the enclave's key pays; the signature verifies.
	out = wantStatus(t, do(t, "POST", base+"/sign/transaction", key, map[string]any{"chain": "solana", "transaction": solanaTransfer(t, solKey, solana.NewWallet().PublicKey())}), http.StatusOK)
	stx, err := solana.TransactionFromBase64(out["signedTransaction"].(string))
	if err != nil {
		t.Fatal(err)
	}
	if err := stx.VerifySignatures(); err != nil || stx.Signatures[0].String() != out["signature"] || out["from"] != solKey.String() {
		t.Fatalf("Solana transaction: %v %v", err, out)
	}
	out = wantStatus(t, do(t, "POST", base+"/sign/message", key, map[string]any{"chain": "solana", "message": "gm"}), http.StatusOK)
	if s, _ := base58.Decode(out["signature"].(string)); !ed25519.Verify(ed25519.PublicKey(solKey[:]), []byte("gm"), s) || out["publicKey"] != solKey.String() {
		t.Fatalf("Solana message: %v", out)
	}

	// Bad input: 400s naming the field; nothing is signed.
	for _, c := range []struct {
		path  string
		body  map[string]any
		field string
	}{
		{"/sign/transaction", map[string]any{"transaction": map[string]any{"nonce": "0", "gas": "21000", "maxFeePerGas": "1", "maxPriorityFeePerGas": "1"}}, "transaction.chainId"},
		{"/sign/transaction", map[string]any{"transaction": func() map[string]any { m := evmTx(t, 2, to, 1); m["to"] = "0x1234"; return m }()}, "transaction.to"},
		{"/sign/transaction", map[string]any{"transaction": func() map[string]any { m := evmTx(t, 2, to, 1); m["value"] = "-1"; return m }()}, "transaction.value"},
		{"/sign/transaction", map[string]any{"transaction": func() map[string]any { m := evmTx(t, 2, to, 1); m["gasPrice"] = "1"; return m }()}, "transaction.gasPrice"},
		{"/sign/transaction", map[string]any{"transaction": func() map[string]any { m := evmTx(t, 2, to, 1); m["from"] = to.Hex(); return m }()}, "transaction.from"},
		{"/sign/transaction", map[string]any{"transaction": "0x01c0"}, "transaction"},
		{"/sign/transaction", map[string]any{"chain": "bitcoin", "transaction": "00"}, "chain"},
		{"/sign/transaction", map[string]any{"chain": "solana", "transaction": "%%%"}, "transaction"},
		{"/sign/transaction", map[string]any{"chain": "solana", "transaction": solanaTransfer(t, solana.NewWallet().PublicKey(), solKey)}, "transaction"},
		{"/sign/message", map[string]any{"message": ""}, "message"},
		{"/sign/message", map[string]any{"message": "zz", "encoding": "hex"}, "message"},
		{"/sign/typed-data", map[string]any{"types": map[string]any{}, "message": map[string]any{}}, "types"},
	} {
		r := wantStatus(t, do(t, "POST", base+c.path, key, c.body), http.StatusBadRequest)
		if !strings.HasPrefix(r["error"].(string), c.field) {
			t.Fatalf("%s %v: %v, want the field %s named", c.path, c.body, r, c.field)
		}
	}
	if n, _ := chain.Nonce(ctx, wallet); n != 2 {
		t.Fatalf("the enclave's account sent %d transactions", n)
	}

	// Scopes and ownership.
	_, other := env.NewAccount(t)
	readOnly := scopedKey(t, acct, apikey.EnclavesRead)
	wantStatus(t, do(t, "POST", base+"/sign/message", other, map[string]any{"message": "x"}), http.StatusNotFound)
	wantStatus(t, do(t, "GET", base+"/signer", other, nil), http.StatusNotFound)
	wantStatus(t, do(t, "POST", base+"/sign/message", readOnly, map[string]any{"message": "x"}), http.StatusForbidden)
	wantStatus(t, do(t, "PUT", base+"/signer/raw-key", readOnly, map[string]any{"evmPrivateKey": "0x01"}), http.StatusForbidden)
	wantStatus(t, do(t, "GET", base+"/signer", readOnly, nil), http.StatusOK)
}

// Every signer state (spec §3.8) on a real enclave: attestation
// verified, attestation failed (it cannot sign), disconnected (paused, or
// its agent gone), deprecated (a raw key signs, with a warning).
func TestEnclaveSignerStates(t *testing.T) {
	_, key := env.NewAccount(t)
	// Pulled through a registry the test can break, so that a lost
	// instance stays lost while the lifecycle tries to start it again.
	reg := newFlakyRegistry(t, env.Registry)
	env.PushEnclaveApp(t, "states/echo", "v1")
	id, rec := deployedFrom(t, key, reg.host()+"/states/echo:v1")
	base := "/api/enclaves/" + id
	ctx := context.Background()
	wallet := rec["walletAddress"].(string)
	msg := map[string]any{"message": "state check"}

	if out := wantStatus(t, do(t, "POST", base+"/sign/message", key, msg), http.StatusOK); recoverPersonal(t, []byte("state check"), out["signature"].(string)).Hex() != wallet {
		t.Fatalf("verified signer: %v", out)
	}

	// Attestation failed: the document no longer matches what the
	// deployment measured.
	conn := dbConn(t)
	if _, err := conn.Exec(ctx, `UPDATE enclaves SET pcrs = jsonb_set(pcrs, '{0}', to_jsonb($2::text)) WHERE id = $1`, id, strings.Repeat("00", 47)+"01"); err != nil {
		t.Fatal(err)
	}
	r := wantStatus(t, do(t, "POST", base+"/sign/message", key, msg), http.StatusConflict)
	if r["code"] != "ATTESTATION_FAILED" || !slices.Contains(r["failedChecks"].([]any), any("pcrs")) ||
		r["signer"].(map[string]any)["state"] != "attestation_failed" || r["signer"].(map[string]any)["canSign"] != false || r["signature"] != nil {
		t.Fatalf("attestation failed: %v", r)
	}
	st := wantStatus(t, do(t, "GET", base+"/signer", key, nil), http.StatusOK)["signer"].(map[string]any)
	if st["state"] != "attestation_failed" || fmt.Sprint(st["failedChecks"]) != "[pcrs]" {
		t.Fatalf("signer: %v", st)
	}
	if _, err := conn.Exec(ctx, `UPDATE enclaves SET pcrs = $2 WHERE id = $1`, id, rec["pcrs"]); err != nil {
		t.Fatal(err)
	}

	// Deprecated: a raw key signs instead of the enclave, with a warning.
	raw, _ := crypto.GenerateKey()
	rawAddr := crypto.PubkeyToAddress(raw.PublicKey)
	solRaw := solana.NewWallet().PrivateKey
	wantStatus(t, do(t, "PUT", base+"/signer/raw-key", key, map[string]any{"evmPrivateKey": "0x1234"}), http.StatusBadRequest)
	r2 := do(t, "PUT", base+"/signer/raw-key", key, map[string]any{"evmPrivateKey": hexutil.Encode(crypto.FromECDSA(raw)), "solanaPrivateKey": solRaw.String()})
	put := wantStatus(t, r2, http.StatusOK)
	if put["evmAddress"] != rawAddr.Hex() || put["solanaPublicKey"] != solRaw.PublicKey().String() || strings.Contains(string(r2.Body), "PrivateKey\":\"") {
		t.Fatalf("raw key: %s", r2.Body)
	}
	var sealed []byte
	if err := conn.QueryRow(ctx, `SELECT sealed FROM enclave_raw_keys WHERE enclave_id = $1`, id).Scan(&sealed); err != nil ||
		strings.Contains(string(sealed), hex.EncodeToString(crypto.FromECDSA(raw))) {
		t.Fatalf("the raw key is kept sealed: %v", err)
	}
	r3 := do(t, "GET", base+"/signer", key, nil)
	if s := wantStatus(t, r3, http.StatusOK); s["signer"].(map[string]any)["state"] != "deprecated" || r3.Header.Get("Warning") != signer.Warning {
		t.Fatalf("deprecated: %v %v", s, r3.Header)
	}
	r3 = do(t, "POST", base+"/sign/message", key, msg)
	out := wantStatus(t, r3, http.StatusOK)
	if r3.Header.Get("Warning") != signer.Warning || r3.Header.Get("X-Signer-State") != "deprecated" || out["signer"].(map[string]any)["state"] != "deprecated" || out["attestation"] != nil {
		t.Fatalf("deprecated signing: %v %v", out, r3.Header)
	}
	if got := recoverPersonal(t, []byte("state check"), out["signature"].(string)); got != rawAddr {
		t.Fatalf("the raw key signed as %v, want %v", got, rawAddr)
	}
	out = wantStatus(t, do(t, "POST", base+"/sign/transaction", key, map[string]any{"chain": "solana", "transaction": solanaTransfer(t, solRaw.PublicKey(), solana.NewWallet().PublicKey())}), http.StatusOK)
	if stx, err := solana.TransactionFromBase64(out["signedTransaction"].(string)); err != nil || stx.VerifySignatures() != nil {
		t.Fatalf("raw-key Solana transaction: %v %v", out, err)
	}

	// Disconnected: a paused enclave cannot sign (a 409 naming its state);
	// the deprecated signer needs no enclave and still signs.
	wantStatus(t, do(t, "POST", base+"/pause", key, nil), http.StatusOK)
	if out := wantStatus(t, do(t, "POST", base+"/sign/message", key, msg), http.StatusOK); out["signer"].(map[string]any)["state"] != "deprecated" {
		t.Fatalf("deprecated while paused: %v", out)
	}
	wantStatus(t, do(t, "DELETE", base+"/signer/raw-key", key, nil), http.StatusNoContent)
	wantStatus(t, do(t, "DELETE", base+"/signer/raw-key", key, nil), http.StatusNotFound)
	r = wantStatus(t, do(t, "POST", base+"/sign/message", key, msg), http.StatusConflict)
	if r["code"] != "SIGNER_DISCONNECTED" || r["status"] != "PAUSED" || r["signer"].(map[string]any)["state"] != "disconnected" || !strings.Contains(r["error"].(string), "PAUSED") {
		t.Fatalf("paused: %v", r)
	}
	if s := wantStatus(t, do(t, "GET", base+"/signer", key, nil), http.StatusOK)["signer"].(map[string]any); s["state"] != "disconnected" || s["canSign"] != false {
		t.Fatalf("paused signer: %v", s)
	}
	wantStatus(t, do(t, "POST", base+"/resume", key, nil), http.StatusOK)
	if s := wantStatus(t, do(t, "GET", base+"/signer", key, nil), http.StatusOK)["signer"].(map[string]any); s["state"] != "attestation_verified" {
		t.Fatalf("resumed signer: %v", s)
	}

	// Disconnected: the record says DEPLOYED but the agent is gone (the
	// worker's provider lost the instance, and starting it again waits for
	// the registry): 503, try again later.
	reg.down.Store(true)
	if err := env.Platform.Enclaves.Provider.Terminate(ctx, id); err != nil {
		t.Fatal(err)
	}
	r4 := do(t, "POST", base+"/sign/message", key, msg)
	r = wantStatus(t, r4, http.StatusServiceUnavailable)
	if r["code"] != "SIGNER_DISCONNECTED" || r["signer"].(map[string]any)["state"] != "disconnected" || r4.Header.Get("Retry-After") == "" {
		t.Fatalf("agent gone: %v", r)
	}
	if s := wantStatus(t, do(t, "GET", base+"/signer", key, nil), http.StatusOK)["signer"].(map[string]any); s["state"] != "disconnected" {
		t.Fatalf("agent gone, signer: %v", s)
	}
	wantStatus(t, do(t, "GET", base+"/attestation", key, nil), http.StatusServiceUnavailable)
	// The registry back, the lifecycle starts the instance again (the
	// retry runs now) and the enclave signs again, with the address its
	// record now names (Terminate above also removed the kept keys, which
	// a worker that dies does not).
	apptest.Eventually(t, time.Minute, "the lifecycle to ask the registry again", func() error {
		if reg.refused.Load() == 0 {
			return errors.New("no pull refused yet")
		}
		return nil
	})
	reg.down.Store(false)
	wantStatus(t, do(t, "POST", base+"/retry", key, nil), http.StatusOK)
	var r5 *apptest.Response
	apptest.Eventually(t, time.Minute, "signing again after the registry came back", func() error {
		if r5 = do(t, "POST", base+"/sign/message", key, msg); r5.Status != http.StatusOK {
			return fmt.Errorf("%d %s", r5.Status, r5.Body)
		}
		return nil
	})
	// The instance signs as soon as it runs; its record takes the new
	// address with the lifecycle's next write, a moment later.
	signedBy := recoverPersonal(t, []byte("state check"), r5.JSON(t)["signature"].(string)).Hex()
	apptest.Eventually(t, 30*time.Second, "the record to name the address that signed", func() error {
		if now := wantStatus(t, do(t, "GET", base, key, nil), http.StatusOK)["walletAddress"]; now != signedBy {
			return fmt.Errorf("after the restart the signature recovers to %s, the record says %v: %s", signedBy, now, r5.Body)
		}
		return nil
	})
	wantStatus(t, do(t, "POST", base+"/terminate", key, nil), http.StatusOK)
	r = wantStatus(t, do(t, "POST", base+"/sign/transaction", key, map[string]any{"transaction": evmTx(t, 0, common.Address{1}, 1)}), http.StatusConflict)
	if r["status"] != "DESTROYED" || r["code"] != "SIGNER_DISCONNECTED" {
		t.Fatalf("destroyed: %v", r)
	}
}
