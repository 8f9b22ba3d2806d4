// Package evmchain is the embedded stack's EVM network: go-ethereum's
// simulated backend running an EIP-3009 token of ours (LocalUSD, Solidity
// source in contracts/, compiled artifact beside it, rebuilt by
// deploy/scripts/build-contract.sh). The local facilitator settles x402
// payments on it by sending real transferWithAuthorization transactions.
package evmchain

import (
	"context"
	"crypto/ecdsa"
	_ "embed"
	"errors"
	"fmt"
	"math/big"
	"strings"
	"sync"
	"time"

	"github.com/ethereum/go-ethereum"
	"github.com/ethereum/go-ethereum/accounts/abi"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/eth/ethconfig"
	"github.com/ethereum/go-ethereum/ethclient/simulated"
	"github.com/ethereum/go-ethereum/node"
	"github.com/ethereum/go-ethereum/params"
)

var (
	//go:embed LocalUSD.abi
	tokenABIJSON string
	//go:embed LocalUSD.bin
	tokenBin string
)

// Chain is a running in-process EVM with the token deployed.
type Chain struct {
	ChainID *big.Int
	Token   common.Address
	// Facilitator is the account that sends settlements (and pays gas).
	Facilitator common.Address

	mu      sync.Mutex
	backend *simulated.Backend
	client  simulated.Client
	abi     abi.ABI
	key     *ecdsa.PrivateKey
}

// ether is enough gas money for the facilitator's whole life.
var ether = new(big.Int).Exp(big.NewInt(10), big.NewInt(24), nil)

// New starts a chain with the given chain id, deploys the token with the
// facilitator key as its minter, and funds that key with gas.
func New(chainID int64, facilitatorKey *ecdsa.PrivateKey) (*Chain, error) {
	parsed, err := abi.JSON(strings.NewReader(tokenABIJSON))
	if err != nil {
		return nil, fmt.Errorf("token ABI: %w", err)
	}
	addr := crypto.PubkeyToAddress(facilitatorKey.PublicKey)
	cfg := *params.AllDevChainProtocolChanges
	cfg.ChainID = big.NewInt(chainID)
	backend := simulated.NewBackend(types.GenesisAlloc{addr: {Balance: ether}}, func(_ *node.Config, ec *ethconfig.Config) {
		ec.Genesis.Config = &cfg
	})
	c := &Chain{ChainID: cfg.ChainID, Facilitator: addr, backend: backend, client: backend.Client(), abi: parsed, key: facilitatorKey}
	code := common.FromHex(strings.TrimSpace(tokenBin))
	receipt, err := c.send(context.Background(), nil, code)
	if err != nil {
		backend.Close()
		return nil, fmt.Errorf("deploying the token: %w", err)
	}
	c.Token = receipt.ContractAddress
	return c, nil
}

// Close stops the chain.
func (c *Chain) Close() error { return c.backend.Close() }

// send signs and mines one transaction from the facilitator; to nil
// deploys. A reverted transaction is an error carrying the revert reason.
func (c *Chain) send(ctx context.Context, to *common.Address, data []byte) (*types.Receipt, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	msg := ethereum.CallMsg{From: c.Facilitator, To: to, Data: data}
	if _, err := c.client.CallContract(ctx, msg, nil); err != nil && to != nil {
		return nil, err // the revert reason, without spending gas
	}
	gas, err := c.client.EstimateGas(ctx, msg)
	if err != nil {
		return nil, err
	}
	nonce, err := c.client.PendingNonceAt(ctx, c.Facilitator)
	if err != nil {
		return nil, err
	}
	head, err := c.client.HeaderByNumber(ctx, nil)
	if err != nil {
		return nil, err
	}
	tip, err := c.client.SuggestGasTipCap(ctx)
	if err != nil {
		return nil, err
	}
	feeCap := new(big.Int).Add(new(big.Int).Mul(head.BaseFee, big.NewInt(2)), tip)
	tx := types.NewTx(&types.DynamicFeeTx{ChainID: c.ChainID, Nonce: nonce, GasTipCap: tip, GasFeeCap: feeCap, Gas: gas * 2, To: to, Data: data})
	signed, err := types.SignTx(tx, types.LatestSignerForChainID(c.ChainID), c.key)
	if err != nil {
		return nil, err
	}
	if err := c.client.SendTransaction(ctx, signed); err != nil {
		return nil, err
	}
	c.backend.Commit()
	receipt, err := c.receipt(ctx, signed.Hash())
	if err != nil {
		return nil, err
	}
	if receipt.Status != types.ReceiptStatusSuccessful {
		return receipt, errors.New("execution reverted")
	}
	return receipt, nil
}

