package siwx

import (
	"crypto/ecdsa"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/crypto"
	"github.com/mr-tron/base58"
)

const (
	base    = "eip155:8453"
	solMain = "solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp"
)

var (
	now    = time.Date(2026, 11, 22, 10, 30, 0, 0, time.UTC)
	expect = Expect{Domain: "api.example.com", Origin: "https://api.example.com", Networks: []string{base, solMain}, MaxAge: 5 * time.Minute}
)

func challenge(t *testing.T) Challenge {
	t.Helper()
	ch, err := NewChallenge("https://api.example.com/api/x402/purchases", expect.Networks, "Sign in to list your purchases", now, 5*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	return ch
}

// evmKey is a fixed key: the first account of the "abandon … about" test
// mnemonic, 0x9858EfFD232B4033E47d90003D41EC34EcaEda94.
func evmKey(t *testing.T) *ecdsa.PrivateKey {
	t.Helper()
	k, err := crypto.HexToECDSA("1ab42cc412b618bdea3a599e3c9bae199ebf030895b039e9db1e30dafb12b727")
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// solKey is a fixed key: RFC 8032 test 1's secret key.
func solKey(t *testing.T) ed25519.PrivateKey {
	t.Helper()
	seed, _ := hex.DecodeString("9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60")
	return ed25519.NewKeyFromSeed(seed)
}

func reasonOf(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Reason
	}
	if err == nil {
		return "<nil>"
	}
	return "not an *Error: " + err.Error()
}

func TestChallengeShape(t *testing.T) {
	ch := challenge(t)
	in := ch.Info
	if in.Domain != "api.example.com" || in.URI != "https://api.example.com/api/x402/purchases" || in.Version != "1" ||
		in.IssuedAt != "2026-11-22T10:30:00.000Z" || in.ExpirationTime != "2026-11-22T10:35:00.000Z" ||
		in.Statement != "Sign in to list your purchases" || len(in.Resources) != 1 || in.Resources[0] != in.URI ||
		in.NotBefore != "" || in.RequestID != "" {
		t.Fatalf("%+v", in)
	}
	if len(in.Nonce) != 32 || strings.Trim(in.Nonce, "0123456789abcdef") != "" {
		t.Fatalf("nonce %q is not 32 hex characters", in.Nonce)
	}
	if other := challenge(t); other.Info.Nonce == in.Nonce {
		t.Fatal("nonces repeat")
	}
	if len(ch.SupportedChains) != 2 || ch.SupportedChains[0] != (Chain{ChainID: base, Type: "eip191"}) ||
		ch.SupportedChains[1] != (Chain{ChainID: solMain, Type: "ed25519"}) {
		t.Fatalf("%+v", ch.SupportedChains)
	}

	// The wire shape, as the official client reads it.
	raw, _ := json.Marshal(ch)
	var wire struct {
		Info            map[string]any   `json:"info"`
		SupportedChains []map[string]any `json:"supportedChains"`
		Schema          struct {
			Schema     string                    `json:"$schema"`
			Type       string                    `json:"type"`
			Required   []string                  `json:"required"`
			Properties map[string]map[string]any `json:"properties"`
		} `json:"schema"`
	}
	if err := json.Unmarshal(raw, &wire); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"domain", "uri", "version", "nonce", "issuedAt", "expirationTime", "statement", "resources"} {
		if _, ok := wire.Info[k]; !ok {
			t.Errorf("info lacks %s: %s", k, raw)
		}
	}
	for _, k := range []string{"notBefore", "requestId"} {
		if _, ok := wire.Info[k]; ok {
			t.Errorf("info has an empty %s: %s", k, raw)
		}
	}
	if _, ok := wire.SupportedChains[0]["signatureScheme"]; ok {
		t.Errorf("empty signatureScheme sent: %s", raw)
	}
	s := wire.Schema
	if s.Schema != "https://json-schema.org/draft/2020-12/schema" || s.Type != "object" ||
		strings.Join(s.Required, ",") != "domain,address,uri,version,chainId,type,nonce,issuedAt,signature" ||
		s.Properties["uri"]["format"] != "uri" || s.Properties["issuedAt"]["format"] != "date-time" || len(s.Properties) != 14 {
		t.Fatalf("schema: %s", raw)
	}

	// No ttl: no expirationTime (as the official server without
	// expirationSeconds); the domain is new URL().host: the host
	// lower-cased, with a port that is not the scheme's default (the
	// official client checks the domain against the host it fetched);
	// networks are deduplicated.
	ch, err := NewChallenge("http://LocalHost:8080/x?y=1", []string{base, base}, "", now, 0)
	if err != nil || ch.Info.Domain != "localhost:8080" || ch.Info.ExpirationTime != "" || ch.Info.Statement != "" || len(ch.SupportedChains) != 1 {
		t.Fatalf("%+v %v", ch, err)
	}
	for u, domain := range map[string]string{
		"http://a.example:80/x": "a.example", "https://a.example:443/x": "a.example", "http://a.example/x": "a.example",
		"https://a.example:80/x": "a.example:80", "http://a.example:443/x": "a.example:443", "http://127.0.0.1:08080/x": "127.0.0.1:8080",
	} {
		if ch, err := NewChallenge(u, nil, "", now, time.Minute); err != nil || ch.Info.Domain != domain {
			t.Errorf("%s: domain %q, want %q (%v)", u, ch.Info.Domain, domain, err)
		}
	}
	// An IPv6 host is bracketed, as new URL().host writes it (the SIWE
	// grammar needs the brackets); it matches the origin's host, the
	// bracketed or bare host name when there is no port, and not without
	// its port.
	ch, err = NewChallenge("http://[::1]:8080/x", []string{base}, "", now, time.Minute)
	if err != nil || ch.Info.Domain != "[::1]:8080" {
		t.Fatalf("%+v %v", ch, err)
	}
	p, _ := SignEVM(ch, base, evmKey(t))
	for domain, ok := range map[string]bool{"": true, "[::1]:8080": true, "::1": false, "[::1]": false} {
		if _, err := Verify(p, Expect{Domain: domain, Origin: "http://[::1]:8080", Networks: []string{base}}, now); (err == nil) != ok {
			t.Errorf("Expect.Domain %q: %v", domain, err)
		}
	}
	ch, _ = NewChallenge("http://[::1]/x", []string{base}, "", now, time.Minute)
	p, _ = SignEVM(ch, base, evmKey(t))
	for _, domain := range []string{"", "::1", "[::1]"} {
		if _, err := Verify(p, Expect{Domain: domain, Origin: "http://[::1]", Networks: []string{base}}, now); err != nil || ch.Info.Domain != "[::1]" {
			t.Errorf("Expect.Domain %q: %v", domain, err)
		}
	}
	// No networks: an empty list, not null.
	ch, _ = NewChallenge("https://a.example/", nil, "", now, time.Minute)
	if raw, _ := json.Marshal(ch); !strings.Contains(string(raw), `"supportedChains":[]`) {
		t.Fatalf("%s", raw)
	}
	// Milliseconds as toISOString writes them, in UTC.
	ch, _ = NewChallenge("https://a.example/", nil, "", time.Date(2026, 1, 2, 3, 4, 5, 678_900_000, time.FixedZone("x", 3600)), time.Second)
	if ch.Info.IssuedAt != "2026-01-02T02:04:05.678Z" || ch.Info.ExpirationTime != "2026-01-02T02:04:06.678Z" {
		t.Fatalf("%+v", ch.Info)
	}
}

