package siwx

import (
	"crypto/ed25519"
	"encoding/hex"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/crypto"
)

var (
	now    = time.Date(2026, 11, 22, 10, 30, 0, 0, time.UTC)
	expect = Expect{Domain: "api.example.com", Origin: "https://api.example.com", Networks: []string{"eip155:8453", "solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp"}, MaxAge: 5 * time.Minute}
)

func challenge(t *testing.T) Challenge {
	t.Helper()
	ch, err := NewChallenge("https://api.example.com/api/x402/purchases", expect.Networks, "Sign in to list your purchases", now, 5*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	return ch
}

func TestChallengeShape(t *testing.T) {
	ch := challenge(t)
	in := ch.Info
	if in.Domain != "api.example.com" || in.URI != "https://api.example.com/api/x402/purchases" || in.Version != "1" || len(in.Nonce) != 32 ||
		in.IssuedAt != "2026-11-22T10:30:00.000Z" || in.ExpirationTime != "2026-11-22T10:35:00.000Z" || len(in.Resources) != 1 ||
		ch.SupportedChains[0] != (Chain{ChainID: "eip155:8453", Type: "eip191"}) || ch.SupportedChains[1].Type != "ed25519" || ch.Schema["required"] == nil {
		t.Fatalf("%+v", ch)
	}
	if other := challenge(t); other.Info.Nonce == in.Nonce {
		t.Fatal("nonces repeat")
	}
	if _, err := NewChallenge("https://api.example.com:8443/x", nil, `say "hi"`, now, time.Minute); err == nil {
		t.Fatal("a statement with a quote was accepted")
	}
	if ch, err := NewChallenge("http://127.0.0.1:8080/x", nil, "", now, time.Minute); err != nil || ch.Info.Domain != "127.0.0.1" {
		t.Fatalf("%+v %v", ch, err)
	}
}

// The messages, spelled out from EIP-4361 and the Solana sign-in format.
func TestMessagesKnownAnswer(t *testing.T) {
	p := Proof{
		Info: Info{Domain: "api.example.com", URI: "https://api.example.com/premium", Version: "1", Nonce: "a1b2c3d4e5f67890a1b2c3d4e5f67890",
			IssuedAt: "2024-01-15T10:30:00.000Z", ExpirationTime: "2024-01-15T10:35:00.000Z", Statement: "Sign in to access premium data",
			Resources: []string{"https://api.example.com/premium"}},
		ChainID: "eip155:8453", Type: "eip191", Address: "0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed",
	}
	want := "api.example.com wants you to sign in with your Ethereum account:\n0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed\n\n" +
		"Sign in to access premium data\n\nURI: https://api.example.com/premium\nVersion: 1\nChain ID: 8453\n" +
		"Nonce: a1b2c3d4e5f67890a1b2c3d4e5f67890\nIssued At: 2024-01-15T10:30:00.000Z\nExpiration Time: 2024-01-15T10:35:00.000Z\n" +
		"Resources:\n- https://api.example.com/premium"
	if got, _ := SIWEMessage(p); got != want {
		t.Fatalf("SIWE:\n%q\nwant\n%q", got, want)
	}
	p.Statement, p.ExpirationTime, p.Resources = "", "", nil
	want = "api.example.com wants you to sign in with your Ethereum account:\n0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed\n\n\n" +
		"URI: https://api.example.com/premium\nVersion: 1\nChain ID: 8453\nNonce: a1b2c3d4e5f67890a1b2c3d4e5f67890\nIssued At: 2024-01-15T10:30:00.000Z"
	if got, _ := SIWEMessage(p); got != want {
		t.Fatalf("SIWE without statement:\n%q\nwant\n%q", got, want)
	}
	p.ChainID, p.Address = "solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp", "7RG54bKtHnKejca9kTfKJJuEgSAqjzsShC85LsH3F8Lz"
	want = "api.example.com wants you to sign in with your Solana account:\n7RG54bKtHnKejca9kTfKJJuEgSAqjzsShC85LsH3F8Lz\n\n" +
		"URI: https://api.example.com/premium\nVersion: 1\nChain ID: 5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp\nNonce: a1b2c3d4e5f67890a1b2c3d4e5f67890\nIssued At: 2024-01-15T10:30:00.000Z"
	if got, _ := SIWSMessage(p); got != want {
		t.Fatalf("SIWS without statement:\n%q\nwant\n%q", got, want)
	}
	p.Statement = "Hi"
	if got, _ := SIWSMessage(p); !strings.Contains(got, "Lz\n\nHi\n\nURI: ") {
		t.Fatalf("SIWS with statement: %q", got)
	}
}

func evmProof(t *testing.T, ch Challenge) (Proof, string) {
	t.Helper()
	key, _ := crypto.GenerateKey()
	p, err := SignEVM(ch, "eip155:8453", key)
	if err != nil {
		t.Fatal(err)
	}
	return p, strings.ToLower(crypto.PubkeyToAddress(key.PublicKey).Hex())
}

func roundTrip(t *testing.T, p Proof) Proof {
	t.Helper()
	h, err := EncodeHeader(p)
	if err != nil {
		t.Fatal(err)
	}
	back, err := ParseHeader(h)
	if err != nil {
		t.Fatal(err)
	}
	return back
}

func TestEVMRoundTrip(t *testing.T) {
	p, addr := evmProof(t, challenge(t))
	if p.Address != strings.ToLower(p.Address) && !strings.HasPrefix(p.Address, "0x") {
		t.Fatal(p.Address)
	}
	got, err := Verify(roundTrip(t, p), expect, now.Add(time.Minute))
	if err != nil || got != addr {
		t.Fatalf("%q %v", got, err)
	}
	// v as 0/1 instead of 27/28 is the same signature.
	sig, _ := hex.DecodeString(p.Signature[2:])
	sig[64] -= 27
	p.Signature = "0x" + hex.EncodeToString(sig)
	if _, err := Verify(p, expect, now); err != nil {
		t.Fatal(err)
	}
	// The message is built from the address as sent: a lowercased address
	// is a different message from the one signed.
	p.Address = strings.ToLower(p.Address)
	if _, err := Verify(p, expect, now); !isRefusal(err, "signature does not match") {
		t.Fatalf("%v", err)
	}
}

func TestSolanaRoundTrip(t *testing.T) {
	_, key, _ := ed25519.GenerateKey(nil)
	p, err := SignSolana(challenge(t), "solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp", key)
	if err != nil {
		t.Fatal(err)
	}
	got, err := Verify(roundTrip(t, p), expect, now)
	if err != nil || got != p.Address {
		t.Fatalf("%q %v", got, err)
	}
	other, _, _ := ed25519.GenerateKey(nil)
	_ = other
	p.Nonce = "ffffffffffffffffffffffffffffffff"
	if _, err := Verify(p, expect, now); !isRefusal(err, "signature does not match") {
		t.Fatalf("%v", err)
	}
}

func isRefusal(err error, words string) bool {
	var e *Error
	return errors.As(err, &e) && strings.Contains(e.Reason, words)
}

func TestRefusals(t *testing.T) {
	ok, _ := evmProof(t, challenge(t))
	resign := func(edit func(*Challenge)) Proof {
		ch := challenge(t)
		edit(&ch)
		p, _ := evmProof(t, ch)
		return p
	}
	intruder, _ := evmProof(t, challenge(t))
	for _, c := range []struct {
		name  string
		p     Proof
		at    time.Time
		words string
	}{
		{"domain", resign(func(c *Challenge) { c.Info.Domain = "evil.example" }), now, "domain mismatch"},
		{"uri", resign(func(c *Challenge) { c.Info.URI = "https://evil.example/x" }), now, "uri does not belong"},
		{"uri prefix trick", resign(func(c *Challenge) { c.Info.URI = "https://api.example.com.evil.example/x" }), now, "uri does not belong"},
		{"old", ok, now.Add(6 * time.Minute), "older than 5 minutes"},
		{"future", ok, now.Add(-time.Minute), "in the future"},
		{"expired", resign(func(c *Challenge) { c.Info.ExpirationTime = now.Add(-time.Second).Format(timeFormat) }), now, "expired"},
		{"not before", resign(func(c *Challenge) { c.Info.NotBefore = now.Add(time.Minute).Format(timeFormat) }), now, "not yet valid"},
		{"chain", ok, now, "unsupported chain"},
		{"nonce changed", func() Proof { p := ok; p.Nonce = "0000000000000000000000000000000a"; return p }(), now, "signature does not match"},
		{"issuedAt changed", func() Proof { p := ok; p.IssuedAt = now.Add(time.Second).Format(timeFormat); return p }(), now.Add(time.Second), "signature does not match"},
		{"address changed", func() Proof { p := ok; p.Address = intruder.Address; return p }(), now, "signature does not match"},
		{"signature garbage", func() Proof { p := ok; p.Signature = "0x1234"; return p }(), now, "signature does not match"},
		{"type for chain", func() Proof { p := ok; p.Type = TypeEd25519; return p }(), now, "unsupported chain"},
	} {
		if c.name == "chain" {
			ch := challenge(t)
			ch.SupportedChains = []Chain{{ChainID: "eip155:1", Type: "eip191"}}
			key, _ := crypto.GenerateKey()
			c.p, _ = SignEVM(ch, "eip155:1", key)
		}
		if _, err := Verify(c.p, expect, c.at); !isRefusal(err, c.words) {
			t.Errorf("%s: %v, want %q", c.name, err, c.words)
		}
	}
}

func TestParseHeaderRefusesMalformed(t *testing.T) {
	for _, h := range []string{"", "!!!", "e30=", "bnVsbA==", strings.Repeat("A", 9000)} {
		if _, err := ParseHeader(h); !isRefusal(err, "malformed proof") {
			t.Errorf("%.20q: %v", h, err)
		}
	}
	p, _ := evmProof(t, challenge(t))
	p.Type = "eip1271"
	h, _ := EncodeHeader(p)
	if _, err := ParseHeader(h); !isRefusal(err, "type must be") {
		t.Fatal(err)
	}
}

func FuzzParseHeader(f *testing.F) {
	p := Proof{Info: Info{Domain: "a", URI: "https://a/", Version: "1", Nonce: "abcdefgh", IssuedAt: "2026-01-01T00:00:00.000Z"},
		ChainID: "eip155:8453", Type: "eip191", Address: "0x0000000000000000000000000000000000000000", Signature: "0x00"}
	h, _ := EncodeHeader(p)
	f.Add(h)
	f.Add("e30")
	f.Fuzz(func(t *testing.T, h string) {
		p, err := ParseHeader(h)
		if err != nil {
			return
		}
		// A parsed proof never verifies without a real signature, and
		// verification never panics.
		if _, err := Verify(p, Expect{Domain: p.Domain, Origin: "https://a", Networks: []string{p.ChainID}, MaxAge: time.Hour}, now); err == nil {
			t.Fatalf("an unsigned proof verified: %+v", p)
		}
	})
}
