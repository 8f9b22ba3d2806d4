package x402

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/gagliardetto/solana-go"

	"conduit/internal/money"
)

const (
	payTo = "0x209693Bc6afc0C5328bA36FaF03C514EF312287C"
	asset = "0x036CbD53842c5426634e7929541eC2318f3dCF7e"
)

func evmOffer() Offer {
	return Offer{Network: "eip155:84532", Asset: asset, PayTo: payTo, Extra: map[string]any{"name": "USDC", "version": "2"}}
}

func TestChallengeQuotesExactAtomicAmountsInOfferOrder(t *testing.T) {
	sol := Offer{Network: "solana:EtWTRABZaYq6iMfeYKouRu166VU2xqa1", Asset: "Mint111", PayTo: "Pay111", Extra: map[string]any{"feePayer": "Fee111"}}
	pr := Challenge(ResourceInfo{URL: "https://api.example.test/api/billing/credits/x402"}, 5*money.USD, []Offer{evmOffer(), sol}, "PAYMENT-SIGNATURE header is required")
	h, err := EncodeHeader(pr)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := base64.StdEncoding.DecodeString(h)
	want := `{"x402Version":2,"error":"PAYMENT-SIGNATURE header is required","resource":{"url":"https://api.example.test/api/billing/credits/x402"},"accepts":[` +
		`{"scheme":"exact","network":"eip155:84532","amount":"5000000","asset":"` + asset + `","payTo":"` + payTo + `","maxTimeoutSeconds":300,"extra":{"name":"USDC","version":"2"}},` +
		`{"scheme":"exact","network":"solana:EtWTRABZaYq6iMfeYKouRu166VU2xqa1","amount":"5000000","asset":"Mint111","payTo":"Pay111","maxTimeoutSeconds":300,"extra":{"feePayer":"Fee111"}}]}`
	if string(raw) != want {
		t.Fatalf("challenge JSON:\n%s\nwant\n%s", raw, want)
	}
	back, err := DecodePaymentRequired(h)
	if err != nil || back.Accepts[1].Amount != "5000000" || back.X402Version != 2 {
		t.Fatalf("%+v %v", back, err)
	}
}

func TestDecodeIsStrict(t *testing.T) {
	ok, _ := EncodeHeader(map[string]any{"x402Version": 2, "accepted": map[string]any{"scheme": "exact", "network": "eip155:1"}, "payload": map[string]any{}})
	if _, err := DecodePaymentPayload(ok); err != nil {
		t.Fatal(err)
	}
	urlSafe := strings.NewReplacer("+", "-", "/", "_").Replace(base64.StdEncoding.EncodeToString([]byte(`{"x402Version":2,"accepted":{"scheme":"exact","network":"eip155:1"},"payload":{"a":"???>>>"}}`)))
	bad := map[string]string{
		"":      "empty",
		"%%%":   "not standard base64",
		urlSafe: "not standard base64",
		base64.StdEncoding.EncodeToString([]byte(`{"x402Version":"2"}`)):                                                           "not the expected JSON object",
		base64.StdEncoding.EncodeToString([]byte(`{"x402Version":1,"accepted":{},"payload":{}}`)):                                  "x402Version must be 2",
		base64.StdEncoding.EncodeToString([]byte(`{"x402Version":2,"accepted":{},"payload":{}}`)):                                  "accepted must name",
		base64.StdEncoding.EncodeToString([]byte(`{"x402Version":2,"accepted":{"scheme":"exact","network":"n:1"},"payload":"x"}`)): "payload must be an object",
		base64.StdEncoding.EncodeToString([]byte(`{"x402Version":2} {}`)):                                                          "trailing data",
		strings.Repeat("A", 100_000): "larger than",
	}
	for h, want := range bad {
		_, err := DecodePaymentPayload(h)
		if !errors.Is(err, ErrMalformed) || !strings.Contains(err.Error(), want) {
			t.Errorf("%.40q: want %q, got %v", h, want, err)
		}
	}
}

func TestMatchUsesTheServersRequirements(t *testing.T) {
	offered := Challenge(ResourceInfo{URL: "u"}, 420_000, []Offer{evmOffer()}, "").Accepts
	p := PaymentPayload{Accepted: offered[0]}
	p.Accepted.Asset = strings.ToLower(asset)
	p.Accepted.Extra = map[string]any{"name": "Evil", "version": "9"}
	got, err := Match(p, offered)
	if err != nil || got.Extra["name"] != "USDC" {
		t.Fatalf("%+v %v", got, err)
	}
	p.Accepted.Amount = "1"
	if _, err := Match(p, offered); !errors.Is(err, ErrNoMatch) {
		t.Fatalf("cheaper payment matched: %v", err)
	}
}

// The EIP-712 types are the standard ones: their type hashes equal the
// constants of EIP-3009 and EIP-712.
func TestTypeHashesAreTheStandardOnes(t *testing.T) {
	td, err := TransferTypedData(Challenge(ResourceInfo{URL: "u"}, 1, []Offer{evmOffer()}, "").Accepts[0], Authorization{})
	if err != nil {
		t.Fatal(err)
	}
	if got := hexutil.Encode(td.TypeHash("TransferWithAuthorization")); got != "0x7c7c6cdb67a18743f49ec6fa9b35f50d52ed05cbed4cc592e13b44501c1a2267" {
		t.Fatalf("TransferWithAuthorization typehash %s", got)
	}
	if got := hexutil.Encode(td.TypeHash("EIP712Domain")); got != "0x8b73c3c69bb8fe3d512ecc4cf759cc79239f7b179b0ffacaa9a75d522b39400f" {
		t.Fatalf("EIP712Domain typehash %s", got)
	}
}