func TestChallengeRefusesWhatSIWECannotSign(t *testing.T) {
	for _, st := range []string{`say "hi"`, "100%", "a<b", "a>b", `back\slash`, "a^b", "a`b", "{x}", "a|b", "two\nlines", "tab\there", "é"} {
		if _, err := NewChallenge("https://api.example.com/x", nil, st, now, time.Minute); err == nil {
			t.Errorf("statement %q accepted", st)
		}
	}
	if _, err := NewChallenge("https://api.example.com/x", nil, "Sign in: #1 & more! (a+b)*c, [d] ~e_f @g =h ?i $j 'k' ;l /m .n -o", now, time.Minute); err != nil {
		t.Errorf("a statement of every allowed character: %v", err)
	}
	for _, u := range []string{"", "api.example.com/x", "/x", "ftp://api.example.com/x", "https://user@api.example.com/x",
		"https://api.example.com/a b", "https://api.example.com/é", "https://api.example.com/%zz"} {
		if _, err := NewChallenge(u, nil, "", now, time.Minute); err == nil {
			t.Errorf("resource URL %q accepted", u)
		}
	}
	for _, n := range []string{"cosmos:hub", "eip155:base", "solana:", "eip155"} {
		if _, err := NewChallenge("https://api.example.com/x", []string{n}, "", now, time.Minute); err == nil {
			t.Errorf("network %q accepted", n)
		}
	}
}

// knownInfo is the reference's example challenge.
func knownInfo() Info {
	return Info{Domain: "api.example.com", URI: "https://api.example.com/premium-data", Version: "1",
		Nonce: "a1b2c3d4e5f67890a1b2c3d4e5f67890", IssuedAt: "2024-01-15T10:30:00.000Z",
		ExpirationTime: "2024-01-15T10:35:00.000Z", Statement: "Sign in to access premium data",
		Resources: []string{"https://api.example.com/premium-data"}}
}

