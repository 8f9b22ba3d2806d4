// Package payments assembles agent payments from configuration: what the
// 402 challenge offers, which facilitator verifies and settles, and — for
// the embedded stack — the local EVM network the local facilitator runs.
package payments

import (
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"errors"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/gagliardetto/solana-go"

	"conduit/internal/config"
	"conduit/internal/money"
	"conduit/internal/store"
	"conduit/internal/x402"
	"conduit/internal/x402/evmchain"
	"conduit/internal/x402/svmrpc"
)

// TopUpPath is the agent top-up endpoint.
const TopUpPath = "/api/billing/credits/x402"

// Service is agent payments as configured. Unready (disabled or
// misconfigured) deployments get a Service whose Err says why.
type Service struct {
	Err     error
	Network string
	TopUp   money.Micros
	// offers is what the challenge offers (Offers): swapped whole when
	// the hosted facilitator's Solana fee payer changes.
	offers      atomic.Pointer[[]x402.Offer]
	Facilitator x402.Facilitator
	// Chain is the local EVM network (local facilitator only).
	Chain *evmchain.Chain
	// SolanaRPC is the URL of the embedded Solana network's JSON-RPC
	// (local facilitator with x402.solana_rpc_addr set).
	SolanaRPC string
	// SolanaClock is the embedded Solana network's slot clock (local
	// facilitator only).
	SolanaClock *x402.SVMClock
	rpcSrv      *http.Server
	// SolanaNetwork and SolanaMint describe the second network offered.
	SolanaNetwork string
	SolanaMint    string

	solana *x402.Offer
	evm    x402.Offer
	// stopWatch ends the hosted facilitator's fee-payer refresh.
	stopWatch context.CancelFunc
	ledger    ledger
	// store keeps the payment records Take consults.
	store *store.Store
}

// New builds the service; it never fails a start-up for a configuration
// problem (the endpoint answers 503 instead), only for a broken local
// network. The store keeps the local Solana ledger.
func New(cfg config.X402, st *store.Store) (*Service, error) {
	if err := cfg.Ready(); err != nil {
		return &Service{Err: err}, nil
	}
	s := &Service{Network: cfg.Network, store: st}
	s.TopUp, _ = money.ParseUSD(cfg.TopUpUSD)
	evm := x402.Offer{Network: cfg.Network, Asset: cfg.Asset, PayTo: cfg.PayTo, Extra: map[string]any{"name": "USDC", "version": "2"}}
	if cfg.Facilitator == "local" {
		key, err := crypto.HexToECDSA(strings.TrimPrefix(cfg.LocalKey, "0x"))
		if err != nil {
			return nil, fmt.Errorf("x402.local_key is not a hex private key: %w", err)
		}
		chainID, err := x402.ChainID(cfg.Network)
		if err != nil {
			return nil, err
		}
		chain, err := evmchain.New(chainID.Int64(), key)
		if err != nil {
			return nil, fmt.Errorf("the local EVM network could not start: %w", err)
		}
		s.Chain = chain
		evm.Asset = chain.Token.Hex()
		if evm.PayTo == "" {
			evm.PayTo = chain.Facilitator.Hex()
		}
		local := &x402.LocalFacilitator{EVMNetwork: cfg.Network, EVM: chain}
		if cfg.SolanaNetwork != "" {
			// The Solana fee payer, mint and receiving wallet derive from
			// the local key, so they stay the same across restarts.
			fee, mint, payTo := derive(key.D.Bytes(), "fee-payer"), derive(key.D.Bytes(), "mint"), derive(key.D.Bytes(), "pay-to")
			// Blockhashes derive from the mint's key: stable across
			// restarts, distinct per local key.
			clock := &x402.SVMClock{Seed: mint.PublicKey().Bytes()}
			s.SolanaClock = clock
			local.SVMNetwork, local.SVM, local.SVMFeePayer, local.SVMClock = cfg.SolanaNetwork, ledger{st}, fee, clock
			s.SolanaNetwork, s.SolanaMint = cfg.SolanaNetwork, mint.PublicKey().String()
			s.solana = &x402.Offer{Network: cfg.SolanaNetwork, Asset: s.SolanaMint, PayTo: payTo.PublicKey().String(),
				Extra: map[string]any{"feePayer": fee.PublicKey().String()}}
			s.ledger = ledger{st}
			if cfg.SolanaRPCAddr != "" {
				rpcNet := &svmrpc.Network{Clock: clock, Ledger: rpcLedger{st}, Mint: mint.PublicKey(), MintAuthority: fee.PublicKey(),
					Decimals: 6, FeePayer: fee.PublicKey(), Payees: []solana.PublicKey{payTo.PublicKey()}}
				if err := s.serveRPC(cfg.SolanaRPCAddr, rpcNet); err != nil {
					_ = chain.Close()
					return nil, err
				}
			}
		}
		s.Facilitator = local
	} else {
		headers := map[string]string{}
		if cfg.FacilitatorAPIKey != "" {
			headers["Authorization"] = "Bearer " + cfg.FacilitatorAPIKey
		}
		hosted := x402.NewHTTPFacilitator(cfg.Facilitator, headers, 30*time.Second)
		s.Facilitator = hosted
		if cfg.SolanaNetwork != "" && cfg.SolanaPayTo != "" && cfg.SolanaAsset != "" {
			s.evm = evm
			s.watchFeePayer(hosted, x402.Offer{Network: cfg.SolanaNetwork, Asset: cfg.SolanaAsset, PayTo: cfg.SolanaPayTo}, cfg.SolanaFeePayer, FeePayerRefresh)
			return s, nil
		}
	}
	s.setOffers(evm, s.solana)
	return s, nil
}

