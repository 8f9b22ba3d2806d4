package zkagg

import (
	"context"
	_ "embed"
	"fmt"
	"math/big"
	"strings"
	"sync"

	"github.com/ethereum/go-ethereum/accounts/abi"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"

	"conduit/internal/x402/evmchain"
)

var (
	//go:embed ZKAggregation.abi
	contractABIJSON string
	//go:embed ZKAggregation.bin
	contractBin string
	contractABI = func() abi.ABI {
		a, err := abi.JSON(strings.NewReader(contractABIJSON))
		if err != nil {
			panic(err)
		}
		return a
	}()
)

// Contract is the aggregation contract (contracts/ZKAggregation.sol) on
// the embedded EVM network, deployed on first use: the chain lives in the
// process, so each start deploys it afresh (like the network itself, it
// forgets what it held; PostgreSQL keeps every aggregation).
type Contract struct {
	Chain *evmchain.Chain

	mu   sync.Mutex
	addr common.Address
}

// Published is an aggregation's publishing transaction.
type Published struct {
	Contract  common.Address
	TxHash    common.Hash
	BlockHash common.Hash
}

// Address deploys the contract if it is not yet.
func (c *Contract) Address(ctx context.Context) (common.Address, error) {
	if c == nil || c.Chain == nil {
		return common.Address{}, fmt.Errorf("no EVM network to publish aggregations on (the embedded one runs with x402.facilitator=local)")
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.addr != (common.Address{}) {
		return c.addr, nil
	}
	addr, err := c.Chain.Deploy(ctx, common.FromHex(strings.TrimSpace(contractBin)))
	if err != nil {
		return common.Address{}, fmt.Errorf("deploying the aggregation contract: %w", err)
	}
	c.addr = addr
	return addr, nil
}

// Publish records an aggregation's root; publishing the same root again
// answers a new transaction that changes nothing.
func (c *Contract) Publish(ctx context.Context, domainID, aggregationID uint64, root Hash) (Published, error) {
	addr, err := c.Address(ctx)
	if err != nil {
		return Published{}, err
	}
	data, err := contractABI.Pack("submitAggregation", new(big.Int).SetUint64(domainID), new(big.Int).SetUint64(aggregationID), root)
	if err != nil {
		return Published{}, err
	}
	// Submit simulates first: a revert (another root already published)
	// costs nothing and comes back as the error.
	tx, err := c.Chain.Submit(ctx, addr, data)
	if err != nil {
		return Published{}, fmt.Errorf("publishing aggregation %d of domain %d: %w", aggregationID, domainID, err)
	}
	r, err := c.Chain.Receipt(ctx, tx)
	if err != nil {
		return Published{}, err
	}
	if r.Status != types.ReceiptStatusSuccessful {
		return Published{}, fmt.Errorf("publishing aggregation %d of domain %d: transaction %s reverted", aggregationID, domainID, tx.Hex())
	}
	return Published{Contract: addr, TxHash: r.TxHash, BlockHash: r.BlockHash}, nil
}

// VerifyInclusion asks the contract's verifyProofAggregation whether
// statement (zkVerify's "leaf") sits at index among leafCount leaves of
// the published aggregation, by path.
func (c *Contract) VerifyInclusion(ctx context.Context, domainID, aggregationID uint64, statement Hash, path []Hash, leafCount, index int) (bool, error) {
	addr, err := c.Address(ctx)
	if err != nil {
		return false, err
	}
	p := make([][32]byte, len(path))
	for i, h := range path {
		p[i] = h
	}
	data, err := contractABI.Pack("verifyProofAggregation", new(big.Int).SetUint64(domainID), new(big.Int).SetUint64(aggregationID),
		[32]byte(statement), p, big.NewInt(int64(leafCount)), big.NewInt(int64(index)))
	if err != nil {
		return false, err
	}
	out, err := c.Chain.CallContract(ctx, addr, data)
	if err != nil {
		return false, err
	}
	res, err := contractABI.Unpack("verifyProofAggregation", out)
	if err != nil {
		return false, err
	}
	return res[0].(bool), nil
}

// PublishedRoot reads the root the contract holds (zero: not published).
func (c *Contract) PublishedRoot(ctx context.Context, domainID, aggregationID uint64) (Hash, error) {
	addr, err := c.Address(ctx)
	if err != nil {
		return Hash{}, err
	}
	data, err := contractABI.Pack("proofsAggregations", new(big.Int).SetUint64(domainID), new(big.Int).SetUint64(aggregationID))
	if err != nil {
		return Hash{}, err
	}
	out, err := c.Chain.CallContract(ctx, addr, data)
	if err != nil {
		return Hash{}, err
	}
	res, err := contractABI.Unpack("proofsAggregations", out)
	if err != nil {
		return Hash{}, err
	}
	return res[0].([32]byte), nil
}
