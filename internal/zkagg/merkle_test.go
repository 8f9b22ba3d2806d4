package zkagg

import (
	"encoding/json"
	"os"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/crypto"

	"conduit/internal/zkstatement"
)

type published struct {
	Statement      string   `json:"statement"`
	Root           string   `json:"root"`
	LeafIndex      int      `json:"leafIndex"`
	NumberOfLeaves int      `json:"numberOfLeaves"`
	MerkleProof    []string `json:"merkleProof"`
}

func loadPublished(t testing.TB) (stmt, root Hash, path []Hash, p published) {
	b, err := os.ReadFile("testdata/kurier-aggregation.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &p); err != nil {
		t.Fatal(err)
	}
	for _, h := range p.MerkleProof {
		path = append(path, common.HexToHash(h))
	}
	return common.HexToHash(p.Statement), common.HexToHash(p.Root), path, p
}

// zkVerify's published aggregation (root 0x84c25b…, statement at index 6 of
// 8, a 3-hash path) verifies with our rule, and only when the leaf is
// keccak256(statement).
func TestPublishedAggregationVerifies(t *testing.T) {
	stmt, root, path, p := loadPublished(t)
	if !Verify(root, zkstatement.Leaf(stmt), path, p.NumberOfLeaves, p.LeafIndex) {
		t.Fatal("zkVerify's published aggregation does not verify with keccak256(statement) as the leaf")
	}
	if Verify(root, stmt, path, p.NumberOfLeaves, p.LeafIndex) {
		t.Fatal("the published aggregation verified with the unhashed statement as the leaf")
	}
	if Verify(root, zkstatement.Leaf(stmt), path, p.NumberOfLeaves, p.LeafIndex-1) {
		t.Fatal("the published path verified at the wrong index")
	}
	// The sorted-pair rule (OpenZeppelin's) gives another root.
	if sortedRoot(zkstatement.Leaf(stmt), path) == root {
		t.Fatal("the published root is also the sorted-pair root: the vector does not tell the rules apart")
	}
}

func sortedRoot(node Hash, path []Hash) Hash {
	for _, s := range path {
		a, b := node, s
		if string(b[:]) < string(a[:]) {
			a, b = b, a
		}
		copy(node[:], crypto.Keccak256(a[:], b[:]))
	}
	return node
}

// A tree rebuilt around the published path has the published root: the
// siblings stand in for the other leaves' subtrees.
func TestTreeMatchesPublishedShape(t *testing.T) {
	stmt, root, path, _ := loadPublished(t)
	// Level 0: leaves 6 and 7; level 1: nodes (4,5) and (6,7); level 2: (0..3) and (4..7).
	n67 := hashPair(zkstatement.Leaf(stmt), path[0])
	n47 := hashPair(path[1], n67)
	if got := hashPair(path[2], n47); got != root {
		t.Fatalf("hand-computed root %x, published %x", got, root)
	}
}

func hashPair(a, b Hash) (h Hash) {
	copy(h[:], crypto.Keccak256(a[:], b[:]))
	return h
}

func statements(n int) []Hash {
	out := make([]Hash, n)
	for i := range out {
		copy(out[i][:], crypto.Keccak256([]byte{byte(i), byte(i >> 8), 0x5a}))
	}
	return out
}

// Every leaf's path verifies for every size (odd sizes promote), and no
// path verifies for a neighbour's leaf, index or a changed sibling.
func TestEveryPathVerifies(t *testing.T) {
	for n := 1; n <= 33; n++ {
		tree := FromStatements(statements(n))
		if tree.Len() != n {
			t.Fatalf("n=%d: %d leaves", n, tree.Len())
		}
		for i := range n {
			p := tree.Proof(i)
			if !Verify(tree.Root(), tree.Leaf(i), p, n, i) {
				t.Fatalf("n=%d i=%d: own path does not verify", n, i)
			}
			if n > 1 {
				j := (i + 1) % n
				if Verify(tree.Root(), tree.Leaf(j), p, n, i) {
					t.Fatalf("n=%d i=%d: leaf %d verified on i's path", n, i, j)
				}
				if Verify(tree.Root(), tree.Leaf(i), p, n, j) {
					t.Fatalf("n=%d i=%d: path verified at index %d", n, i, j)
				}
				bad := append([]Hash(nil), p...)
				bad[0][0] ^= 1
				if Verify(tree.Root(), tree.Leaf(i), bad, n, i) {
					t.Fatalf("n=%d i=%d: changed sibling verified", n, i)
				}
				if Verify(tree.Root(), tree.Leaf(i), append(p, Hash{}), n, i) {
					t.Fatalf("n=%d i=%d: a path with an extra entry verified", n, i)
				}
			}
		}
	}
}

// Odd last nodes are promoted, not paired with themselves: a 3-leaf root is
// H(H(l0,l1), l2).
func TestOddNodePromoted(t *testing.T) {
	s := statements(3)
	tree := FromStatements(s)
	l := []Hash{zkstatement.Leaf(s[0]), zkstatement.Leaf(s[1]), zkstatement.Leaf(s[2])}
	if want := hashPair(hashPair(l[0], l[1]), l[2]); tree.Root() != want {
		t.Fatalf("root %x, want %x", tree.Root(), want)
	}
	if p := tree.Proof(2); len(p) != 1 || p[0] != hashPair(l[0], l[1]) {
		t.Fatalf("path of the promoted leaf: %x", p)
	}
	if one := FromStatements(s[:1]); one.Root() != l[0] || len(one.Proof(0)) != 0 {
		t.Fatal("a single leaf is its own root with an empty path")
	}
	if Verify(Hash{}, Hash{}, nil, 0, 0) {
		t.Fatal("an empty tree verified")
	}
}

// BenchmarkAggregate1024: an aggregation of 1,024 statements — the leaves,
// the root and every leaf's path (the figure: under 50 ms).
func BenchmarkAggregate1024(b *testing.B) {
	s := statements(1024)
	b.ReportAllocs()
	for b.Loop() {
		tree := FromStatements(s)
		_ = tree.Root()
		for i := range 1024 {
			_ = tree.Proof(i)
		}
	}
}
