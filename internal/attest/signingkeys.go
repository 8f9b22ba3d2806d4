package attest

import (
	"crypto/ecdsa"
	"crypto/ed25519"
	"errors"
	"fmt"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/gagliardetto/solana-go"
)

// SigningKeys are the public halves of the keys an enclave's agent generated inside the enclave and
// signs transactions with. Bound into a document's user_data, they let anyone who verifies the
// document check that a signature came from the attested enclave: an EVM signature must recover
// to EVM's address, a Solana signature must verify under Solana.
//
// The binding lives in user_data, not public_key: on Nitro, public_key is the key services such as
// KMS encrypt their answers to, and one document may need both.
type SigningKeys struct {
	EVM    *ecdsa.PublicKey  // secp256k1 key of the EVM account
	Solana ed25519.PublicKey // Solana account key
}

// wireSigningKeys is user_data's encoding: a CBOR map with one entry per key the agent holds.
type wireSigningKeys struct {
	Secp256k1 []byte `cbor:"secp256k1,omitempty"` // 65-byte uncompressed public key
	Ed25519   []byte `cbor:"ed25519,omitempty"`   // 32-byte public key
}

// ErrNotVerified is returned when keys are asked of a report that did not verify.
var ErrNotVerified = errors.New("attest: the document did not verify, so the keys in it prove nothing")

// UserData encodes the keys for Document.UserData.
func (k SigningKeys) UserData() ([]byte, error) {
	var w wireSigningKeys
	if k.EVM != nil {
		if k.EVM.Curve != crypto.S256() {
			return nil, errors.New("attest: the EVM key is not a secp256k1 key")
		}
		w.Secp256k1 = crypto.FromECDSAPub(k.EVM)
	}
	if k.Solana != nil {
		if len(k.Solana) != ed25519.PublicKeySize {
			return nil, fmt.Errorf("attest: the Solana key is %d bytes, want %d", len(k.Solana), ed25519.PublicKeySize)
		}
		w.Ed25519 = k.Solana
	}
	if w.Secp256k1 == nil && w.Ed25519 == nil {
		return nil, errors.New("attest: no signing key to bind")
	}
	return payloadEncMode.Marshal(w)
}

// SigningKeys returns the keys bound into a verified document's user_data.
func (r *Report) SigningKeys() (SigningKeys, error) {
	if !r.Verified() || r.Document == nil {
		return SigningKeys{}, ErrNotVerified
	}
	if r.Document.UserData == nil {
		return SigningKeys{}, errors.New("attest: the document has no user_data, so no signing keys")
	}
	var w wireSigningKeys
	if err := payloadDecMode.Unmarshal(r.Document.UserData, &w); err != nil {
		return SigningKeys{}, fmt.Errorf("attest: user_data is not a signing-key binding: %v", err)
	}
	var k SigningKeys
	if w.Secp256k1 != nil {
		pub, err := crypto.UnmarshalPubkey(w.Secp256k1)
		if err != nil {
			return SigningKeys{}, fmt.Errorf("attest: the bound secp256k1 key: %v", err)
		}
		k.EVM = pub
	}
	if w.Ed25519 != nil {
		if len(w.Ed25519) != ed25519.PublicKeySize {
			return SigningKeys{}, fmt.Errorf("attest: the bound ed25519 key is %d bytes", len(w.Ed25519))
		}
		k.Solana = ed25519.PublicKey(w.Ed25519)
	}
	return k, nil
}

// EVMAddress is the address of the EVM key bound into a verified document: a transaction or
// message signature from the enclave must recover to it.
func (r *Report) EVMAddress() (common.Address, error) {
	k, err := r.SigningKeys()
	if err != nil {
		return common.Address{}, err
	}
	if k.EVM == nil {
		return common.Address{}, errors.New("attest: the document binds no EVM key")
	}
	return crypto.PubkeyToAddress(*k.EVM), nil
}

// SolanaPublicKey is the Solana key bound into a verified document: a transaction signature from
// the enclave must verify under it.
func (r *Report) SolanaPublicKey() (solana.PublicKey, error) {
	k, err := r.SigningKeys()
	if err != nil {
		return solana.PublicKey{}, err
	}
	if k.Solana == nil {
		return solana.PublicKey{}, errors.New("attest: the document binds no Solana key")
	}
	return solana.PublicKeyFromBytes(k.Solana), nil
}
