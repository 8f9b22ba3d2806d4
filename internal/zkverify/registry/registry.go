// Package registry is the proof registry contract on the embedded EVM
// chain (Solidity source in contracts/, compiled artifact beside it,
// rebuilt by deploy/scripts/build-contract.sh): the zkVerify relay's jobs
// are "submitted" and "included" as real transactions to it, and KYC
// proofs are recorded in it, so their transaction and block hashes are
// real and a record can be read back from the chain, not assumed.
package registry

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"strings"

	"github.com/ethereum/go-ethereum"
	"github.com/ethereum/go-ethereum/accounts/abi"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"

	"conduit/internal/x402/evmchain"
)

var (
	//go:embed ProofRegistry.abi
	abiJSON string
	//go:embed ProofRegistry.bin
	bin string
)

// Registry is the deployed contract.
type Registry struct {
	Chain   *evmchain.Chain
	Address common.Address
	abi     abi.ABI
}

// Deploy puts a fresh registry on chain.
func Deploy(ctx context.Context, chain *evmchain.Chain) (*Registry, error) {
	parsed, err := abi.JSON(strings.NewReader(abiJSON))
	if err != nil {
		return nil, fmt.Errorf("proof registry ABI: %w", err)
	}
	addr, err := chain.Deploy(ctx, common.FromHex(strings.TrimSpace(bin)))
	if err != nil {
		return nil, fmt.Errorf("deploying the proof registry: %w", err)
	}
	return &Registry{Chain: chain, Address: addr, abi: parsed}, nil
}

// ID is the registry key of a job or proof id.
func ID(id string) common.Hash { return crypto.Keccak256Hash([]byte(id)) }

// Record sends record(ID(id), digest) and answers its transaction hash
// once it waits for its block. A record already made under id (this step
// ran before and its answer was lost) answers the transaction that made
// it, so the step can be retried.
func (r *Registry) Record(ctx context.Context, id string, digest common.Hash) (common.Hash, error) {
	if tx, ok, err := r.recordedBy(ctx, id); err != nil || ok {
		return tx, err
	}
	data, err := r.abi.Pack("record", ID(id), digest)
	if err != nil {
		return common.Hash{}, err
	}
	return r.Chain.Submit(ctx, r.Address, data)
}

// recordedBy finds the transaction that recorded id (its ProofRecorded
// event).
func (r *Registry) recordedBy(ctx context.Context, id string) (common.Hash, bool, error) {
	logs, err := r.Chain.FilterLogs(ctx, ethereum.FilterQuery{
		Addresses: []common.Address{r.Address},
		Topics:    [][]common.Hash{{r.abi.Events["ProofRecorded"].ID}, {ID(id)}},
	})
	if err != nil || len(logs) == 0 {
		return common.Hash{}, false, err
	}
	return logs[0].TxHash, true, nil
}

// Inclusion waits for tx's block. A transaction that reverted (a second
// record of the same id, sent before the first was sealed) answers the
// block of the one that recorded id instead.
func (r *Registry) Inclusion(ctx context.Context, id string, tx common.Hash) (*types.Receipt, error) {
	rc, err := r.Chain.Receipt(ctx, tx)
	if err != nil {
		return nil, err
	}
	if rc.Status == types.ReceiptStatusSuccessful {
		return rc, nil
	}
	first, ok, err := r.recordedBy(ctx, id)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, errors.New("the proof registry refused the record (transaction reverted)")
	}
	return r.Chain.Receipt(ctx, first)
}

// Canonical reports whether block number n of the chain is hash: the
// embedded chain has no forks, so a block read back at its number is
// final.
func (r *Registry) Canonical(ctx context.Context, n uint64, hash common.Hash) (bool, error) {
	h, err := r.Chain.CanonicalHash(ctx, n)
	if err != nil {
		return false, err
	}
	return h == hash, nil
}

// Entry is a record read back from the chain.
type Entry struct {
	Digest      common.Hash
	BlockNumber uint64
	Timestamp   uint64
}

// RecordOf reads id's record (a zero Digest: none).
func (r *Registry) RecordOf(ctx context.Context, id string) (Entry, error) {
	data, err := r.abi.Pack("recordOf", ID(id))
	if err != nil {
		return Entry{}, err
	}
	out, err := r.Chain.CallContract(ctx, r.Address, data)
	if err != nil {
		return Entry{}, err
	}
	v, err := r.abi.Unpack("recordOf", out)
	if err != nil {
		return Entry{}, err
	}
	return Entry{Digest: common.Hash(v[0].([32]byte)), BlockNumber: v[1].(uint64), Timestamp: v[2].(uint64)}, nil
}

// IsRecorded asks the contract whether id was recorded with digest.
func (r *Registry) IsRecorded(ctx context.Context, id string, digest common.Hash) (bool, error) {
	data, err := r.abi.Pack("isRecorded", ID(id), digest)
	if err != nil {
		return false, err
	}
	out, err := r.Chain.CallContract(ctx, r.Address, data)
	if err != nil {
		return false, err
	}
	v, err := r.abi.Unpack("isRecorded", out)
	if err != nil {
		return false, err
	}
	return v[0].(bool), nil
}
