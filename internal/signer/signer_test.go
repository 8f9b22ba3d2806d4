package signer

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"errors"
	"math/big"
	"strings"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/rlp"
	"github.com/gagliardetto/solana-go"
	"github.com/gagliardetto/solana-go/programs/system"

	"conduit/internal/attest"
	"conduit/internal/enclaves/provider"
	"conduit/internal/errs"
)

var payee = common.HexToAddress("0x00000000000000000000000000000000000000aa")

func TestEVMTransactionForms(t *testing.T) {
	forms := []string{
		`{"chainId":"8453","nonce":"7","to":"0x00000000000000000000000000000000000000AA","value":"1000","gas":"21000","maxFeePerGas":"3000000000","maxPriorityFeePerGas":"1000000000","data":"0x"}`,
		`{"chainId":"0x2105","nonce":"0x7","to":"0x00000000000000000000000000000000000000aa","value":"0x3e8","gasLimit":"0x5208","maxFeePerGas":"0xb2d05e00","maxPriorityFeePerGas":"0x3b9aca00","type":"0x2"}`,
		`{"chainId":8453,"nonce":7,"to":"0x00000000000000000000000000000000000000aa","value":1000,"gas":21000,"maxFeePerGas":3000000000,"maxPriorityFeePerGas":1000000000,"input":"0x","accessList":[]}`,
	}
	enc, err := rlp.EncodeToBytes([]any{big.NewInt(8453), uint64(7), big.NewInt(1e9), big.NewInt(3e9), uint64(21000), payee, big.NewInt(1000), []byte{}, types.AccessList{}})
	if err != nil {
		t.Fatal(err)
	}
	forms = append(forms, `"`+hexutil.Encode(append([]byte{2}, enc...))+`"`)
	key, _ := crypto.GenerateKey()
	var first []byte
	for i, f := range forms {
		tx, err := ParseEVMTransaction(json.RawMessage(f))
		if err != nil {
			t.Fatalf("form %d: %v", i, err)
		}
		h := tx.Hash()
		if first == nil {
			first = h
		} else if !bytes.Equal(h, first) {
			t.Fatalf("form %d hashes to %x, form 0 to %x", i, h, first)
		}
		sig, _ := crypto.Sign(h, key)
		raw, hash, from, err := tx.WithSignature(sig)
		if err != nil || from != crypto.PubkeyToAddress(key.PublicKey) {
			t.Fatalf("form %d: from %v %v", i, from, err)
		}
		var back types.Transaction
		if err := back.UnmarshalBinary(raw); err != nil || back.Hash() != hash || back.Nonce() != 7 || back.Value().Int64() != 1000 || *back.To() != payee {
			t.Fatalf("form %d: %v %v", i, back.Hash(), err)
		}
		if s, err := types.Sender(types.NewLondonSigner(big.NewInt(8453)), &back); err != nil || s != from {
			t.Fatalf("London signer: %v %v", s, err)
		}
	}
	// A contract creation has no to.
	tx, err := ParseEVMTransaction(json.RawMessage(`{"chainId":1,"nonce":0,"gas":100000,"maxFeePerGas":1,"maxPriorityFeePerGas":1,"data":"0x6000"}`))
	if err != nil || tx.Tx().To() != nil {
		t.Fatalf("creation: %v %v", tx, err)
	}
}

