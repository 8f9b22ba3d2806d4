package app

import (
	"crypto/x509"
	"fmt"

	"conduit/activities"
	"conduit/frontend"
	"conduit/internal/attest"
	"conduit/internal/codec"
	"conduit/internal/config"
	"conduit/internal/enclave"
	"conduit/internal/enclave/local"
)

// Enclaves is the enclave lifecycle's runtime: the provider the worker's
// activities call and the key that seals registry credentials.
type Enclaves struct {
	// Provider runs enclaves; the worker starts it on first use (a
	// frontend-only process never needs bubblewrap), and a restarted
	// worker keeps the same one.
	Provider enclave.Provider
	// Secrets seals registry credentials (nil: private registries are
	// refused).
	Secrets *codec.Codec
	// Root is the attestation root the provider's documents chain to
	// (set when the provider starts).
	Root *x509.Certificate
}

// openEnclaves reads the enclave configuration (nil when enclaves are off).
func openEnclaves(cfg *config.Config) (*Enclaves, error) {
	c := cfg.Enclaves
	if !c.Enabled {
		return nil, nil
	}
	e := &Enclaves{}
	keys := c.SecretKeys
	if keys == "" {
		keys = cfg.Temporal.CodecKeys
	}
	if keys != "" {
		var err error
		if e.Secrets, err = codec.Parse(keys); err != nil {
			return nil, fmt.Errorf("enclaves.secret_keys: %w", err)
		}
	}
	return e, nil
}

// startProvider starts the local provider once (its attestation root is
// generated on first use).
func (e *Enclaves) startProvider(c config.Enclaves) error {
	if e.Provider != nil {
		return nil
	}
	auth, err := attest.NewAuthority(c.AttestationDir)
	if err != nil {
		return fmt.Errorf("enclaves: the attestation root in %s: %w", c.AttestationDir, err)
	}
	p, err := local.New(local.Options{Dir: c.DataDir, Authority: auth})
	if err != nil {
		return err
	}
	e.Provider = p
	e.Root = auth.Root()
	return nil
}

func (p *Platform) enclaveActivities() (*activities.Enclaves, error) {
	if p.Enclaves == nil {
		return nil, nil
	}
	if err := p.Enclaves.startProvider(p.Config.Enclaves); err != nil {
		return nil, err
	}
	return &activities.Enclaves{Store: p.Store, Provider: p.Enclaves.Provider, Secrets: p.Enclaves.Secrets,
		Retention: p.Config.Enclaves.LogRetention, Root: p.Enclaves.Root}, nil
}

func (p *Platform) enclaveFrontend() frontend.Enclaves {
	if p.Enclaves == nil {
		return frontend.Enclaves{}
	}
	c := p.Config.Enclaves
	return frontend.Enclaves{Enabled: true, Secrets: p.Enclaves.Secrets, LogEvery: c.LogEvery, HeartbeatTimeout: c.HeartbeatTimeout}
}