// receipt waits out the indexer, which lags the freshly mined block.
func (c *Chain) receipt(ctx context.Context, tx common.Hash) (*types.Receipt, error) {
	for i := 0; ; i++ {
		r, err := c.client.TransactionReceipt(ctx, tx)
		if err == nil || i == 400 || (!errors.Is(err, ethereum.NotFound) && !strings.Contains(err.Error(), "indexing is in progress")) {
			return r, err
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(5 * time.Millisecond):
		}
	}
}

func (c *Chain) call(ctx context.Context, method string, args ...any) ([]any, error) {
	data, err := c.abi.Pack(method, args...)
	if err != nil {
		return nil, err
	}
	out, err := c.client.CallContract(ctx, ethereum.CallMsg{To: &c.Token, Data: data}, nil)
	if err != nil {
		return nil, err
	}
	return c.abi.Unpack(method, out)
}

// Mint creates amount atomic units for to (dev tooling, tests).
func (c *Chain) Mint(ctx context.Context, to common.Address, amount *big.Int) (common.Hash, error) {
	data, err := c.abi.Pack("mint", to, amount)
	if err != nil {
		return common.Hash{}, err
	}
	r, err := c.send(ctx, &c.Token, data)
	if err != nil {
		return common.Hash{}, err
	}
	return r.TxHash, nil
}

// BalanceOf reads a token balance.
func (c *Chain) BalanceOf(ctx context.Context, who common.Address) (*big.Int, error) {
	out, err := c.call(ctx, "balanceOf", who)
	if err != nil {
		return nil, err
	}
	return out[0].(*big.Int), nil
}

// AuthorizationUsed reports whether from's nonce was spent.
func (c *Chain) AuthorizationUsed(ctx context.Context, from common.Address, nonce [32]byte) (bool, error) {
	out, err := c.call(ctx, "authorizationState", from, nonce)
	if err != nil {
		return false, err
	}
	return out[0].(bool), nil
}

// TransferWithAuthorization settles an EIP-3009 authorization: it is
// simulated first (a revert costs nothing and its reason is returned),
// then mined. It returns the transaction hash.
func (c *Chain) TransferWithAuthorization(ctx context.Context, from, to common.Address, value, validAfter, validBefore *big.Int, nonce [32]byte, sig []byte) (common.Hash, error) {
	if len(sig) != 65 {
		return common.Hash{}, errors.New("signature must be 65 bytes")
	}
	v := sig[64]
	if v < 27 {
		v += 27
	}
	var r, s [32]byte
	copy(r[:], sig[:32])
	copy(s[:], sig[32:64])
	data, err := c.abi.Pack("transferWithAuthorization", from, to, value, validAfter, validBefore, nonce, v, r, s)
	if err != nil {
		return common.Hash{}, err
	}
	receipt, err := c.send(ctx, &c.Token, data)
	if err != nil {
		return common.Hash{}, err
	}
	return receipt.TxHash, nil
}

// AuthorizationTransfer finds the transaction that spent from's EIP-3009
// nonce (its AuthorizationUsed event) and the token transfer it made.
func (c *Chain) AuthorizationTransfer(ctx context.Context, from common.Address, nonce [32]byte) (common.Hash, common.Address, *big.Int, bool, error) {
	used, transfer := c.abi.Events["AuthorizationUsed"], c.abi.Events["Transfer"]
	logs, err := c.client.FilterLogs(ctx, ethereum.FilterQuery{
		FromBlock: big.NewInt(0), Addresses: []common.Address{c.Token},
		Topics: [][]common.Hash{{used.ID}, {common.BytesToHash(from.Bytes())}, {common.Hash(nonce)}},
	})
	if err != nil || len(logs) == 0 {
		return common.Hash{}, common.Address{}, nil, false, err
	}
	receipt, err := c.receipt(ctx, logs[0].TxHash)
	if err != nil {
		return common.Hash{}, common.Address{}, nil, false, err
	}
	for _, l := range receipt.Logs {
		if l.Address == c.Token && len(l.Topics) == 3 && l.Topics[0] == transfer.ID && common.BytesToAddress(l.Topics[1].Bytes()) == from {
			return l.TxHash, common.BytesToAddress(l.Topics[2].Bytes()), new(big.Int).SetBytes(l.Data), true, nil
		}
	}
	return common.Hash{}, common.Address{}, nil, false, fmt.Errorf("transaction %s spent the authorization without a transfer", logs[0].TxHash)
}