func TestEVMTransactionErrors(t *testing.T) {
	good := `"chainId":1,"nonce":0,"gas":21000,"maxFeePerGas":2,"maxPriorityFeePerGas":1`
	for _, c := range []struct{ in, field string }{
		{`null`, "transaction"},
		{`[]`, "transaction"},
		{`{"nonce":0,"gas":21000,"maxFeePerGas":2,"maxPriorityFeePerGas":1}`, "transaction.chainId"},
		{`{"chainId":1,"gas":21000,"maxFeePerGas":2,"maxPriorityFeePerGas":1}`, "transaction.nonce"},
		{`{"chainId":1,"nonce":0,"maxFeePerGas":2,"maxPriorityFeePerGas":1}`, "transaction.gas"},
		{`{` + good + `,"chainId":0}`, "transaction.chainId"},
		{`{"chainId":0,"nonce":0,"gas":21000,"maxFeePerGas":2,"maxPriorityFeePerGas":1}`, "transaction.chainId"},
		{`{"chainId":1,"nonce":0,"gas":21000,"maxFeePerGas":1,"maxPriorityFeePerGas":2}`, "transaction.maxPriorityFeePerGas"},
		{`{` + good + `,"to":"0xabc"}`, "transaction.to"},
		{`{` + good + `,"to":"0x00000000000000000000000000000000000000aA"}`, "transaction.to"},
		{`{` + good + `,"value":"1.5"}`, "transaction.value"},
		{`{` + good + `,"value":"-3"}`, "transaction.value"},
		{`{` + good + `,"nonce":"0x10000000000000000"}`, "transaction.nonce"},
		{`{` + good + `,"data":"0x123"}`, "transaction.data"},
		{`{` + good + `,"type":1}`, "transaction.type"},
		{`{` + good + `,"gasPrice":1}`, "transaction.gasPrice"},
		{`{` + good + `,"gasLimit":1}`, "transaction.gasLimit"},
		{`"0x01c0"`, "transaction"},
		{`"0x02c0"`, "transaction"},
		{`"0xzz"`, "transaction"},
	} {
		_, err := ParseEVMTransaction(json.RawMessage(c.in))
		e, ok := errs.As(err)
		if !ok || e.Kind != errs.Invalid || !strings.HasPrefix(e.Msg, c.field+":") {
			t.Errorf("%s: %v, want an Invalid error naming %s", c.in, err, c.field)
		}
	}
}

const mailJSON = `{
 "types": {
  "EIP712Domain": [{"name":"name","type":"string"},{"name":"version","type":"string"},{"name":"chainId","type":"uint256"},{"name":"verifyingContract","type":"address"}],
  "Person": [{"name":"name","type":"string"},{"name":"wallet","type":"address"}],
  "Mail": [{"name":"from","type":"Person"},{"name":"to","type":"Person"},{"name":"contents","type":"string"}]
 },
 "primaryType": "Mail",
 "domain": {"name":"Ether Mail","version":"1","chainId":1,"verifyingContract":"0xCcCCccccCCCCcCCCCCCcCcCccCcCCCcCcccccccC"},
 "message": {"from":{"name":"Cow","wallet":"0xCD2a3d9F938E13CD947Ec05AbC7FE734Df8DD826"},"to":{"name":"Bob","wallet":"0xbBbBBBBbbBBBbbbBbbBbbbbBBbBbbbbBbBbbBBbB"},"contents":"Hello, Bob!"}
}`

// The digest EIP-712 gives for its own example.
const mailDigest = "0xbe609aee343fb3c4b28e1df9e632fca64fcfaede20f02e86244efddf30957bd2"

func TestTypedDataHash(t *testing.T) {
	h, _, err := TypedDataHash([]byte(mailJSON))
	if err != nil || hexutil.Encode(h) != mailDigest {
		t.Fatalf("%x %v", h, err)
	}
	// The ethers form: value, no primaryType, no EIP712Domain.
	var m map[string]any
	_ = json.Unmarshal([]byte(mailJSON), &m)
	delete(m["types"].(map[string]any), "EIP712Domain")
	delete(m, "primaryType")
	m["value"] = m["message"]
	delete(m, "message")
	b, _ := json.Marshal(m)
	if h, _, err := TypedDataHash(b); err != nil || hexutil.Encode(h) != mailDigest {
		t.Fatalf("ethers form: %x %v", h, err)
	}
	for _, c := range []struct{ in, field string }{
		{`{"types":{"A":[{"name":"x","type":"uint8"}],"B":[{"name":"y","type":"uint8"}]},"domain":{"name":"d"},"message":{"x":1}}`, "primaryType"},
		{`{"types":{"A":[{"name":"x","type":"uint8"}]},"primaryType":"C","domain":{"name":"d"},"message":{"x":1}}`, "primaryType"},
		{`{"types":{"A":[{"name":"x","type":"uint8"}]},"domain":{"name":"d"},"message":{"x":300}}`, "typedData"},
		{`{"types":{"A":[{"name":"x","type":"uint8"}]},"domain":{"name":"d"}}`, "message"},
		{`{"domain":{"name":"d"},"message":{}}`, "types"},
		{`[1]`, "typedData"},
	} {
		_, _, err := TypedDataHash([]byte(c.in))
		if e, ok := errs.As(err); !ok || !strings.HasPrefix(e.Msg, c.field+":") {
			t.Errorf("%s: %v, want %s named", c.in, err, c.field)
		}
	}
}