// setOffers publishes the offers: the EVM network first, then Solana
// (spec §4.5), when there is a Solana offer.
func (s *Service) setOffers(evm x402.Offer, sol *x402.Offer) {
	offers := []x402.Offer{evm}
	if sol != nil {
		offers = append(offers, *sol)
	}
	s.offers.Store(&offers)
}

// Offers is what a challenge offers now.
func (s *Service) Offers() []x402.Offer {
	if s == nil {
		return nil
	}
	if o := s.offers.Load(); o != nil {
		return *o
	}
	return nil
}

// derive makes a deterministic ed25519 key from the local key and a label.
func derive(seed []byte, label string) solana.PrivateKey {
	h := sha256.Sum256(append(append([]byte("conduit/x402/solana/"), label...), seed...))
	return solana.PrivateKey(ed25519.NewKeyFromSeed(h[:]))
}

// ledger adapts the store's Solana ledger to the facilitator.
type ledger struct{ st *store.Store }

func (l ledger) Balance(ctx context.Context, mint, owner string) (uint64, error) {
	return l.st.SVMBalance(ctx, mint, owner)
}

func (l ledger) Transfer(ctx context.Context, sig, mint, from, to string, amount uint64, tx []byte) error {
	err := l.st.SVMTransfer(ctx, sig, mint, from, to, amount, tx)
	switch {
	case errors.Is(err, store.ErrSVMDuplicate):
		return x402.ErrSVMDuplicate
	case errors.Is(err, store.ErrSVMInsufficientFunds):
		return x402.ErrSVMInsufficientFunds
	}
	return err
}

func (l ledger) Settled(ctx context.Context, sig string) (bool, error) {
	return l.st.SVMSettled(ctx, sig)
}

// serveRPC starts the Solana JSON-RPC on addr.
func (s *Service) serveRPC(addr string, n *svmrpc.Network) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("the Solana RPC cannot listen on %s (set %s_X402_SOLANA_RPC_ADDR to a free address): %w", addr, config.EnvPrefix, err)
	}
	s.SolanaRPC = "http://" + ln.Addr().String()
	s.rpcSrv = n.Server()
	go func() { _ = s.rpcSrv.Serve(ln) }()
	return nil
}

// rpcLedger adapts the store's Solana ledger to the RPC.
type rpcLedger struct{ st *store.Store }

func (l rpcLedger) Balance(ctx context.Context, mint, owner string) (uint64, bool, error) {
	return l.st.SVMAccount(ctx, mint, owner)
}

func (l rpcLedger) Holders(ctx context.Context, mint string) ([]string, error) {
	return l.st.SVMHolders(ctx, mint)
}

func (l rpcLedger) Supply(ctx context.Context, mint string) (uint64, error) {
	return l.st.SVMSupply(ctx, mint)
}

func (l rpcLedger) Transaction(ctx context.Context, sig string) ([]byte, time.Time, bool, error) {
	return l.st.SVMTransaction(ctx, sig)
}

// Close stops the local networks, if any.
func (s *Service) Close() {
	if s == nil {
		return
	}
	if s.rpcSrv != nil {
		_ = s.rpcSrv.Close()
	}
	if s.stopWatch != nil {
		s.stopWatch()
	}
	if s.Chain != nil {
		_ = s.Chain.Close()
	}
}

// Enabled, Path, PerCall and Network describe top-up for the balance
// endpoint.
func (s *Service) Enabled() bool         { return s != nil && s.Err == nil }
func (s *Service) Path() string          { return TopUpPath }
func (s *Service) PerCall() money.Micros { return s.TopUp }

// NetworkID is the first network offered.
func (s *Service) NetworkID() string { return s.Network }

// Networks lists every network a payment may arrive on (the offers').
func (s *Service) Networks() []string {
	var out []string
	for _, o := range s.Offers() {
		out = append(out, o.Network)
	}
	return out
}

// Minted says where test tokens were credited.
type Minted struct {
	Network     string
	Asset       string
	Transaction string // EVM only
}

// Mint credits test tokens on the local networks (dev tooling): an 0x
// address on the EVM network, a base58 address on the Solana ledger.
func (s *Service) Mint(ctx context.Context, to string, amount money.Micros) (Minted, error) {
	if s.Chain == nil {
		return Minted{}, fmt.Errorf("minting needs the local facilitator")
	}
	if pk, err := solana.PublicKeyFromBase58(to); err == nil && s.ledger.st != nil {
		err := s.ledger.st.SVMMint(ctx, s.SolanaMint, pk.String(), uint64(amount))
		return Minted{Network: s.SolanaNetwork, Asset: s.SolanaMint}, err
	}
	if !common.IsHexAddress(to) {
		return Minted{}, fmt.Errorf("%q is neither an EVM nor a Solana address", to)
	}
	tx, err := s.Chain.Mint(ctx, common.HexToAddress(to), big.NewInt(int64(amount)))
	return Minted{Network: s.Network, Asset: s.Chain.Token.Hex(), Transaction: tx.Hex()}, err
}