func signed(t *testing.T, req PaymentRequirements, now time.Time) (PaymentPayload, common.Address, string) {
	t.Helper()
	key, _ := crypto.GenerateKey()
	keyHex := hexutil.Encode(crypto.FromECDSA(key))
	var nonce [32]byte
	_, _ = rand.Read(nonce[:])
	p, err := SignEVM(req, keyHex, nonce, now)
	if err != nil {
		t.Fatal(err)
	}
	return p, crypto.PubkeyToAddress(key.PublicKey), keyHex
}

func TestVerifyEVMAcceptsARealSignature(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	req := Challenge(ResourceInfo{URL: "u"}, 5*money.USD, []Offer{evmOffer()}, "").Accepts[0]
	p, payer, _ := signed(t, req, now)
	_, got, err := VerifyEVM(p, req, now)
	if err != nil || got != payer {
		t.Fatalf("payer %s (want %s): %v", got.Hex(), payer.Hex(), err)
	}
}

func TestVerifyEVMRefusals(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	req := Challenge(ResourceInfo{URL: "u"}, 5*money.USD, []Offer{evmOffer()}, "").Accepts[0]
	edit := func(f func(*EVMPayload)) func(PaymentPayload) PaymentPayload {
		return func(p PaymentPayload) PaymentPayload {
			var ep EVMPayload
			_ = json.Unmarshal(p.Payload, &ep)
			f(&ep)
			p.Payload, _ = json.Marshal(ep)
			return p
		}
	}
	cases := []struct {
		name   string
		mutate func(PaymentPayload) PaymentPayload
		req    func(PaymentRequirements) PaymentRequirements
		at     time.Time
		reason string
	}{
		{name: "tampered value", mutate: edit(func(e *EVMPayload) { e.Authorization.Value = "5000001" }), reason: ReasonSignature},
		{name: "pays someone else", req: func(r PaymentRequirements) PaymentRequirements {
			r.PayTo = "0x0000000000000000000000000000000000000001"
			return r
		}, reason: ReasonRecipientMismatch},
		{name: "other token domain", req: func(r PaymentRequirements) PaymentRequirements {
			r.Extra = map[string]any{"name": "USDC", "version": "3"}
			return r
		}, reason: ReasonSignature},
		{name: "expired", at: now.Add(time.Hour), reason: ReasonValidBefore},
		{name: "not yet valid", at: now.Add(-time.Hour), reason: ReasonValidAfter},
		{name: "network mismatch", mutate: func(p PaymentPayload) PaymentPayload { p.Accepted.Network = "eip155:8453"; return p }, reason: ReasonNetworkMismatch},
		{name: "short signature", mutate: edit(func(e *EVMPayload) { e.Signature = "0x1234" }), reason: ReasonSignature},
		{name: "bad nonce", mutate: edit(func(e *EVMPayload) { e.Authorization.Nonce = "0x01" }), reason: ReasonInvalidPayload},
		{name: "no domain", req: func(r PaymentRequirements) PaymentRequirements { r.Extra = nil; return r }, reason: ReasonMissingDomain},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p, _, _ := signed(t, req, now)
			r := req
			if c.req != nil {
				// Signed for the original, checked against changed requirements.
				r = c.req(r)
			}
			if c.mutate != nil {
				p = c.mutate(p)
			}
			at := now
			if !c.at.IsZero() {
				at = c.at
			}
			_, _, err := VerifyEVM(p, r, at)
			var ref *Refusal
			if !errors.As(err, &ref) || ref.Reason != c.reason {
				t.Fatalf("want %s, got %v", c.reason, err)
			}
		})
	}
}

func FuzzDecodePaymentPayload(f *testing.F) {
	req := Challenge(ResourceInfo{URL: "u"}, 1, []Offer{evmOffer()}, "").Accepts[0]
	var nonce [32]byte
	p, _ := SignEVM(req, "0x4c0883a69102937d6231471b5dbb6204fe5129617082792ae468d01a3f362318", nonce, time.Unix(1_800_000_000, 0))
	h, _ := EncodeHeader(p)
	f.Add(h)
	f.Add("e30=")
	sol := newSVMFixtureF()
	if sp, err := SignSVM(sol.req, sol.payer, solana.Hash{3}); err == nil {
		sh, _ := EncodeHeader(sp)
		f.Add(sh)
	}
	f.Fuzz(func(t *testing.T, h string) {
		p, err := DecodePaymentPayload(h)
		if err != nil {
			return
		}
		// Whatever decodes must survive identification and verification on
		// either network without panicking.
		_, _ = VerifySignature(p, req)
		_, _ = VerifySignature(p, p.Accepted)
		_, _, _ = VerifyEVM(p, req, time.Unix(1_800_000_000, 0))
		_, _ = VerifySVM(p, p.Accepted, solana.PublicKey{})
	})
}

// BenchmarkVerifyEVM: decoding a PAYMENT-SIGNATURE header and checking its
// EIP-712 signature, recipient, value and validity window.
func BenchmarkVerifyEVM(b *testing.B) {
	now := time.Unix(1_800_000_000, 0)
	req := Challenge(ResourceInfo{URL: "u"}, 5*money.USD, []Offer{evmOffer()}, "").Accepts[0]
	var nonce [32]byte
	p, err := SignEVM(req, "0x4c0883a69102937d6231471b5dbb6204fe5129617082792ae468d01a3f362318", nonce, now)
	if err != nil {
		b.Fatal(err)
	}
	h, _ := EncodeHeader(p)
	b.ResetTimer()
	for range b.N {
		p, err := DecodePaymentPayload(h)
		if err != nil {
			b.Fatal(err)
		}
		if _, _, err := VerifyEVM(p, req, now); err != nil {
			b.Fatal(err)
		}
	}
}