func TestMessageBytes(t *testing.T) {
	for _, c := range []struct {
		msg, enc string
		want     []byte
	}{
		{"hello", "", []byte("hello")},
		{"0x6869", "", []byte("hi")},
		{"0xnothex", "", []byte("0xnothex")},
		{"0x6869", "utf8", []byte("0x6869")},
		{"6869", "hex", []byte("hi")},
		{base64.StdEncoding.EncodeToString([]byte{0, 1, 2}), "base64", []byte{0, 1, 2}},
	} {
		got, err := MessageBytes(c.msg, c.enc)
		if err != nil || !bytes.Equal(got, c.want) {
			t.Errorf("%q/%s: %q %v", c.msg, c.enc, got, err)
		}
	}
	for _, c := range [][2]string{{"", ""}, {"zz", "hex"}, {"!!", "base64"}, {"x", "rot13"}, {strings.Repeat("a", MaxMessage+1), ""}} {
		if _, err := MessageBytes(c[0], c[1]); err == nil {
			t.Errorf("%.10q/%s accepted", c[0], c[1])
		}
	}
}

func transfer(t *testing.T, payer solana.PublicKey) string {
	t.Helper()
	tx, err := solana.NewTransaction([]solana.Instruction{system.NewTransferInstruction(5, payer, solana.NewWallet().PublicKey()).Build()},
		solana.Hash{1, 2, 3}, solana.TransactionPayer(payer))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := tx.MarshalBinary()
	return base64.StdEncoding.EncodeToString(b)
}

func TestRawKey(t *testing.T) {
	evm, _ := crypto.GenerateKey()
	sol := solana.NewWallet().PrivateKey
	k, err := RawKeyInput{EVMPrivateKey: hexutil.Encode(crypto.FromECDSA(evm)), SolanaPrivateKey: sol.String()}.Parse()
	if err != nil {
		t.Fatal(err)
	}
	b, _ := k.Marshal()
	k, err = UnmarshalRawKey(b)
	if err != nil || k.EVMAddress() != crypto.PubkeyToAddress(evm.PublicKey).Hex() || k.SolanaPublicKey() != sol.PublicKey().String() {
		t.Fatalf("round trip: %v %v", k, err)
	}
	hash := crypto.Keccak256([]byte("x"))
	sig, who, _, err := k.Sign(Request{Purpose: PurposeEVMHash, Payload: hash})
	if pub, _ := crypto.SigToPub(hash, sig); err != nil || crypto.PubkeyToAddress(*pub).Hex() != who {
		t.Fatalf("EVM: %v", err)
	}
	// A Solana transaction the raw key pays for: the signature goes in its slot.
	stx, err := ParseSolanaTransaction(transfer(t, sol.PublicKey()))
	if err != nil {
		t.Fatal(err)
	}
	msg, _ := stx.Message()
	sig, _, idx, err := k.Sign(Request{Purpose: PurposeSolanaTransaction, Payload: msg})
	if err != nil {
		t.Fatal(err)
	}
	out, _ := stx.WithSignature(idx, sig)
	back, err := solana.TransactionFromBase64(out)
	if err != nil || back.VerifySignatures() != nil {
		t.Fatalf("signed transaction: %v", err)
	}
	stx, _ = ParseSolanaTransaction(transfer(t, solana.NewWallet().PublicKey()))
	msg, _ = stx.Message()
	if _, _, _, err := k.Sign(Request{Purpose: PurposeSolanaTransaction, Payload: msg}); err == nil {
		t.Fatal("signed a transaction it is not a signer of")
	}
	for _, in := range []RawKeyInput{{}, {EVMPrivateKey: "0x12"}, {SolanaPrivateKey: "0OIl"}, {SolanaPrivateKey: "3yZe7d"},
		{EVMPrivateKey: "0x" + strings.Repeat("ff", 32)}} {
		if _, err := in.Parse(); err == nil {
			t.Errorf("%+v accepted", in)
		}
	}
	if _, err := (RawKeyInput{SolanaPrivateKey: solana.PrivateKey(ed25519.NewKeyFromSeed(make([]byte, 32))).String()}).Parse(); err != nil {
		t.Fatal(err)
	}
}