// The EIP-4361 text, spelled out by hand from the format.
func TestSIWEMessageKnownAnswer(t *testing.T) {
	const addr = "0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed" // EIP-55's own example
	p := Proof{Info: knownInfo(), ChainID: base, Type: "eip191", Address: addr}
	cases := []struct {
		name string
		edit func(*Proof)
		want string
	}{
		{"statement, expiration, resources", func(*Proof) {},
			"api.example.com wants you to sign in with your Ethereum account:\n" +
				"0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed\n" +
				"\n" +
				"Sign in to access premium data\n" +
				"\n" +
				"URI: https://api.example.com/premium-data\n" +
				"Version: 1\n" +
				"Chain ID: 8453\n" +
				"Nonce: a1b2c3d4e5f67890a1b2c3d4e5f67890\n" +
				"Issued At: 2024-01-15T10:30:00.000Z\n" +
				"Expiration Time: 2024-01-15T10:35:00.000Z\n" +
				"Resources:\n" +
				"- https://api.example.com/premium-data"},
		{"no statement: two empty lines", func(p *Proof) { p.Statement = "" },
			"api.example.com wants you to sign in with your Ethereum account:\n" +
				"0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed\n" +
				"\n" +
				"\n" +
				"URI: https://api.example.com/premium-data\n" +
				"Version: 1\n" +
				"Chain ID: 8453\n" +
				"Nonce: a1b2c3d4e5f67890a1b2c3d4e5f67890\n" +
				"Issued At: 2024-01-15T10:30:00.000Z\n" +
				"Expiration Time: 2024-01-15T10:35:00.000Z\n" +
				"Resources:\n" +
				"- https://api.example.com/premium-data"},
		{"bare, on mainnet", func(p *Proof) {
			p.Statement, p.ExpirationTime, p.Resources, p.ChainID = "", "", nil, "eip155:1"
		},
			"api.example.com wants you to sign in with your Ethereum account:\n" +
				"0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed\n" +
				"\n" +
				"\n" +
				"URI: https://api.example.com/premium-data\n" +
				"Version: 1\n" +
				"Chain ID: 1\n" +
				"Nonce: a1b2c3d4e5f67890a1b2c3d4e5f67890\n" +
				"Issued At: 2024-01-15T10:30:00.000Z"},
		{"every optional field, two resources", func(p *Proof) {
			p.NotBefore, p.RequestID = "2024-01-15T10:31:00.000Z", "req-42"
			p.Resources = []string{"https://api.example.com/a", "ipfs://bafy"}
		},
			"api.example.com wants you to sign in with your Ethereum account:\n" +
				"0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed\n" +
				"\n" +
				"Sign in to access premium data\n" +
				"\n" +
				"URI: https://api.example.com/premium-data\n" +
				"Version: 1\n" +
				"Chain ID: 8453\n" +
				"Nonce: a1b2c3d4e5f67890a1b2c3d4e5f67890\n" +
				"Issued At: 2024-01-15T10:30:00.000Z\n" +
				"Expiration Time: 2024-01-15T10:35:00.000Z\n" +
				"Not Before: 2024-01-15T10:31:00.000Z\n" +
				"Request ID: req-42\n" +
				"Resources:\n" +
				"- https://api.example.com/a\n" +
				"- ipfs://bafy"},
		// siwe writes "Resources:" for a present but empty list.
		{"empty resources list", func(p *Proof) { p.Resources = []string{}; p.ExpirationTime = "" },
			"api.example.com wants you to sign in with your Ethereum account:\n" +
				"0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed\n" +
				"\n" +
				"Sign in to access premium data\n" +
				"\n" +
				"URI: https://api.example.com/premium-data\n" +
				"Version: 1\n" +
				"Chain ID: 8453\n" +
				"Nonce: a1b2c3d4e5f67890a1b2c3d4e5f67890\n" +
				"Issued At: 2024-01-15T10:30:00.000Z\n" +
				"Resources:"},
		// siwe ≥ 4.2 checksums an all-lowercase (or all-uppercase) address;
		// parseInt reads a zero-padded chain id.
		{"lowercase address, padded chain id", func(p *Proof) {
			p.Address, p.ChainID, p.Statement, p.ExpirationTime, p.Resources = strings.ToLower(addr), "eip155:08453", "", "", nil
		},
			"api.example.com wants you to sign in with your Ethereum account:\n" +
				"0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed\n" +
				"\n" +
				"\n" +
				"URI: https://api.example.com/premium-data\n" +
				"Version: 1\n" +
				"Chain ID: 8453\n" +
				"Nonce: a1b2c3d4e5f67890a1b2c3d4e5f67890\n" +
				"Issued At: 2024-01-15T10:30:00.000Z"},
		{"uppercase address", func(p *Proof) {
			p.Address, p.Statement, p.ExpirationTime, p.Resources = "0x"+strings.ToUpper(addr[2:]), "", "", nil
		},
			"api.example.com wants you to sign in with your Ethereum account:\n" +
				"0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed\n" +
				"\n" +
				"\n" +
				"URI: https://api.example.com/premium-data\n" +
				"Version: 1\n" +
				"Chain ID: 8453\n" +
				"Nonce: a1b2c3d4e5f67890a1b2c3d4e5f67890\n" +
				"Issued At: 2024-01-15T10:30:00.000Z"},
	}
	for _, c := range cases {
		q := p
		c.edit(&q)
		got, err := SIWEMessage(q)
		if err != nil || got != c.want {
			t.Errorf("%s:\n%q\nwant\n%q (%v)", c.name, got, c.want, err)
		}
	}

	for _, c := range []struct {
		name string
		edit func(*Proof)
	}{
		{"wrong checksum", func(p *Proof) { p.Address = "0x5AAeb6053F3E94C9b9A09f33669435E7Ef1BeAed" }},
		{"short address", func(p *Proof) { p.Address = addr[:41] }},
		{"not hex", func(p *Proof) { p.Address = "0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAeZ" }},
		{"solana chain", func(p *Proof) { p.ChainID = solMain }},
		{"named chain", func(p *Proof) { p.ChainID = "eip155:base" }},
		{"statement outside the grammar", func(p *Proof) { p.Statement = `say "hi"` }},
		{"line break in the statement", func(p *Proof) { p.Statement = "a\nURI: x" }},
		{"line break in the uri", func(p *Proof) { p.URI = "https://api.example.com/\nx" }},
		{"line break in a resource", func(p *Proof) { p.Resources = []string{"a\n- b"} }},
		{"short nonce", func(p *Proof) { p.Nonce = "abc123" }},
		{"nonce with a dash", func(p *Proof) { p.Nonce = "abcd-1234" }},
	} {
		q := p
		c.edit(&q)
		if _, err := SIWEMessage(q); !strings.HasPrefix(reasonOf(err), ReasonMalformed) {
			t.Errorf("%s: %v", c.name, err)
		}
	}
}

// The Solana sign-in text, spelled out by hand from formatSIWSMessage.
func TestSIWSMessageKnownAnswer(t *testing.T) {
	const addr = "7RG54bKtHnKejca9kTfKJJuEgSAqjzsShC85LsH3F8Lz"
	p := Proof{Info: knownInfo(), ChainID: solMain, Type: "ed25519", Address: addr}
	for _, c := range []struct {
		name string
		edit func(*Proof)
		want string
	}{
		{"statement, expiration, resources", func(*Proof) {},
			"api.example.com wants you to sign in with your Solana account:\n" +
				"7RG54bKtHnKejca9kTfKJJuEgSAqjzsShC85LsH3F8Lz\n" +
				"\n" +
				"Sign in to access premium data\n" +
				"\n" +
				"URI: https://api.example.com/premium-data\n" +
				"Version: 1\n" +
				"Chain ID: 5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp\n" +
				"Nonce: a1b2c3d4e5f67890a1b2c3d4e5f67890\n" +
				"Issued At: 2024-01-15T10:30:00.000Z\n" +
				"Expiration Time: 2024-01-15T10:35:00.000Z\n" +
				"Resources:\n" +
				"- https://api.example.com/premium-data"},
		{"no statement: one empty line", func(p *Proof) { p.Statement, p.ExpirationTime, p.Resources = "", "", nil },
			"api.example.com wants you to sign in with your Solana account:\n" +
				"7RG54bKtHnKejca9kTfKJJuEgSAqjzsShC85LsH3F8Lz\n" +
				"\n" +
				"URI: https://api.example.com/premium-data\n" +
				"Version: 1\n" +
				"Chain ID: 5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp\n" +
				"Nonce: a1b2c3d4e5f67890a1b2c3d4e5f67890\n" +
				"Issued At: 2024-01-15T10:30:00.000Z"},
		{"every optional field on devnet; an empty resources list is no section", func(p *Proof) {
			p.ChainID, p.NotBefore, p.RequestID, p.Resources = "solana:EtWTRABZaYq6iMfeYKouRu166VU2xqa1", "2024-01-15T10:31:00.000Z", "r1", []string{}
		},
			"api.example.com wants you to sign in with your Solana account:\n" +
				"7RG54bKtHnKejca9kTfKJJuEgSAqjzsShC85LsH3F8Lz\n" +
				"\n" +
				"Sign in to access premium data\n" +
				"\n" +
				"URI: https://api.example.com/premium-data\n" +
				"Version: 1\n" +
				"Chain ID: EtWTRABZaYq6iMfeYKouRu166VU2xqa1\n" +
				"Nonce: a1b2c3d4e5f67890a1b2c3d4e5f67890\n" +
				"Issued At: 2024-01-15T10:30:00.000Z\n" +
				"Expiration Time: 2024-01-15T10:35:00.000Z\n" +
				"Not Before: 2024-01-15T10:31:00.000Z\n" +
				"Request ID: r1"},
	} {
		q := p
		c.edit(&q)
		got, err := SIWSMessage(q)
		if err != nil || got != c.want {
			t.Errorf("%s:\n%q\nwant\n%q (%v)", c.name, got, c.want, err)
		}
	}
	for _, chain := range []string{base, "solana:", "solana:a:b"} {
		q := p
		q.ChainID = chain
		if _, err := SIWSMessage(q); !strings.HasPrefix(reasonOf(err), ReasonMalformed) {
			t.Errorf("%s: %v", chain, err)
		}
	}
}

