// Package evmchain is the embedded stack's EVM network: go-ethereum's
// simulated backend running an EIP-3009 token of ours (LocalUSD, Solidity
// source in contracts/, compiled artifact beside it, rebuilt by
// deploy/scripts/build-contract.sh). The local facilitator settles x402
// payments on it by sending real transferWithAuthorization transactions.
//
// Its clock is the wall clock. A block's timestamp is in whole seconds and
// must exceed its parent's, so a chain that sealed one block per
// transaction ran one second ahead of the wall clock per transaction past
// the first each second: at the platform's pace (tens of settlements a
// second) a few hundred settlements put it five minutes ahead, and an
// authorization valid for the usual 300 s by the payer's clock was expired
// by the chain's, its settlement reverting (block.timestamp < validBefore).
// So, like a real network, it seals at most one block per second, with
// every transaction sent meanwhile. A settlement is answered as soon as its
// transaction is accepted for the next block (a preconfirmation, as fast
// networks give): it was simulated against the last block and the
// settlements still waiting, so it cannot revert when sealed, and reads
// (balances, spent authorizations, the transfer of one) include the
// waiting settlements. Everything else (deploy, mint, native transfers)
// waits for its block and its receipt.
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
	// head is the last block's timestamp: no block is sealed before the
	// wall clock passes it.
	head uint64
	// waiting are settlements answered and not sealed yet, in order,
	// with their effect on token balances and spent authorizations.
	waiting []transfer
	delta   map[common.Address]*big.Int
	spent   map[authorization]transfer
	// next is the facilitator's next nonce as far as this chain sent: the
	// pool counts a transaction it was just handed only once it has
	// reorganized, so its own pending nonce can lag.
	next    uint64
	wake    chan struct{} // a settlement waits for the sealer
	stop    chan struct{}
	stopped chan struct{}
}

// transfer is a settlement's transaction and what it moves.
type transfer struct {
	tx       common.Hash
	from, to common.Address
	value    *big.Int
}

type authorization struct {
	from  common.Address
	nonce [32]byte
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
	c := &Chain{ChainID: cfg.ChainID, Facilitator: addr, backend: backend, client: backend.Client(), abi: parsed, key: facilitatorKey,
		delta: map[common.Address]*big.Int{}, spent: map[authorization]transfer{},
		wake: make(chan struct{}, 1), stop: make(chan struct{}), stopped: make(chan struct{})}
	head, err := c.client.HeaderByNumber(context.Background(), nil)
	if err != nil {
		backend.Close()
		return nil, err
	}
	c.head = head.Time
	code := common.FromHex(strings.TrimSpace(tokenBin))
	receipt, err := c.send(context.Background(), nil, code)
	if err != nil {
		backend.Close()
		return nil, fmt.Errorf("deploying the token: %w", err)
	}
	c.Token = receipt.ContractAddress
	go c.sealer()
	return c, nil
}

// Close stops the chain (settlements still waiting are sealed first).
func (c *Chain) Close() error {
	select {
	case <-c.stop:
	default:
		close(c.stop)
		if c.Token != (common.Address{}) {
			<-c.stopped
		}
	}
	return c.backend.Close()
}

// sealable says a block sealed now carries the wall clock's time, not a
// later one (c.mu held).
func (c *Chain) sealable() bool { return uint64(time.Now().Unix()) > c.head }

// untilSealable is how long until a block may be sealed (c.mu held).
func (c *Chain) untilSealable() time.Duration {
	return time.Until(time.Unix(int64(c.head)+1, 0))
}

// seal mines a block with every transaction sent so far, once the wall
// clock allows one, and forgets the settlements it carries (c.mu held;
// it is released while waiting).
func (c *Chain) seal(ctx context.Context) error {
	for !c.sealable() {
		wait := c.untilSealable()
		c.mu.Unlock()
		select {
		case <-ctx.Done():
			c.mu.Lock()
			return ctx.Err()
		case <-time.After(wait):
		}
		c.mu.Lock()
	}
	hash := c.backend.Commit()
	block, err := c.client.BlockByHash(ctx, hash)
	if err != nil {
		return err
	}
	c.head = block.Time()
	if len(c.waiting) == 0 {
		return nil
	}
	sealed := map[common.Hash]bool{}
	for _, tx := range block.Transactions() {
		sealed[tx.Hash()] = true
	}
	left := c.waiting[:0]
	for _, t := range c.waiting {
		if !sealed[t.tx] {
			left = append(left, t)
		}
	}
	c.waiting = left
	c.delta, c.spent = map[common.Address]*big.Int{}, map[authorization]transfer{}
	for _, t := range c.waiting {
		c.account(t)
	}
	return nil
}

// account adds a waiting settlement to what reads see (c.mu held).
func (c *Chain) account(t transfer) {
	for addr, v := range map[common.Address]*big.Int{t.from: new(big.Int).Neg(t.value), t.to: t.value} {
		if c.delta[addr] == nil {
			c.delta[addr] = new(big.Int)
		}
		c.delta[addr].Add(c.delta[addr], v)
	}
}

// sealer seals the waiting settlements' block when the clock allows.
func (c *Chain) sealer() {
	defer close(c.stopped)
	for {
		c.mu.Lock()
		n, wait := len(c.waiting), c.untilSealable()
		c.mu.Unlock()
		if n == 0 {
			select {
			case <-c.wake:
				continue
			case <-c.stop:
				return
			}
		}
		if wait > 0 {
			select {
			case <-time.After(wait):
			case <-c.stop:
			}
		}
		c.mu.Lock()
		if len(c.waiting) > 0 {
			_ = c.seal(context.Background()) // an error leaves them waiting: the next round tries again
		}
		c.mu.Unlock()
		select {
		case <-c.stop:
			return
		default:
		}
	}
}

