package app

import (
	"context"
	"crypto/ecdsa"
	"fmt"
	"strings"

	"github.com/ethereum/go-ethereum/crypto"

	"conduit/activities"
	"conduit/internal/kyc"
	"conduit/internal/x402/evmchain"
	"conduit/internal/zkverify"
	"conduit/internal/zkverify/registry"
	"conduit/internal/zkverify/relayer"
)

// proofsChainID is the embedded chain's id when x402's local chain is not
// running and the proofs start their own (the usual local-dev id).
const proofsChainID = 31337

// Proofs are the zkVerify relay and KYC proofs, on the embedded chain's
// proof registry (docs/proofs.md).
type Proofs struct {
	Registry *registry.Registry
	Relayer  *relayer.Client
	ZKVerify *zkverify.Service
	KYC      *kyc.Service
	// own is the chain the proofs started (nil: x402's local chain).
	own *evmchain.Chain
}

// openProofs deploys the proof registry on x402's local chain when it
// runs, else on a chain of the proofs' own.
func (p *Platform) openProofs(ctx context.Context) (*Proofs, error) {
	pr := &Proofs{}
	chain := p.Payments.Chain
	if chain == nil {
		key, err := proofsKey(p.Config.Proofs.ChainKey)
		if err != nil {
			return nil, err
		}
		if chain, err = evmchain.New(proofsChainID, key); err != nil {
			return nil, fmt.Errorf("the proofs' embedded chain could not start: %w", err)
		}
		pr.own = chain
	}
	reg, err := registry.Deploy(ctx, chain)
	if err != nil {
		pr.close()
		return nil, err
	}
	pr.Registry = reg
	c := p.Config.Proofs
	if c.RelayerURL != "" {
		pr.Relayer = relayer.New(c.RelayerURL, c.RelayerAPIKey)
	}
	pr.ZKVerify = &zkverify.Service{Store: p.Store, Temporal: p.Temporal, Config: c, Relayer: pr.Relayer}
	pr.KYC = &kyc.Service{Store: p.Store, Temporal: p.Temporal, Registry: reg, BaseURL: p.Config.BaseURL(), Limit: c.KYCMaxProofs}
	return pr, nil
}

func proofsKey(hexKey string) (*ecdsa.PrivateKey, error) {
	if hexKey == "" {
		return crypto.GenerateKey()
	}
	key, err := crypto.HexToECDSA(strings.TrimPrefix(hexKey, "0x"))
	if err != nil {
		return nil, fmt.Errorf("proofs.chain_key is not a hex private key: %w", err)
	}
	return key, nil
}

// activities are the proof jobs' steps.
func (pr *Proofs) activities(p *Platform) *activities.ZKVerify {
	return &activities.ZKVerify{Store: p.Store, Registry: pr.Registry, Relayer: pr.Relayer}
}

// kycActivities are the KYC proofs' steps.
func (pr *Proofs) kycActivities(p *Platform) *activities.KYC {
	return &activities.KYC{Store: p.Store, Registry: pr.Registry}
}

func (pr *Proofs) close() {
	if pr != nil && pr.own != nil {
		_ = pr.own.Close()
	}
}
