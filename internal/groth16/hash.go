package groth16

import (
	"encoding/binary"

	"github.com/ethereum/go-ethereum/crypto"
)

// hashTag opens the hashed encoding, so a change of encoding is a change
// of tag and old hashes never collide with new ones.
const hashTag = "conduit/groth16/bn254/vk/v1"

// Hash is the key's vkHash: keccak256 of hashTag ‖ α ‖ β ‖ γ ‖ δ ‖
// len(IC) (4 bytes, big-endian) ‖ IC…, each point in gnark-crypto's
// uncompressed big-endian form. It depends on the points only, so the
// same key written with other spacing, field order or leading zeros has
// the same hash (registering it again answers the same vkHash).
//
// It is ours, not zkVerify's: zkVerify hashes the SCALE encoding of its
// own key type with arkworks point bytes, so a vkHash (and therefore a
// statement) computed here is not interchangeable with the one its
// relayer answers for the same key (docs/proofs.md).
func (vk *VerifyingKey) Hash() [32]byte {
	buf := make([]byte, 0, len(hashTag)+64+3*128+4+64*len(vk.IC))
	buf = append(buf, hashTag...)
	a := vk.Alpha.RawBytes()
	buf = append(buf, a[:]...)
	for _, p := range []*[128]byte{ptr(vk.Beta.RawBytes()), ptr(vk.Gamma.RawBytes()), ptr(vk.Delta.RawBytes())} {
		buf = append(buf, p[:]...)
	}
	buf = binary.BigEndian.AppendUint32(buf, uint32(len(vk.IC)))
	for i := range vk.IC {
		b := vk.IC[i].RawBytes()
		buf = append(buf, b[:]...)
	}
	var out [32]byte
	copy(out[:], crypto.Keccak256(buf))
	return out
}

func ptr(b [128]byte) *[128]byte { return &b }
