// Package payments assembles agent payments from configuration: what the
// 402 challenge offers, which facilitator verifies and settles, and — for
// the embedded stack — the local EVM network the local facilitator runs.
package payments

import (
	"context"
	"fmt"
	"math/big"
	"strings"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/crypto"

	"conduit/internal/config"
	"conduit/internal/money"
	"conduit/internal/x402"
	"conduit/internal/x402/evmchain"
)

// TopUpPath is the agent top-up endpoint.
const TopUpPath = "/api/billing/credits/x402"

// Service is agent payments as configured. Unready (disabled or
// misconfigured) deployments get a Service whose Err says why.
type Service struct {
	Err         error
	Network     string
	TopUp       money.Micros
	Offers      []x402.Offer
	Facilitator x402.Facilitator
	// Chain is the local EVM network (local facilitator only).
	Chain *evmchain.Chain
}

// New builds the service; it never fails a start-up for a configuration
// problem (the endpoint answers 503 instead), only for a broken local
// network.
func New(cfg config.X402) (*Service, error) {
	if err := cfg.Ready(); err != nil {
		return &Service{Err: err}, nil
	}
	s := &Service{Network: cfg.Network}
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
		s.Facilitator = &x402.LocalFacilitator{EVMNetwork: cfg.Network, EVM: chain}
	} else {
		headers := map[string]string{}
		if cfg.FacilitatorAPIKey != "" {
			headers["Authorization"] = "Bearer " + cfg.FacilitatorAPIKey
		}
		s.Facilitator = x402.NewHTTPFacilitator(cfg.Facilitator, headers, 30*time.Second)
	}
	s.Offers = []x402.Offer{evm}
	return s, nil
}

// Close stops the local network, if any.
func (s *Service) Close() {
	if s != nil && s.Chain != nil {
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

// Mint credits test tokens on the local network (dev tooling).
func (s *Service) Mint(ctx context.Context, to string, amount money.Micros) (string, error) {
	if s.Chain == nil {
		return "", fmt.Errorf("minting needs the local facilitator")
	}
	if !common.IsHexAddress(to) {
		return "", fmt.Errorf("%q is not an EVM address", to)
	}
	tx, err := s.Chain.Mint(ctx, common.HexToAddress(to), big.NewInt(int64(amount)))
	return tx.Hex(), err
}