// A SIWE message signed by a real wallet (the siwe "Notepad" example,
// the verification vector of the siwe test suites): our rebuilt text and
// EIP-191 recovery agree with what a wallet produced.
func walletProof() Proof {
	return Proof{
		Info: Info{Domain: "localhost:4361", URI: "http://localhost:4361", Version: "1", Nonce: "kEWepMt9knR6lWJ6A",
			IssuedAt: "2021-12-07T18:28:18.807Z", Statement: "SIWE Notepad Example"},
		ChainID: "eip155:1", Type: "eip191", Address: "0x6Da01670d8fc844e736095918bbE11fE8D564163",
		Signature: "0x6228b3ecd7bf2df018183aeab6b6f1db1e9f4e3cbe24560404112e25363540eb679934908143224d746bbb5e1aa65ab435684081f4dbb74a0fec57f98f40f5051c",
	}
}

var (
	walletAt     = time.Date(2021, 12, 7, 18, 30, 0, 0, time.UTC)
	walletExpect = Expect{Domain: "localhost:4361", Origin: "http://localhost:4361", Networks: []string{"eip155:1"}, MaxAge: 5 * time.Minute}
)

func TestWalletVector(t *testing.T) {
	p := walletProof()
	msg, _ := SIWEMessage(p)
	if msg != "localhost:4361 wants you to sign in with your Ethereum account:\n0x6Da01670d8fc844e736095918bbE11fE8D564163\n\n"+
		"SIWE Notepad Example\n\nURI: http://localhost:4361\nVersion: 1\nChain ID: 1\nNonce: kEWepMt9knR6lWJ6A\nIssued At: 2021-12-07T18:28:18.807Z" {
		t.Fatalf("%q", msg)
	}
	addr, err := Verify(p, walletExpect, walletAt)
	if err != nil || addr != "0x6da01670d8fc844e736095918bbe11fe8d564163" {
		t.Fatalf("%q %v", addr, err)
	}

	// v as 0/1 instead of 27/28 is the same signature; other v are not.
	sig, _ := hex.DecodeString(p.Signature[2:])
	for v, ok := range map[byte]bool{0x1c: true, 0x01: true, 0x1b: false, 0x00: false} {
		q := p
		sig[64] = v
		q.Signature = "0x" + hex.EncodeToString(sig)
		_, err := Verify(q, walletExpect, walletAt)
		if ok != (err == nil) {
			t.Errorf("v=%d: %v", v, err)
		}
		if !ok && reasonOf(err) != ReasonBadSignature {
			t.Errorf("v=%d: %v", v, err)
		}
	}
	for _, v := range []byte{2, 3, 26, 29, 35} {
		q := p
		sig[64] = v
		q.Signature = "0x" + hex.EncodeToString(sig)
		if _, err := Verify(q, walletExpect, walletAt); !strings.HasPrefix(reasonOf(err), ReasonMalformed) {
			t.Errorf("v=%d: %v", v, err)
		}
	}
	// Upper-case hex and no 0x prefix are still the signature.
	q := p
	q.Signature = strings.ToUpper(p.Signature[2:])
	if _, err := Verify(q, walletExpect, walletAt); err != nil {
		t.Error(err)
	}

	// Lowercase address: the message still says the checksummed address
	// (siwe ≥ 4.2), so the wallet's signature verifies; the result is the
	// same normalized address.
	q = p
	q.Address = strings.ToLower(p.Address)
	if addr, err := Verify(q, walletExpect, walletAt); err != nil || addr != "0x6da01670d8fc844e736095918bbe11fe8d564163" {
		t.Errorf("lowercase address: %q %v", addr, err)
	}
	// Mixed case with a wrong checksum is not an address siwe builds a
	// message for.
	q.Address = "0x6DA01670d8fc844e736095918bbE11fE8D564163"
	if _, err := Verify(q, walletExpect, walletAt); !strings.HasPrefix(reasonOf(err), ReasonMalformed+"address") {
		t.Errorf("bad checksum: %v", err)
	}
}

func roundTrip(t *testing.T, p Proof) Proof {
	t.Helper()
	h, err := EncodeHeader(p)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := base64.StdEncoding.Strict().DecodeString(h); err != nil {
		t.Fatalf("not standard padded base64: %q", h)
	}
	back, err := ParseHeader(h)
	if err != nil {
		t.Fatal(err)
	}
	return back
}

func TestEVMRoundTrip(t *testing.T) {
	key := evmKey(t)
	p, err := SignEVM(challenge(t), base, key)
	if err != nil {
		t.Fatal(err)
	}
	if p.Address != "0x9858EfFD232B4033E47d90003D41EC34EcaEda94" || p.ChainID != base || p.Type != "eip191" ||
		!strings.HasPrefix(p.Signature, "0x") || len(p.Signature) != 132 || (p.Signature[130:] != "1b" && p.Signature[130:] != "1c") {
		t.Fatalf("%+v", p)
	}
	got, err := Verify(roundTrip(t, p), expect, now.Add(time.Minute))
	if err != nil || got != "0x9858effd232b4033e47d90003d41ec34ecaeda94" {
		t.Fatalf("%q %v", got, err)
	}
	// The same proof with the address lowercased still verifies: the
	// message is rebuilt with the checksummed address, as siwe ≥ 4.2 does.
	q := p
	q.Address = strings.ToLower(p.Address)
	if got, err := Verify(q, expect, now); err != nil || got != "0x9858effd232b4033e47d90003d41ec34ecaeda94" {
		t.Fatalf("lowercase address of a checksummed-message signature: %q %v", got, err)
	}
	// But a signature over a text spelling the address in lower case
	// (which the official client never produces) does not.
	msg, _ := SIWEMessage(p)
	literal := strings.Replace(msg, p.Address, q.Address, 1)
	sig, _ := crypto.Sign(textHash(literal), key)
	q.Signature = "0x" + hex.EncodeToString(sig)
	if _, err := Verify(q, expect, now); reasonOf(err) != ReasonBadSignature {
		t.Fatalf("signature over a lowercase-address text: %v", err)
	}
}

