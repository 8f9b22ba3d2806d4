package zkagg

import (
	"github.com/ethereum/go-ethereum/crypto"

	"conduit/internal/zkstatement"
)

// Hash is a 32-byte Keccak digest.
type Hash = zkstatement.Hash

// Tree is the binary Merkle tree zkVerify's aggregate pallet commits to
// (Substrate's binary_merkle_tree with Keccak-256): the leaves are
// keccak256(statement), each pair is hashed in position order (left ‖
// right, not sorted), and an odd last node is promoted to the next level
// unchanged. Layers are kept so every leaf's path is a read.
type Tree struct {
	layers [][]Hash // layers[0] = leaves, last = [root]
}

// FromStatements builds the tree of an aggregation's statements, in the
// order they were aggregated.
func FromStatements(statements []Hash) *Tree {
	leaves := make([]Hash, len(statements))
	for i, s := range statements {
		leaves[i] = zkstatement.Leaf(s)
	}
	return FromLeaves(leaves)
}

// FromLeaves builds the tree over already-hashed leaves.
func FromLeaves(leaves []Hash) *Tree {
	t := &Tree{layers: [][]Hash{leaves}}
	if len(leaves) == 0 {
		return t
	}
	h := crypto.NewKeccakState()
	var buf [64]byte
	for cur := leaves; len(cur) > 1; {
		next := make([]Hash, (len(cur)+1)/2)
		for i := 0; i+1 < len(cur); i += 2 {
			copy(buf[:32], cur[i][:])
			copy(buf[32:], cur[i+1][:])
			h.Reset()
			_, _ = h.Write(buf[:])
			_, _ = h.Read(next[i/2][:])
		}
		if len(cur)%2 == 1 {
			next[len(next)-1] = cur[len(cur)-1]
		}
		t.layers = append(t.layers, next)
		cur = next
	}
	return t
}

// Len is the number of leaves.
func (t *Tree) Len() int { return len(t.layers[0]) }

// Leaf is leaf i (keccak256 of statement i).
func (t *Tree) Leaf(i int) Hash { return t.layers[0][i] }

// Root is the tree's root; the zero hash for an empty tree, as Substrate's.
func (t *Tree) Root() Hash {
	top := t.layers[len(t.layers)-1]
	if len(top) == 0 {
		return Hash{}
	}
	return top[0]
}

// Proof is leaf i's path, bottom up: one sibling per level where the node
// has one (a promoted node contributes nothing), as zkVerify's merkleProof.
func (t *Tree) Proof(i int) []Hash {
	var path []Hash
	for _, layer := range t.layers[:len(t.layers)-1] {
		if sib := i ^ 1; sib < len(layer) {
			path = append(path, layer[sib])
		}
		i /= 2
	}
	return path
}

// Verify reports whether leaf sits at index among leafCount leaves of the
// tree with this root, by path: the computation of Merkle.verifyProofKeccak
// on zkVerify's contract (and of our contract's verifier). Every path entry
// must be used.
func Verify(root, leaf Hash, path []Hash, leafCount, index int) bool {
	if leafCount <= 0 || index < 0 || index >= leafCount {
		return false
	}
	node, width, pos, k := leaf, leafCount, index, 0
	h := crypto.NewKeccakState()
	var buf [64]byte
	for width > 1 {
		promoted := pos == width-1 && width%2 == 1
		if !promoted {
			if k == len(path) {
				return false
			}
			if pos%2 == 0 {
				copy(buf[:32], node[:])
				copy(buf[32:], path[k][:])
			} else {
				copy(buf[:32], path[k][:])
				copy(buf[32:], node[:])
			}
			k++
			h.Reset()
			_, _ = h.Write(buf[:])
			_, _ = h.Read(node[:])
		}
		pos /= 2
		width = (width + 1) / 2
	}
	return k == len(path) && node == root
}