func TestRequestNonce(t *testing.T) {
	r := Request{Purpose: PurposeEVMHash, Payload: make([]byte, 32)}
	a, _ := RequestNonce(r)
	b, _ := RequestNonce(r)
	if bytes.Equal(a, b) || !CommitsTo(a, r) || !CommitsTo(b, r) {
		t.Fatal("nonces are fresh and commit to the request")
	}
	other := Request{Purpose: PurposeEVMHash, Payload: append(make([]byte, 31), 1)}
	if CommitsTo(a, other) || CommitsTo(a, Request{Purpose: PurposeSolanaMessage, Payload: r.Payload}) || CommitsTo(a[:40], r) {
		t.Fatal("a nonce commits to one request only")
	}
}

func TestPCRsOf(t *testing.T) {
	p, err := PCRsOf(map[string]string{"0": "00ff", "2": "ab"})
	if err != nil || len(p) != 2 || p[0][1] != 0xff {
		t.Fatalf("%v %v", p, err)
	}
	for _, bad := range []map[string]string{{}, {"x": "00"}, {"01": "00"}, {"32": "00"}, {"0": "zz"}} {
		if _, err := PCRsOf(bad); err == nil {
			t.Errorf("%v accepted", bad)
		}
	}
}

// agentProvider is an enclave agent over a real local authority: it
// attests and signs as the local provider does, and can be made to sign
// with a key other than the one it attests. The provider itself is
// tested in internal/enclaves/provider/local; this exercises the signer's decisions.
type agentProvider struct {
	provider.Provider
	signer  *attest.Signer
	pcrs    map[int][]byte
	evm     *ecdsa.PrivateKey
	sol     ed25519.PrivateKey
	other   *ecdsa.PrivateKey // signs instead of evm when set
	stopped bool
}

func (p *agentProvider) Attest(_ context.Context, id string, nonce []byte) ([]byte, error) {
	if p.stopped {
		return nil, provider.Wrap(provider.Permanent, "attest", id, provider.ErrNotRunning)
	}
	ud, err := attest.SigningKeys{EVM: &p.evm.PublicKey, Solana: p.sol.Public().(ed25519.PublicKey)}.UserData()
	if err != nil {
		return nil, err
	}
	return p.signer.Sign(attest.Document{PCRs: p.pcrs, UserData: ud, Nonce: nonce})
}

func (p *agentProvider) Sign(_ context.Context, id string, r provider.SignRequest) ([]byte, error) {
	if r.Key == provider.KeySolana {
		return ed25519.Sign(p.sol, r.Payload), nil
	}
	k := p.evm
	if p.other != nil {
		k = p.other
	}
	return crypto.Sign(r.Payload, k)
}