// textHash is EIP-191 personal_sign's digest, spelled out.
func textHash(msg string) []byte {
	return crypto.Keccak256([]byte("\x19Ethereum Signed Message:\n" + strconv.Itoa(len(msg)) + msg))
}

func TestSolanaRoundTrip(t *testing.T) {
	key := solKey(t)
	p, err := SignSolana(challenge(t), solMain, key)
	if err != nil {
		t.Fatal(err)
	}
	pub := key.Public().(ed25519.PublicKey)
	if p.Address != base58.Encode(pub) || p.Type != "ed25519" {
		t.Fatalf("%+v", p)
	}
	sig, err := base58.Decode(p.Signature)
	if err != nil || len(sig) != 64 {
		t.Fatalf("signature %q", p.Signature)
	}
	msg, _ := SIWSMessage(p)
	if !ed25519.Verify(pub, []byte(msg), sig) || !strings.HasPrefix(msg, "api.example.com wants you to sign in with your Solana account:\n"+p.Address+"\n\nSign in to list your purchases\n\nURI: ") {
		t.Fatalf("%q", msg)
	}
	got, err := Verify(roundTrip(t, p), expect, now)
	if err != nil || got != p.Address {
		t.Fatalf("%q %v", got, err)
	}
}

// A proof whose fields differ from what was signed fails, on both chains.
func TestTamperedProofs(t *testing.T) {
	other, _ := crypto.GenerateKey()
	_, otherSol, _ := ed25519.GenerateKey(nil)
	evm, _ := SignEVM(challenge(t), base, evmKey(t))
	sol, _ := SignSolana(challenge(t), solMain, solKey(t))
	otherEVM, _ := SignEVM(challenge(t), base, other)
	otherSOL, _ := SignSolana(challenge(t), solMain, otherSol)
	edits := map[string]func(p *Proof, sol bool){
		"nonce":          func(p *Proof, _ bool) { p.Nonce = "0000000000000000000000000000000a" },
		"uri":            func(p *Proof, _ bool) { p.URI = "https://api.example.com/api/x402/other" },
		"issuedAt":       func(p *Proof, _ bool) { p.IssuedAt = "2026-11-22T10:30:00.001Z" },
		"expirationTime": func(p *Proof, _ bool) { p.ExpirationTime = "2026-11-22T11:30:00.000Z" },
		"statement":      func(p *Proof, _ bool) { p.Statement = "Sign in to steal" },
		"no statement":   func(p *Proof, _ bool) { p.Statement = "" },
		"resources":      func(p *Proof, _ bool) { p.Resources = []string{"https://api.example.com/everything"} },
		"no resources":   func(p *Proof, _ bool) { p.Resources = nil },
		"requestId":      func(p *Proof, _ bool) { p.RequestID = "r" },
		"notBefore":      func(p *Proof, _ bool) { p.NotBefore = "2026-11-22T10:29:00.000Z" },
		"address": func(p *Proof, sol bool) {
			if sol {
				p.Address = otherSOL.Address
			} else {
				p.Address = otherEVM.Address
			}
		},
		"signature of another key": func(p *Proof, sol bool) {
			if sol {
				p.Signature = otherSOL.Signature
			} else {
				p.Signature = otherEVM.Signature
			}
		},
	}
	for name, edit := range edits {
		for _, p := range []Proof{evm, sol} {
			q := p
			q.Resources = append([]string(nil), p.Resources...)
			edit(&q, p.Type == TypeEd25519)
			if _, err := Verify(q, expect, now); reasonOf(err) != ReasonBadSignature {
				t.Errorf("%s changed on %s: %v", name, p.ChainID, err)
			}
		}
	}
	// Untouched, both pass.
	for _, p := range []Proof{evm, sol} {
		if _, err := Verify(p, expect, now); err != nil {
			t.Errorf("%s: %v", p.ChainID, err)
		}
	}
}

