// Package zkstatement computes the statement zkVerify records for a verified
// proof and the Merkle leaf its aggregation commits to. The rules follow
// zkVerify's own pallets (compute_statement_hash, aggregate data) so our
// statements, leaves and roots are interchangeable with the ones it publishes.
//
// It is the one contract shared by the proof job (internal/zkverify) and the
// aggregation (internal/zkagg): keep it free of either's types.
package zkstatement

import (
	"crypto/sha256"
	"math/big"

	"github.com/ethereum/go-ethereum/crypto"
)

// Hash is a 32-byte Keccak or SHA-256 digest.
type Hash = [32]byte

// versionHash is what zkVerify hashes for proof systems without versions
// (groth16 among them): sha256 of the empty string.
var versionHash = sha256.Sum256(nil)

// Statement is keccak256(keccak256(ctx) ‖ vkHash ‖ versionHash ‖
// keccak256(pubs)), where pubs are the public inputs concatenated as 32-byte
// little-endian values. ctx is the proof system's name ("groth16").
func Statement(ctx string, vkHash Hash, publicInputs []*big.Int) Hash {
	pubs := make([]byte, 0, 32*len(publicInputs))
	for _, in := range publicInputs {
		pubs = append(pubs, littleEndian32(in)...)
	}
	var out Hash
	copy(out[:], crypto.Keccak256(
		crypto.Keccak256([]byte(ctx)), vkHash[:], versionHash[:], crypto.Keccak256(pubs)))
	return out
}

// Leaf is the Merkle leaf of a statement in an aggregation: keccak256 of it.
func Leaf(statement Hash) Hash {
	var out Hash
	copy(out[:], crypto.Keccak256(statement[:]))
	return out
}

// littleEndian32 writes v (already checked to be below the field modulus)
// as 32 little-endian bytes.
func littleEndian32(v *big.Int) []byte {
	be := v.FillBytes(make([]byte, 32))
	for i, j := 0, len(be)-1; i < j; i, j = i+1, j-1 {
		be[i], be[j] = be[j], be[i]
	}
	return be
}
