package evmchain

import (
	"context"
	"errors"
	"math/big"
	"strings"
	"time"

	"github.com/ethereum/go-ethereum"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
)

// Other contracts on the same chain (the proof registry of
// internal/zkverify): deployed, sent to and read from by the facilitator's
// account, which pays their gas.

// Deploy creates a contract from its creation code and answers its
// address once the deployment is in a block.
func (c *Chain) Deploy(ctx context.Context, code []byte) (common.Address, error) {
	r, err := c.send(ctx, nil, code)
	if err != nil {
		return common.Address{}, err
	}
	return r.ContractAddress, nil
}

// Submit simulates a call to a contract (a revert costs nothing and its
// reason is returned), then signs and sends it: the transaction waits for
// the next block, which the sealer makes once the clock allows (see the
// package comment). It answers the transaction's hash at once; Receipt
// waits for its block.
func (c *Chain) Submit(ctx context.Context, to common.Address, data []byte) (common.Hash, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	signed, err := c.sign(ctx, &to, data)
	if err != nil {
		return common.Hash{}, err
	}
	if err := c.submitOwn(ctx, signed); err != nil {
		return common.Hash{}, err
	}
	// A transfer of nothing: it keeps the sealer sealing until the
	// transaction is in a block, and moves no token balance.
	c.waiting = append(c.waiting, transfer{tx: signed.Hash(), value: new(big.Int)})
	select {
	case c.wake <- struct{}{}:
	default:
	}
	return signed.Hash(), nil
}

// Receipt waits until tx is in a block and answers its receipt (a
// reverted one too: the caller reads its status).
func (c *Chain) Receipt(ctx context.Context, tx common.Hash) (*types.Receipt, error) {
	for {
		r, err := c.client.TransactionReceipt(ctx, tx)
		if err == nil {
			return r, nil
		}
		if !errors.Is(err, ethereum.NotFound) && !strings.Contains(err.Error(), "indexing is in progress") {
			return nil, err
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// CallContract reads from a contract at the last block.
func (c *Chain) CallContract(ctx context.Context, to common.Address, data []byte) ([]byte, error) {
	return c.client.CallContract(ctx, ethereum.CallMsg{To: &to, Data: data}, nil)
}

// FilterLogs reads logs.
func (c *Chain) FilterLogs(ctx context.Context, q ethereum.FilterQuery) ([]types.Log, error) {
	return c.client.FilterLogs(ctx, q)
}

// CanonicalHash is the hash of the chain's block number n (not found: n
// is beyond the head).
func (c *Chain) CanonicalHash(ctx context.Context, n uint64) (common.Hash, error) {
	h, err := c.client.HeaderByNumber(ctx, new(big.Int).SetUint64(n))
	if err != nil {
		return common.Hash{}, err
	}
	return h.Hash(), nil
}