func TestRefusals(t *testing.T) {
	key := evmKey(t)
	resign := func(edit func(*Challenge)) Proof {
		ch := challenge(t)
		edit(&ch)
		p, err := SignEVM(ch, base, key)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	ok := resign(func(*Challenge) {})
	with := func(edit func(*Proof)) Proof { p := ok; edit(&p); return p }
	mainnet := func() Proof {
		ch := challenge(t)
		ch.SupportedChains = []Chain{{ChainID: "eip155:1", Type: "eip191"}}
		p, _ := SignEVM(ch, "eip155:1", key)
		return p
	}()
	for _, c := range []struct {
		name   string
		p      Proof
		at     time.Time
		reason string
	}{
		{"domain", resign(func(c *Challenge) { c.Info.Domain = "evil.example" }), now, "domain mismatch"},
		{"domain with port", resign(func(c *Challenge) { c.Info.Domain = "api.example.com:443" }), now, "domain mismatch"},
		{"uri elsewhere", resign(func(c *Challenge) { c.Info.URI = "https://evil.example/x" }), now, "uri does not belong to this origin"},
		{"uri prefix trick", resign(func(c *Challenge) { c.Info.URI = "https://api.example.com.evil.example/x" }), now, "uri does not belong to this origin"},
		{"uri user-info trick", resign(func(c *Challenge) { c.Info.URI = "https://api.example.com@evil.example/x" }), now, "uri does not belong to this origin"},
		{"uri other scheme", resign(func(c *Challenge) { c.Info.URI = "http://api.example.com/x" }), now, "uri does not belong to this origin"},
		{"uri other port", resign(func(c *Challenge) { c.Info.URI = "https://api.example.com:8443/x" }), now, "uri does not belong to this origin"},
		{"uri relative", resign(func(c *Challenge) { c.Info.URI = "/api/x402/purchases" }), now, "uri does not belong to this origin"},
		{"too old", ok, now.Add(5*time.Minute + time.Millisecond), "issuedAt is older than 5 minutes"},
		{"in the future", ok, now.Add(-31 * time.Second), "issuedAt is in the future"},
		{"expired", resign(func(c *Challenge) { c.Info.ExpirationTime = FormatTime(now.Add(time.Minute)) }), now.Add(2 * time.Minute), "expired"},
		{"expired at the instant", resign(func(c *Challenge) { c.Info.ExpirationTime = FormatTime(now.Add(time.Minute)) }), now.Add(time.Minute), "expired"},
		{"not yet valid", resign(func(c *Challenge) { c.Info.NotBefore = FormatTime(now.Add(time.Minute)) }), now, "not yet valid"},
		{"chain not accepted", mainnet, now, "unsupported chain"},
		{"type does not fit the chain", with(func(p *Proof) { p.Type = TypeEd25519 }), now, "unsupported chain"},
		{"signature of another message", with(func(p *Proof) { p.Signature = walletProof().Signature }), now, "signature does not match address"},
		{"version", resign(func(c *Challenge) { c.Info.Version = "2" }), now, `malformed proof: version must be "1"`},
		{"issuedAt not a date", with(func(p *Proof) { p.IssuedAt = "yesterday" }), now, "malformed proof: issuedAt is not an RFC 3339 date-time"},
		{"expirationTime not a date", with(func(p *Proof) { p.ExpirationTime = "soon" }), now, "malformed proof: expirationTime is not an RFC 3339 date-time"},
		{"notBefore not a date", with(func(p *Proof) { p.NotBefore = "1700000000" }), now, "malformed proof: notBefore is not an RFC 3339 date-time"},
		{"signature not hex", with(func(p *Proof) { p.Signature = "0xzz" }), now, "malformed proof: signature is not 65 bytes of 0x-hex"},
		{"signature short", with(func(p *Proof) { p.Signature = p.Signature[:130] }), now, "malformed proof: signature is not 65 bytes of 0x-hex"},
		{"address not EVM", with(func(p *Proof) { p.Address = "7RG54bKtHnKejca9kTfKJJuEgSAqjzsShC85LsH3F8Lz" }), now, "malformed proof: address is not a 0x-prefixed 20-byte hex EVM address"},
	} {
		if _, err := Verify(c.p, expect, c.at); reasonOf(err) != c.reason {
			t.Errorf("%s: %q, want %q", c.name, reasonOf(err), c.reason)
		}
	}

	// Within the bounds: issuedAt exactly MaxAge old, up to ClockSkew
	// ahead, notBefore up to ClockSkew ahead, the origin written with its
	// default port or in another case.
	for _, c := range []struct {
		name string
		p    Proof
		at   time.Time
	}{
		{"exactly 5 minutes old", resign(func(c *Challenge) { c.Info.ExpirationTime = "" }), now.Add(5 * time.Minute)},
		{"30 s ahead", ok, now.Add(-30 * time.Second)},
		{"notBefore 20 s ahead", resign(func(c *Challenge) { c.Info.NotBefore = FormatTime(now.Add(20 * time.Second)) }), now},
		{"default port", resign(func(c *Challenge) { c.Info.URI = "https://api.example.com:443/x" }), now},
		{"bare origin", resign(func(c *Challenge) { c.Info.URI = "https://api.example.com" }), now},
		{"host case", resign(func(c *Challenge) { c.Info.URI = "https://API.example.com/x"; c.Info.Domain = "API.example.com" }), now},
	} {
		if _, err := Verify(c.p, expect, c.at); err != nil {
			t.Errorf("%s: %v", c.name, err)
		}
	}

	// On a port that is not the scheme's default the domain carries the
	// port, as in the official server (validateSIWxMessage compares it
	// with new URL(origin).host): the host name alone is a mismatch.
	onPort := Expect{Origin: "https://api.example.com:8443", Networks: expect.Networks}
	portCh, err := NewChallenge("https://api.example.com:8443/api/x402/purchases", expect.Networks, "", now, time.Minute)
	if err != nil || portCh.Info.Domain != "api.example.com:8443" {
		t.Fatalf("%+v %v", portCh.Info, err)
	}
	for domain, reason := range map[string]string{
		"api.example.com:8443": "<nil>", "API.example.com:8443": "<nil>",
		"api.example.com": "domain mismatch", "api.example.com:443": "domain mismatch", "api.example.com:8444": "domain mismatch",
	} {
		ch := portCh
		ch.Info.Domain = domain
		p, err := SignEVM(ch, base, key)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := Verify(p, onPort, now); reasonOf(err) != reason {
			t.Errorf("domain %q on port 8443: %q, want %q", domain, reasonOf(err), reason)
		}
	}

	// MaxAge defaults to 5 minutes and names itself in the reason.
	if _, err := Verify(ok, Expect{Domain: expect.Domain, Origin: expect.Origin, Networks: expect.Networks}, now.Add(6*time.Minute)); reasonOf(err) != "issuedAt is older than 5 minutes" {
		t.Error(err)
	}
	short := expect
	short.MaxAge = 90 * time.Second
	if _, err := Verify(ok, short, now.Add(2*time.Minute)); reasonOf(err) != "issuedAt is older than 1m30s" {
		t.Error(err)
	}
	// A bad Expect is the caller's error, not a refusal.
	bad := expect
	bad.Origin = "api.example.com"
	var e *Error
	if _, err := Verify(ok, bad, now); err == nil || errors.As(err, &e) {
		t.Errorf("bad origin: %v", err)
	}
	// The error reads as a refusal.
	if _, err := Verify(with(func(p *Proof) { p.Domain = "x" }), expect, now); err.Error() != "sign-in refused: domain mismatch" {
		t.Error(err)
	}
}

func TestSolanaRefusals(t *testing.T) {
	p, _ := SignSolana(challenge(t), solMain, solKey(t))
	for _, c := range []struct {
		name   string
		edit   func(*Proof)
		reason string
	}{
		{"address not base58", func(p *Proof) { p.Address = "0OIl" + p.Address[4:] }, "malformed proof: address is not a base58 Ed25519 public key"},
		{"address too short", func(p *Proof) { p.Address = p.Address[:20] }, "malformed proof: address is not a base58 Ed25519 public key"},
		{"address EVM", func(p *Proof) { p.Address = "0x9858EfFD232B4033E47d90003D41EC34EcaEda94" }, "malformed proof: address is not a base58 Ed25519 public key"},
		{"signature hex", func(p *Proof) { p.Signature = "0x" + strings.Repeat("ab", 64) }, "malformed proof: signature is not 64 bytes of base58"},
		{"signature short", func(p *Proof) { p.Signature = base58.Encode(make([]byte, 63)) }, "malformed proof: signature is not 64 bytes of base58"},
		{"signature of zeros", func(p *Proof) { p.Signature = base58.Encode(make([]byte, 64)) }, "signature does not match address"},
		{"devnet", func(p *Proof) { p.ChainID = "solana:EtWTRABZaYq6iMfeYKouRu166VU2xqa1" }, "unsupported chain"},
		{"eip191 type", func(p *Proof) { p.Type = TypeEIP191 }, "unsupported chain"},
	} {
		q := p
		c.edit(&q)
		if _, err := Verify(q, expect, now); reasonOf(err) != c.reason {
			t.Errorf("%s: %q, want %q", c.name, reasonOf(err), c.reason)
		}
	}
}

func encode(v any) string {
	b, _ := json.Marshal(v)
	return base64.StdEncoding.EncodeToString(b)
}

func TestParseHeader(t *testing.T) {
	p, _ := SignEVM(challenge(t), base, evmKey(t))
	b, _ := json.Marshal(p)
	for name, h := range map[string]string{
		"standard":            base64.StdEncoding.EncodeToString(b),
		"unpadded":            base64.RawStdEncoding.EncodeToString(b),
		"URL-safe":            base64.URLEncoding.EncodeToString(b),
		"URL-safe unpadded":   base64.RawURLEncoding.EncodeToString(b),
		"surrounding spaces:": " " + base64.StdEncoding.EncodeToString(b) + " ",
	} {
		got, err := ParseHeader(h)
		if err != nil || got.Nonce != p.Nonce || got.Signature != p.Signature || len(got.Resources) != 1 || got.Statement != p.Statement {
			t.Errorf("%s: %+v %v", name, got, err)
		}
	}

	// Pretty-printed JSON reads the same.
	pretty, _ := json.MarshalIndent(p, " ", "\t")
	if got, err := ParseHeader(base64.StdEncoding.EncodeToString(pretty)); err != nil || got.Signature != p.Signature || len(got.Resources) != 1 {
		t.Errorf("pretty: %+v %v", got, err)
	}

	// The official client's JSON, keys in its order, with an unknown key.
	js := `{"domain":"api.example.com","address":"0xAb","statement":"Hi","uri":"https://api.example.com/x","version":"1",` +
		`"chainId":"eip155:8453","type":"eip191","nonce":"abcdefgh","issuedAt":"2026-01-01T00:00:00.000Z",` +
		`"resources":["https://api.example.com/x"],"signatureScheme":"eip191","signature":"0x00","extra":{"a":1}}`
	got, err := ParseHeader(base64.StdEncoding.EncodeToString([]byte(js)))
	if err != nil || got.Address != "0xAb" || got.Statement != "Hi" || got.SignatureScheme != "eip191" || got.ExpirationTime != "" {
		t.Fatalf("%+v %v", got, err)
	}

	obj := func(edit func(m map[string]any)) string {
		var m map[string]any
		_ = json.Unmarshal([]byte(js), &m)
		edit(m)
		return encode(m)
	}
	cases := map[string]struct{ h, reason string }{
		"empty":            {"", "malformed proof: the header is empty or too large"},
		"too large":        {strings.Repeat("A", 20000), "malformed proof: the header is empty or too large"},
		"not base64":       {"!!!", "malformed proof: not base64"},
		"not JSON":         {base64.StdEncoding.EncodeToString([]byte("hello")), "malformed proof: not a JSON object"},
		"null":             {encode(nil), "malformed proof: not a JSON object"},
		"array":            {encode([]int{1}), "malformed proof: not a JSON object"},
		"string":           {encode("x"), "malformed proof: not a JSON object"},
		"trailing garbage": {base64.StdEncoding.EncodeToString([]byte(js + "x")), "malformed proof: not a JSON object"},
		"empty object":     {encode(map[string]any{}), "malformed proof: domain is missing"},
		"number domain":    {obj(func(m map[string]any) { m["domain"] = 7 }), "malformed proof: domain is not a string"},
		"null statement":   {obj(func(m map[string]any) { m["statement"] = nil }), "malformed proof: statement is not a string"},
		"empty nonce":      {obj(func(m map[string]any) { m["nonce"] = "" }), "malformed proof: nonce is empty"},
		"resources string": {obj(func(m map[string]any) { m["resources"] = "https://x" }), "malformed proof: resources is not an array of strings"},
		"resources null":   {obj(func(m map[string]any) { m["resources"] = nil }), "malformed proof: resources is not an array of strings"},
		"resources ints":   {obj(func(m map[string]any) { m["resources"] = []int{1} }), "malformed proof: resources is not an array of strings"},
		"type eip1271":     {obj(func(m map[string]any) { m["type"] = "eip1271" }), "malformed proof: type must be eip191 or ed25519"},
		"chainId bare":     {obj(func(m map[string]any) { m["chainId"] = "8453" }), "malformed proof: chainId is not a CAIP-2 chain id"},
		"chainId upper":    {obj(func(m map[string]any) { m["chainId"] = "EIP155:8453" }), "malformed proof: chainId is not a CAIP-2 chain id"},
		"scheme unknown":   {obj(func(m map[string]any) { m["signatureScheme"] = "eip712" }), "malformed proof: signatureScheme must be eip191, eip1271, eip6492 or siws"},
		// Keys match exactly, as JSON.parse + zod do (encoding/json alone
		// would take "Domain" for "domain").
		"key case": {obj(func(m map[string]any) { m["Domain"] = m["domain"]; delete(m, "domain") }), "malformed proof: domain is missing"},
	}
	for _, f := range []string{"domain", "address", "uri", "version", "chainId", "type", "nonce", "issuedAt", "signature"} {
		cases["without "+f] = struct{ h, reason string }{obj(func(m map[string]any) { delete(m, f) }), "malformed proof: " + f + " is missing"}
	}
	for name, c := range cases {
		if _, err := ParseHeader(c.h); reasonOf(err) != c.reason {
			t.Errorf("%s: %q, want %q", name, reasonOf(err), c.reason)
		}
	}
	// Optional fields may be absent.
	got, err = ParseHeader(obj(func(m map[string]any) { delete(m, "statement"); delete(m, "resources"); delete(m, "signatureScheme") }))
	if err != nil || got.Resources != nil || got.Statement != "" {
		t.Fatalf("%+v %v", got, err)
	}
}

func TestSignHelpersRefuse(t *testing.T) {
	ch := challenge(t)
	if _, err := SignEVM(ch, "eip155:1", evmKey(t)); err == nil {
		t.Error("signed for a chain the challenge does not offer")
	}
	if _, err := SignEVM(ch, solMain, evmKey(t)); err == nil {
		t.Error("EVM-signed for Solana")
	}
	if _, err := SignSolana(ch, base, solKey(t)); err == nil {
		t.Error("Solana-signed for EVM")
	}
	if _, err := SignSolana(ch, solMain, solKey(t)[:32]); err == nil {
		t.Error("signed with a 32-byte key")
	}
	bad := ch
	bad.SupportedChains = []Chain{{ChainID: base, Type: TypeEd25519}}
	if _, err := SignEVM(bad, base, evmKey(t)); err == nil {
		t.Error("signed a chain offered with the wrong type")
	}
	// An empty resources list is signed as absent, which is what the
	// header will carry.
	ch.Info.Resources = []string{}
	p, err := SignEVM(ch, base, evmKey(t))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Verify(roundTrip(t, p), expect, now); err != nil {
		t.Fatal(err)
	}
}

func FuzzParseHeader(f *testing.F) {
	p := Proof{Info: Info{Domain: "a", URI: "https://a/", Version: "1", Nonce: "abcdefgh", IssuedAt: "2026-01-01T00:00:00.000Z"},
		ChainID: "eip155:8453", Type: "eip191", Address: "0x0000000000000000000000000000000000000000", Signature: "0x00"}
	h, _ := EncodeHeader(p)
	f.Add(h)
	w, _ := EncodeHeader(walletProof())
	f.Add(w)
	f.Add("e30")
	f.Add("bnVsbA==")
	f.Add("")
	f.Fuzz(func(t *testing.T, h string) {
		p, err := ParseHeader(h)
		if err != nil {
			if !strings.HasPrefix(reasonOf(err), ReasonMalformed) {
				t.Fatalf("not a malformed-proof refusal: %v", err)
			}
			return
		}
		// Rebuilding and verifying never panic, and only the one real
		// signature in the corpus verifies.
		_, _ = SIWEMessage(p)
		_, _ = SIWSMessage(p)
		addr, err := Verify(p, Expect{Domain: p.Domain, Origin: "https://a", Networks: []string{p.ChainID}, MaxAge: time.Hour},
			time.Date(2026, 1, 1, 0, 1, 0, 0, time.UTC))
		if err == nil && addr != "0x6da01670d8fc844e736095918bbe11fe8d564163" {
			t.Fatalf("an unsigned proof verified: %+v", p)
		}
	})
}

// A proof the official client (@x402/extensions 2.27.0 createSIWxPayload,
// viem privateKeyToAccount of evmKey) made for an API on a non-default
// port: the domain carries the port, the message is rebuilt byte for byte
// and verifies, and SignEVM makes the same (deterministic) signature.
func TestOfficialClientProofOnAPort(t *testing.T) {
	const (
		official = `{"domain":"127.0.0.1:41234","address":"0x9858EfFD232B4033E47d90003D41EC34EcaEda94","statement":"Sign in to list your purchases","uri":"http://127.0.0.1:41234/api/x402/purchases","version":"1","chainId":"eip155:8453","type":"eip191","nonce":"a1b2c3d4e5f67890a1b2c3d4e5f67890","issuedAt":"2026-11-22T10:30:00.000Z","expirationTime":"2026-11-22T10:35:00.000Z","resources":["http://127.0.0.1:41234/api/x402/purchases"],"signature":"0x195b4ff21ebdc255ce14a4823e6e31e29728a87ebbe4ed018c953773c112d4d376c03c726f8e3e479991b8083deeb43b79ebe6cd76c87e332efa855cc15e75711c"}`
		message  = "127.0.0.1:41234 wants you to sign in with your Ethereum account:\n0x9858EfFD232B4033E47d90003D41EC34EcaEda94\n\n" +
			"Sign in to list your purchases\n\nURI: http://127.0.0.1:41234/api/x402/purchases\nVersion: 1\nChain ID: 8453\n" +
			"Nonce: a1b2c3d4e5f67890a1b2c3d4e5f67890\nIssued At: 2026-11-22T10:30:00.000Z\nExpiration Time: 2026-11-22T10:35:00.000Z\n" +
			"Resources:\n- http://127.0.0.1:41234/api/x402/purchases"
	)
	p, err := ParseHeader(base64.StdEncoding.EncodeToString([]byte(official)))
	if err != nil {
		t.Fatal(err)
	}
	if msg, err := SIWEMessage(p); err != nil || msg != message {
		t.Fatalf("%q %v", msg, err)
	}
	addr, err := Verify(p, Expect{Origin: "http://127.0.0.1:41234", Networks: []string{base}}, now.Add(time.Minute))
	if err != nil || addr != "0x9858effd232b4033e47d90003d41ec34ecaeda94" {
		t.Fatalf("%q %v", addr, err)
	}
	ch := Challenge{Info: p.Info, SupportedChains: []Chain{{ChainID: base, Type: TypeEIP191}}}
	if mine, err := SignEVM(ch, base, evmKey(t)); err != nil || mine.Signature != p.Signature {
		t.Fatalf("%s %v", mine.Signature, err)
	}
	// The same proof against the bare host name, as a portless challenge
	// would have named it: refused.
	if _, err := Verify(p, Expect{Domain: "127.0.0.1", Origin: "http://127.0.0.1:41234", Networks: []string{base}}, now.Add(time.Minute)); reasonOf(err) != ReasonDomainMismatch {
		t.Fatal(err)
	}
}
