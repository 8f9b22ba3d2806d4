package zkagg

import (
	"context"
	"testing"

	"github.com/ethereum/go-ethereum/crypto"

	"conduit/internal/x402/evmchain"
)

// The contract's Merkle verifier agrees with ours, on the published
// zkVerify example and on trees of every small size: every path passes,
// a wrong sibling, index or leaf fails, and an unpublished aggregation
// fails.
func TestContractVerifiesInclusion(t *testing.T) {
	key, err := crypto.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	chain, err := evmchain.New(31337, key)
	if err != nil {
		t.Fatal(err)
	}
	defer chain.Close()
	ctx := context.Background()
	c := &Contract{Chain: chain}

	stmt, root, path, p := loadPublished(t)
	pub, err := c.Publish(ctx, 0, 29537, root)
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := c.PublishedRoot(ctx, 0, 29537); got != root || pub.TxHash == (Hash{}) || pub.BlockHash == (Hash{}) {
		t.Fatalf("published %x in %x/%x", got, pub.TxHash, pub.BlockHash)
	}
	ok, err := c.VerifyInclusion(ctx, 0, 29537, stmt, path, p.NumberOfLeaves, p.LeafIndex)
	if err != nil || !ok {
		t.Fatalf("the published zkVerify example does not verify on our contract: %v %v", ok, err)
	}
	if ok, _ := c.VerifyInclusion(ctx, 0, 29537, stmt, path, p.NumberOfLeaves, 5); ok {
		t.Fatal("wrong index verified on chain")
	}
	if ok, _ := c.VerifyInclusion(ctx, 1, 29537, stmt, path, p.NumberOfLeaves, p.LeafIndex); ok {
		t.Fatal("another domain's aggregation verified")
	}
	if _, err := c.Publish(ctx, 0, 29537, Hash{1}); err == nil {
		t.Fatal("an aggregation was published again with another root")
	}
	if _, err := c.Publish(ctx, 0, 29537, root); err != nil {
		t.Fatalf("republishing the same root (a retry): %v", err)
	}

	for n := 1; n <= 9; n++ {
		s := statements(n)
		tree := FromStatements(s)
		if _, err := c.Publish(ctx, 7, uint64(n), tree.Root()); err != nil {
			t.Fatal(err)
		}
		for i := range n {
			ok, err := c.VerifyInclusion(ctx, 7, uint64(n), s[i], tree.Proof(i), n, i)
			if err != nil || !ok {
				t.Fatalf("n=%d i=%d: %v %v", n, i, ok, err)
			}
			if n > 1 {
				bad := tree.Proof(i)
				bad[len(bad)-1][31] ^= 1
				if ok, _ := c.VerifyInclusion(ctx, 7, uint64(n), s[i], bad, n, i); ok {
					t.Fatalf("n=%d i=%d: a wrong path verified on chain", n, i)
				}
				if ok, _ := c.VerifyInclusion(ctx, 7, uint64(n), tree.Leaf(i), tree.Proof(i), n, i); ok {
					t.Fatalf("n=%d i=%d: the hashed leaf verified as a statement", n, i)
				}
			}
		}
	}
}
