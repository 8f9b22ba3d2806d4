package evmchain

import (
	"context"
	"math/big"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
)

// Fund sends wei of the chain's native coin from the facilitator to to
// (gas money for another account: dev tooling, tests) and mines it.
func (c *Chain) Fund(ctx context.Context, to common.Address, wei *big.Int) (*types.Receipt, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	nonce, err := c.nonce(ctx)
	if err != nil {
		return nil, err
	}
	fee, tip, err := c.fees(ctx)
	if err != nil {
		return nil, err
	}
	tx := types.NewTx(&types.DynamicFeeTx{ChainID: c.ChainID, Nonce: nonce, GasTipCap: tip, GasFeeCap: fee, Gas: 21000, To: &to, Value: wei})
	signed, err := types.SignTx(tx, types.LatestSignerForChainID(c.ChainID), c.key)
	if err != nil {
		return nil, err
	}
	if err := c.submitOwn(ctx, signed); err != nil {
		return nil, err
	}
	if err := c.seal(ctx); err != nil {
		return nil, err
	}
	return c.receipt(ctx, signed.Hash())
}

// SendRawTransaction submits a transaction someone else signed (its
// canonical encoding), mines it and answers its receipt.
func (c *Chain) SendRawTransaction(ctx context.Context, raw []byte) (*types.Receipt, error) {
	tx := new(types.Transaction)
	if err := tx.UnmarshalBinary(raw); err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.submit(ctx, tx)
}

// submit sends, mines and waits for the receipt, reverted or not (c.mu
// held).
func (c *Chain) submit(ctx context.Context, tx *types.Transaction) (*types.Receipt, error) {
	if err := c.client.SendTransaction(ctx, tx); err != nil {
		return nil, err
	}
	if err := c.seal(ctx); err != nil {
		return nil, err
	}
	return c.receipt(ctx, tx.Hash())
}

// fees are a max fee per gas (twice the base fee plus the tip) and the
// suggested tip.
func (c *Chain) fees(ctx context.Context) (*big.Int, *big.Int, error) {
	head, err := c.client.HeaderByNumber(ctx, nil)
	if err != nil {
		return nil, nil, err
	}
	tip, err := c.client.SuggestGasTipCap(ctx)
	if err != nil {
		return nil, nil, err
	}
	return new(big.Int).Add(new(big.Int).Mul(head.BaseFee, big.NewInt(2)), tip), tip, nil
}

// Fees are what a transaction sent now should offer: a max fee per gas
// and a priority fee.
func (c *Chain) Fees(ctx context.Context) (maxFee, tip *big.Int, err error) { return c.fees(ctx) }

// Balance is an account's native balance in wei.
func (c *Chain) Balance(ctx context.Context, who common.Address) (*big.Int, error) {
	return c.client.BalanceAt(ctx, who, nil)
}

// Nonce is an account's next nonce.
func (c *Chain) Nonce(ctx context.Context, who common.Address) (uint64, error) {
	return c.client.PendingNonceAt(ctx, who)
}
