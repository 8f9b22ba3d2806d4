package signer

import (
	"crypto/ecdsa"
	"crypto/ed25519"
	"encoding/hex"
	"encoding/json"
	"fmt"

	"github.com/ethereum/go-ethereum/crypto"
	"github.com/gagliardetto/solana-go"
	"github.com/mr-tron/base58"

	"conduit/internal/enclaves/provider"
	"conduit/internal/errs"
)

// RawKey is the deprecated signer: keys given to the platform from outside an enclave (as before
// enclave-held keys), kept sealed at rest and used by the platform itself. Nothing attests them;
// every answer they sign carries Warning.
type RawKey struct {
	EVM    *ecdsa.PrivateKey
	Solana ed25519.PrivateKey
}

// RawKeyInput is how a raw key is configured: evmPrivateKey as 32-byte hex, solanaPrivateKey as a
// base58 keypair (64 bytes, the Solana CLI's and wallets' export) or 32-byte seed. At least one.
type RawKeyInput struct {
	EVMPrivateKey    string `json:"evmPrivateKey"`
	SolanaPrivateKey string `json:"solanaPrivateKey"`
}

// Parse validates the input.
func (in RawKeyInput) Parse() (RawKey, error) {
	var k RawKey
	if in.EVMPrivateKey == "" && in.SolanaPrivateKey == "" {
		return k, invalid("evmPrivateKey", "evmPrivateKey or solanaPrivateKey is required")
	}
	if in.EVMPrivateKey != "" {
		b, err := decodeHex(in.EVMPrivateKey)
		if err != nil || len(b) != 32 {
			return k, invalid("evmPrivateKey", "must be a 32-byte hex private key")
		}
		if k.EVM, err = crypto.ToECDSA(b); err != nil {
			return k, invalid("evmPrivateKey", "is not a valid secp256k1 key")
		}
	}
	if in.SolanaPrivateKey != "" {
		b, err := base58.Decode(in.SolanaPrivateKey)
		switch {
		case err != nil:
			return k, invalid("solanaPrivateKey", "must be base58")
		case len(b) == ed25519.SeedSize:
			k.Solana = ed25519.NewKeyFromSeed(b)
		case len(b) == ed25519.PrivateKeySize:
			k.Solana = ed25519.NewKeyFromSeed(b[:32])
			if string(k.Solana.Public().(ed25519.PublicKey)) != string(b[32:]) {
				return k, invalid("solanaPrivateKey", "its public half does not belong to its seed")
			}
		default:
			return k, invalid("solanaPrivateKey", "must be a 64-byte keypair or a 32-byte seed, got %d bytes", len(b))
		}
	}
	return k, nil
}

// EVMAddress is the raw key's address ("" without an EVM key).
func (k RawKey) EVMAddress() string {
	if k.EVM == nil {
		return ""
	}
	return crypto.PubkeyToAddress(k.EVM.PublicKey).Hex()
}

// SolanaPublicKey is the raw key's Solana key ("" without one).
func (k RawKey) SolanaPublicKey() string {
	if k.Solana == nil {
		return ""
	}
	return solana.PublicKeyFromBytes(k.Solana.Public().(ed25519.PublicKey)).String()
}

// Sign signs r as the enclave would (same payloads, same signature forms), and answers the key that
// signed and, for a Solana transaction, its signer slot.
func (k RawKey) Sign(r Request) (sig []byte, signer string, index int, err error) {
	if err := r.Validate(); err != nil {
		return nil, "", 0, err
	}
	switch r.Key() {
	case provider.KeyEVM:
		if k.EVM == nil {
			return nil, "", 0, errs.Invalidf("the raw-key signer has no EVM key")
		}
		sig, err = crypto.Sign(r.Payload, k.EVM)
		return sig, k.EVMAddress(), 0, err
	default:
		if k.Solana == nil {
			return nil, "", 0, errs.Invalidf("the raw-key signer has no Solana key")
		}
		if r.Purpose == PurposeSolanaTransaction {
			m, err := ParseSolanaMessage(r.Payload)
			if err != nil {
				return nil, "", 0, err
			}
			index = signerIndex(m, solana.PublicKeyFromBytes(k.Solana.Public().(ed25519.PublicKey)))
			if index < 0 {
				return nil, "", 0, errs.Invalidf("transaction: the raw key %s is not one of the transaction's required signers", k.SolanaPublicKey())
			}
		}
		return ed25519.Sign(k.Solana, r.Payload), k.SolanaPublicKey(), index, nil
	}
}

// wireRawKey is how a raw key is sealed.
type wireRawKey struct {
	EVM    string `json:"secp256k1,omitempty"`
	Solana string `json:"ed25519,omitempty"` // seed
}

// Marshal encodes the key for sealing (the output is secret).
func (k RawKey) Marshal() ([]byte, error) {
	var w wireRawKey
	if k.EVM != nil {
		w.EVM = hex.EncodeToString(crypto.FromECDSA(k.EVM))
	}
	if k.Solana != nil {
		w.Solana = hex.EncodeToString(k.Solana.Seed())
	}
	return json.Marshal(w)
}

// UnmarshalRawKey decodes what Marshal wrote.
func UnmarshalRawKey(b []byte) (RawKey, error) {
	var w wireRawKey
	if err := json.Unmarshal(b, &w); err != nil {
		return RawKey{}, err
	}
	var k RawKey
	if w.EVM != "" {
		var err error
		if k.EVM, err = crypto.HexToECDSA(w.EVM); err != nil {
			return RawKey{}, fmt.Errorf("raw key: %v", err)
		}
	}
	if w.Solana != "" {
		seed, err := hex.DecodeString(w.Solana)
		if err != nil || len(seed) != ed25519.SeedSize {
			return RawKey{}, fmt.Errorf("raw key: bad ed25519 seed")
		}
		k.Solana = ed25519.NewKeyFromSeed(seed)
	}
	return k, nil
}

// RawKeyPurpose is the additional data a raw key is sealed with.
func RawKeyPurpose(enclaveID string) string { return "enclave/" + enclaveID + "/raw-signing-key" }