func newAgent(t *testing.T) (*Agent, *agentProvider) {
	t.Helper()
	auth, err := attest.NewAuthority(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	s, err := auth.IssueLeaf("enc_test")
	if err != nil {
		t.Fatal(err)
	}
	pcrs := map[int][]byte{}
	for i := range 3 {
		pcrs[i] = bytes.Repeat([]byte{byte(i + 1)}, attest.PCRSize)
	}
	evm, _ := crypto.GenerateKey()
	_, sol, _ := ed25519.GenerateKey(nil)
	p := &agentProvider{signer: s, pcrs: pcrs, evm: evm, sol: sol}
	return &Agent{Provider: p, Root: auth.Root()}, p
}

func TestAgent(t *testing.T) {
	ctx := context.Background()
	a, p := newAgent(t)
	hash := crypto.Keccak256([]byte("tx"))
	out, err := a.Sign(ctx, "enc_test", p.pcrs, Request{Purpose: PurposeEVMHash, Payload: hash})
	if err != nil || out.Evidence.State != AttestationVerified || out.Signer != crypto.PubkeyToAddress(p.evm.PublicKey).Hex() || len(out.Signature) != 65 {
		t.Fatalf("verified: %+v %v", out, err)
	}
	if !CommitsTo(out.Evidence.Nonce, Request{Purpose: PurposeEVMHash, Payload: hash}) || out.Evidence.Fields.EVMAddress != out.Signer {
		t.Fatalf("evidence: %+v", out.Evidence)
	}

	// Expected PCRs that differ: attestation failed, nothing signed.
	wrong := map[int][]byte{0: p.pcrs[0], 1: p.pcrs[1], 2: bytes.Repeat([]byte{9}, attest.PCRSize)}
	out, err = a.Sign(ctx, "enc_test", wrong, Request{Purpose: PurposeEVMHash, Payload: hash})
	if err != nil || out.Evidence.State != AttestationFailed || out.Signature != nil || strings.Join(FailedChecks(out.Evidence.Report), ",") != "pcrs" {
		t.Fatalf("failed: %+v %v", out, err)
	}
	if e, ok := errs.As(Failed(out.Evidence.Report)); !ok || e.Kind != errs.Conflict || e.Code != CodeAttestationFailed {
		t.Fatalf("the failure's error: %v", e)
	}
	// No expectation at all fails too, rather than skipping the check.
	out, _ = a.Sign(ctx, "enc_test", nil, Request{Purpose: PurposeEVMHash, Payload: hash})
	if c, _ := out.Evidence.Report.Check(attest.CheckPCRs); out.Evidence.State != AttestationFailed || out.Signature != nil || !strings.Contains(c.Detail, "recorded no PCRs") {
		t.Fatalf("signed without expected PCRs: %+v", c)
	}
	// Another root: the chain fails.
	other, _ := newAgent(t)
	other.Provider = p
	if out, _ := other.Sign(ctx, "enc_test", p.pcrs, Request{Purpose: PurposeEVMHash, Payload: hash}); out.Evidence.State != AttestationFailed ||
		!strings.Contains(strings.Join(FailedChecks(out.Evidence.Report), ","), "certificate_chain") {
		t.Fatalf("another root: %+v", out.Evidence.Report)
	}
	// An enclave that signs with a key other than the one it attests is
	// never believed.
	p.other, _ = crypto.GenerateKey()
	if out, err := a.Sign(ctx, "enc_test", p.pcrs, Request{Purpose: PurposeEVMHash, Payload: hash}); err == nil || out.Signature != nil {
		t.Fatalf("a signature by another key: %v %v", out, err)
	}
	p.other = nil
	// Solana: the key must be a signer of the transaction.
	stx, _ := ParseSolanaTransaction(transfer(t, solana.PublicKeyFromBytes(p.sol.Public().(ed25519.PublicKey))))
	msg, _ := stx.Message()
	if out, err := a.Sign(ctx, "enc_test", p.pcrs, Request{Purpose: PurposeSolanaTransaction, Payload: msg}); err != nil || out.SignerIndex != 0 || len(out.Signature) != 64 {
		t.Fatalf("Solana: %+v %v", out, err)
	}
	stx, _ = ParseSolanaTransaction(transfer(t, solana.NewWallet().PublicKey()))
	msg, _ = stx.Message()
	if _, err := a.Sign(ctx, "enc_test", p.pcrs, Request{Purpose: PurposeSolanaTransaction, Payload: msg}); !isInvalid(err) {
		t.Fatalf("not a signer: %v", err)
	}
	if _, err := a.Sign(ctx, "enc_test", p.pcrs, Request{Purpose: PurposeEVMHash, Payload: []byte{1}}); !isInvalid(err) {
		t.Fatalf("a short hash: %v", err)
	}
	// Disconnected: no instance, no document.
	p.stopped = true
	if _, err := a.Sign(ctx, "enc_test", p.pcrs, Request{Purpose: PurposeEVMHash, Payload: hash}); !errors.Is(err, provider.ErrNotRunning) {
		t.Fatalf("stopped: %v", err)
	}
}

func isInvalid(err error) bool {
	e, ok := errs.As(err)
	return ok && e.Kind == errs.Invalid
}

func TestStates(t *testing.T) {
	for s, can := range map[State]bool{Connected: false, AttestationVerified: true, AttestationFailed: false, Disconnected: false, Deprecated: true} {
		if s.CanSign() != can || NewStatus(s, "").CanSign != can {
			t.Errorf("%s", s)
		}
	}
	if e, _ := errs.As(NotRunning("PAUSED")); e.Kind != errs.Conflict || e.Extra["status"] != "PAUSED" || e.Code != CodeDisconnected {
		t.Fatalf("%+v", e)
	}
	if e, _ := errs.As(Unreachable("gone")); e.Kind != errs.Unavailable || e.Code != CodeDisconnected {
		t.Fatalf("%+v", e)
	}
}
