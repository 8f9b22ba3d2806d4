package evmchain

import (
	"context"
	"errors"

	"github.com/ethereum/go-ethereum"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
)

// Other contracts of the platform (the proof aggregation's, …) live on the
// same network, deployed and called by the facilitator account: these
// wait for their block and receipt, like Mint.

// DeployContract deploys creation code and answers the contract's address.
func (c *Chain) DeployContract(ctx context.Context, code []byte) (common.Address, error) {
	r, err := c.send(ctx, nil, code)
	if err != nil {
		return common.Address{}, err
	}
	if r.ContractAddress == (common.Address{}) {
		return common.Address{}, errors.New("the deployment created no contract")
	}
	return r.ContractAddress, nil
}

// TransactContract sends a call to a contract as a transaction from the
// facilitator; a revert is simulated first and returned without spending
// gas. It answers the receipt once the transaction is in a block.
func (c *Chain) TransactContract(ctx context.Context, to common.Address, data []byte) (*types.Receipt, error) {
	return c.send(ctx, &to, data)
}

// CallContract runs a read-only call against the last block.
func (c *Chain) CallContract(ctx context.Context, to common.Address, data []byte) ([]byte, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.client.CallContract(ctx, ethereum.CallMsg{To: &to, Data: data}, nil)
}

// Receipt reads a mined transaction's receipt.
func (c *Chain) Receipt(ctx context.Context, tx common.Hash) (*types.Receipt, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.receipt(ctx, tx)
}
