package attest

import (
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"errors"
	"testing"

	"github.com/ethereum/go-ethereum/accounts"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/gagliardetto/solana-go"
)

// attestedKeys signs a document binding keys, as the agent would, and verifies it.
func attestedKeys(t *testing.T, keys SigningKeys) Report {
	t.Helper()
	userData, err := keys.UserData()
	if err != nil {
		t.Fatal(err)
	}
	a := newAuthority(t)
	pcrs := measuredPCRs(t)
	doc := sign(t, issue(t, a), Document{PCRs: pcrs, Nonce: testNonce, UserData: userData})
	r := Verify(doc, VerifyOptions{Root: a.Root(), PCRs: pcrs, Nonce: testNonce, Now: at(t0)})
	wantVerified(t, r, TrustLocal, 100)
	return r
}

func TestAttestedEVMAddressRecoversFromSignatures(t *testing.T) {
	key, err := crypto.GenerateKey() // secp256k1, made "inside the enclave"
	if err != nil {
		t.Fatal(err)
	}
	r := attestedKeys(t, SigningKeys{EVM: &key.PublicKey})
	addr, err := r.EVMAddress()
	if err != nil {
		t.Fatal(err)
	}
	if addr != crypto.PubkeyToAddress(key.PublicKey) {
		t.Fatalf("attested %s, key's address %s", addr, crypto.PubkeyToAddress(key.PublicKey))
	}

	// A personal_sign message signed by the enclave's key recovers to the attested address…
	hash := accounts.TextHash([]byte("pay 1 USDC to 0xabc"))
	sig, err := crypto.Sign(hash, key)
	if err != nil {
		t.Fatal(err)
	}
	pub, err := crypto.SigToPub(hash, sig)
	if err != nil {
		t.Fatal(err)
	}
	if crypto.PubkeyToAddress(*pub) != addr {
		t.Error("the enclave's signature does not recover to the attested address")
	}
	// …and one by any other key does not.
	other, _ := crypto.GenerateKey()
	sig, _ = crypto.Sign(hash, other)
	if pub, _ := crypto.SigToPub(hash, sig); crypto.PubkeyToAddress(*pub) == addr {
		t.Error("another key's signature recovers to the attested address")
	}
	if _, err := r.SolanaPublicKey(); err == nil {
		t.Error("a Solana key was found where only an EVM key is bound")
	}
}

func TestAttestedSolanaKeyVerifiesSignatures(t *testing.T) {
	priv, err := solana.NewRandomPrivateKey()
	if err != nil {
		t.Fatal(err)
	}
	r := attestedKeys(t, SigningKeys{Solana: ed25519.PublicKey(priv.PublicKey().Bytes())})
	pk, err := r.SolanaPublicKey()
	if err != nil {
		t.Fatal(err)
	}
	if !pk.Equals(priv.PublicKey()) {
		t.Fatalf("attested %s, key %s", pk, priv.PublicKey())
	}
	msg := []byte("a serialized Solana transaction message")
	sig, err := priv.Sign(msg)
	if err != nil {
		t.Fatal(err)
	}
	if !pk.Verify(msg, sig) {
		t.Error("the enclave's signature does not verify under the attested key")
	}
	other, _ := solana.NewRandomPrivateKey()
	if sig, _ := other.Sign(msg); pk.Verify(msg, sig) {
		t.Error("another key's signature verifies under the attested key")
	}
	if _, err := r.EVMAddress(); err == nil {
		t.Error("an EVM address was found where only a Solana key is bound")
	}
}

func TestBothKeysBindTogether(t *testing.T) {
	evm, _ := crypto.GenerateKey()
	sol, _ := solana.NewRandomPrivateKey()
	r := attestedKeys(t, SigningKeys{EVM: &evm.PublicKey, Solana: ed25519.PublicKey(sol.PublicKey().Bytes())})
	if addr, err := r.EVMAddress(); err != nil || addr != crypto.PubkeyToAddress(evm.PublicKey) {
		t.Errorf("EVM address %s, %v", addr, err)
	}
	if pk, err := r.SolanaPublicKey(); err != nil || !pk.Equals(sol.PublicKey()) {
		t.Errorf("Solana key %s, %v", pk, err)
	}
}

func TestKeysOfAnUnverifiedDocumentAreRefused(t *testing.T) {
	key, _ := crypto.GenerateKey()
	r := attestedKeys(t, SigningKeys{EVM: &key.PublicKey})
	r.VerificationStatus, r.TrustLevel = StatusFailed, TrustNone
	if _, err := r.EVMAddress(); !errors.Is(err, ErrNotVerified) {
		t.Errorf("failed report: %v, want ErrNotVerified", err)
	}
	if _, err := (&Report{}).SolanaPublicKey(); !errors.Is(err, ErrNotVerified) {
		t.Errorf("empty report: %v, want ErrNotVerified", err)
	}

	doc, opts, _ := goodDocument(t) // verified, but binds nothing
	plain := Verify(doc, opts)
	if _, err := plain.EVMAddress(); err == nil {
		t.Error("an address was found in a document without user_data")
	}
}

func TestSigningKeysEncodingIsChecked(t *testing.T) {
	p256, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	for name, k := range map[string]SigningKeys{
		"nothing":            {},
		"a P-256 EVM key":    {EVM: &p256.PublicKey},
		"a short Solana key": {Solana: make(ed25519.PublicKey, 31)},
	} {
		if _, err := k.UserData(); err == nil {
			t.Errorf("%s: encoded", name)
		}
	}
}