// send signs and mines one transaction from the facilitator; to nil
// deploys. A reverted transaction is an error carrying the revert reason.
func (c *Chain) send(ctx context.Context, to *common.Address, data []byte) (*types.Receipt, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	signed, err := c.sign(ctx, to, data)
	if err != nil {
		return nil, err
	}
	return c.mine(ctx, signed)
}

// sign simulates a call from the facilitator (a revert costs nothing and
// its reason is returned) and signs it as a transaction (c.mu held).
func (c *Chain) sign(ctx context.Context, to *common.Address, data []byte) (*types.Transaction, error) {
	msg := ethereum.CallMsg{From: c.Facilitator, To: to, Data: data}
	if _, err := c.client.CallContract(ctx, msg, nil); err != nil && to != nil {
		return nil, err // the revert reason, without spending gas
	}
	gas, err := c.client.EstimateGas(ctx, msg)
	if err != nil {
		return nil, err
	}
	nonce, err := c.nonce(ctx)
	if err != nil {
		return nil, err
	}
	feeCap, tip, err := c.fees(ctx)
	if err != nil {
		return nil, err
	}
	tx := types.NewTx(&types.DynamicFeeTx{ChainID: c.ChainID, Nonce: nonce, GasTipCap: tip, GasFeeCap: feeCap, Gas: gas * 2, To: to, Data: data})
	return types.SignTx(tx, types.LatestSignerForChainID(c.ChainID), c.key)
}

// nonce is the facilitator's next nonce (c.mu held).
func (c *Chain) nonce(ctx context.Context) (uint64, error) {
	n, err := c.client.PendingNonceAt(ctx, c.Facilitator)
	return max(n, c.next), err
}

// submitOwn hands the facilitator's transaction to the pool (c.mu held).
func (c *Chain) submitOwn(ctx context.Context, signed *types.Transaction) error {
	if err := c.client.SendTransaction(ctx, signed); err != nil {
		return err
	}
	c.next = signed.Nonce() + 1
	return nil
}

// mine sends a transaction, seals its block and answers its receipt
// (c.mu held).
func (c *Chain) mine(ctx context.Context, signed *types.Transaction) (*types.Receipt, error) {
	if err := c.submitOwn(ctx, signed); err != nil {
		return nil, err
	}
	if err := c.seal(ctx); err != nil {
		return nil, err
	}
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
		if err == nil || i == 2000 || (!errors.Is(err, ethereum.NotFound) && !strings.Contains(err.Error(), "indexing is in progress")) {
			return r, err
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(time.Millisecond):
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

// BalanceOf reads a token balance, settlements waiting for their block
// included.
func (c *Chain) BalanceOf(ctx context.Context, who common.Address) (*big.Int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.balanceOf(ctx, who)
}

func (c *Chain) balanceOf(ctx context.Context, who common.Address) (*big.Int, error) {
	out, err := c.call(ctx, "balanceOf", who)
	if err != nil {
		return nil, err
	}
	b := new(big.Int).Set(out[0].(*big.Int))
	if d := c.delta[who]; d != nil {
		b.Add(b, d)
	}
	return b, nil
}

// AuthorizationUsed reports whether from's nonce was spent, by a
// settlement waiting for its block too.
func (c *Chain) AuthorizationUsed(ctx context.Context, from common.Address, nonce [32]byte) (bool, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.spent[authorization{from, nonce}]; ok {
		return true, nil
	}
	out, err := c.call(ctx, "authorizationState", from, nonce)
	if err != nil {
		return false, err
	}
	return out[0].(bool), nil
}

// TransferWithAuthorization settles an EIP-3009 authorization: it is
// simulated first (a revert costs nothing and its reason is returned),
// then sent. It returns the transaction hash once the transaction is in a
// block, or accepted for the next one (see the package comment).
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
	c.mu.Lock()
	defer c.mu.Unlock()
	// The simulation runs on the last block; the settlements waiting for
	// the next one are checked here the way the token checks them.
	if _, ok := c.spent[authorization{from, nonce}]; ok {
		return common.Hash{}, errors.New("execution reverted: authorization nonce already submitted")
	}
	if d := c.delta[from]; d != nil && d.Sign() < 0 {
		bal, err := c.balanceOf(ctx, from)
		if err != nil {
			return common.Hash{}, err
		}
		if bal.Cmp(value) < 0 {
			return common.Hash{}, errors.New("execution reverted: transfer amount exceeds balance")
		}
	}
	signed, err := c.sign(ctx, &c.Token, data)
	if err != nil {
		return common.Hash{}, err
	}
	if c.sealable() {
		receipt, err := c.mine(ctx, signed)
		if err != nil {
			return common.Hash{}, err
		}
		return receipt.TxHash, nil
	}
	if err := c.submitOwn(ctx, signed); err != nil {
		return common.Hash{}, err
	}
	t := transfer{tx: signed.Hash(), from: from, to: to, value: new(big.Int).Set(value)}
	c.waiting = append(c.waiting, t)
	c.spent[authorization{from, nonce}] = t
	c.account(t)
	select {
	case c.wake <- struct{}{}:
	default:
	}
	return t.tx, nil
}

// AuthorizationTransfer finds the transaction that spent from's EIP-3009
// nonce (its AuthorizationUsed event) and the token transfer it made.
func (c *Chain) AuthorizationTransfer(ctx context.Context, from common.Address, nonce [32]byte) (common.Hash, common.Address, *big.Int, bool, error) {
	c.mu.Lock()
	t, ok := c.spent[authorization{from, nonce}]
	c.mu.Unlock()
	if ok {
		return t.tx, t.to, new(big.Int).Set(t.value), true, nil
	}
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
