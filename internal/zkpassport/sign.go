package zkpassport

import (
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// Signer signs attestations as compact JWS (EdDSA over Ed25519); its
// public key is published at GET /api/zkpassport/keys as a JWK set, so
// anyone can check an attestation offline.
type Signer struct {
	key ed25519.PrivateKey
	// KeyID names the key in each attestation's header (kid): the first
	// 8 bytes of sha256 of the public key, hex.
	KeyID string
}

// NewSigner reads zkpassport.signing_key (base64 of a 32-byte Ed25519
// seed); empty makes a key for this process only, whose attestations
// verify against the key it publishes while it runs.
func NewSigner(seedB64 string) (*Signer, bool, error) {
	var seed []byte
	ephemeral := seedB64 == ""
	if ephemeral {
		seed = make([]byte, ed25519.SeedSize)
		if _, err := rand.Read(seed); err != nil {
			return nil, false, err
		}
	} else {
		b, err := base64.StdEncoding.DecodeString(seedB64)
		if err != nil || len(b) != ed25519.SeedSize {
			return nil, false, errors.New("zkpassport.signing_key must be base64 of 32 bytes")
		}
		seed = b
	}
	key := ed25519.NewKeyFromSeed(seed)
	sum := sha256.Sum256(key.Public().(ed25519.PublicKey))
	return &Signer{key: key, KeyID: hex.EncodeToString(sum[:8])}, ephemeral, nil
}

// JWK is a published public key.
type JWK struct {
	Kty string `json:"kty"`
	Crv string `json:"crv"`
	X   string `json:"x"`
	Kid string `json:"kid"`
	Alg string `json:"alg"`
	Use string `json:"use"`
}

// JWKS is GET /api/zkpassport/keys's answer.
type JWKS struct {
	Keys []JWK `json:"keys"`
}

// Keys is the published key set.
func (s *Signer) Keys() JWKS {
	return JWKS{Keys: []JWK{{Kty: "OKP", Crv: "Ed25519", X: base64.RawURLEncoding.EncodeToString(s.key.Public().(ed25519.PublicKey)),
		Kid: s.KeyID, Alg: "EdDSA", Use: "sig"}}}
}

var b64 = base64.RawURLEncoding

// Sign makes a compact JWS of payload.
func (s *Signer) Sign(payload any) (string, error) {
	header, _ := json.Marshal(map[string]string{"alg": "EdDSA", "typ": "zkpassport-attestation+jwt", "kid": s.KeyID})
	body, err := json.Marshal(payload)
	if err != nil {
		return "", err
	}
	input := b64.EncodeToString(header) + "." + b64.EncodeToString(body)
	return input + "." + b64.EncodeToString(ed25519.Sign(s.key, []byte(input))), nil
}

// VerifyJWS checks a compact JWS against a published key set and answers
// its payload (what a relying party does with an attestation).
func VerifyJWS(jws string, keys JWKS) (json.RawMessage, error) {
	parts := strings.Split(jws, ".")
	if len(parts) != 3 {
		return nil, errors.New("not a compact JWS")
	}
	hb, err := b64.DecodeString(parts[0])
	if err != nil {
		return nil, err
	}
	var h struct{ Alg, Kid string }
	if err := json.Unmarshal(hb, &h); err != nil || h.Alg != "EdDSA" {
		return nil, errors.New("the header is not EdDSA")
	}
	sig, err := b64.DecodeString(parts[2])
	if err != nil {
		return nil, err
	}
	for _, k := range keys.Keys {
		if k.Kid != h.Kid {
			continue
		}
		pub, err := b64.DecodeString(k.X)
		if err != nil || len(pub) != ed25519.PublicKeySize {
			return nil, errors.New("the published key is malformed")
		}
		if !ed25519.Verify(pub, []byte(parts[0]+"."+parts[1]), sig) {
			return nil, errors.New("the signature does not verify")
		}
		return b64.DecodeString(parts[1])
	}
	return nil, fmt.Errorf("no published key %q", h.Kid)
}
