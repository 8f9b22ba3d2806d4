package app

import (
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
	Provider enclave.Provider
	// Secrets seals registry credentials (nil: private registries are
	// refused).
	Secrets *codec.Codec
}

// openEnclaves starts the local provider (nil when enclaves are off).
func openEnclaves(cfg *config.Config) (*Enclaves, error) {
	c := cfg.Enclaves
	if !c.Enabled {
		return nil, nil
	}
	auth, err := attest.NewAuthority(c.AttestationDir)
	if err != nil {
		return nil, fmt.Errorf("enclaves: the attestation root in %s: %w", c.AttestationDir, err)
	}
	p, err := local.New(local.Options{Dir: c.DataDir, Authority: auth})
	if err != nil {
		return nil, err
	}
	e := &Enclaves{Provider: p}
	keys := c.SecretKeys
	if keys == "" {
		keys = cfg.Temporal.CodecKeys
	}
	if keys != "" {
		if e.Secrets, err = codec.Parse(keys); err != nil {
			return nil, fmt.Errorf("enclaves.secret_keys: %w", err)
		}
	}
	return e, nil
}

func (p *Platform) enclaveActivities() *activities.Enclaves {
	if p.Enclaves == nil {
		return nil
	}
	return &activities.Enclaves{Store: p.Store, Provider: p.Enclaves.Provider, Secrets: p.Enclaves.Secrets,
		Retention: p.Config.Enclaves.LogRetention}
}

func (p *Platform) enclaveFrontend() frontend.Enclaves {
	if p.Enclaves == nil {
		return frontend.Enclaves{}
	}
	c := p.Config.Enclaves
	return frontend.Enclaves{Enabled: true, Secrets: p.Enclaves.Secrets, LogEvery: c.LogEvery, HeartbeatTimeout: c.HeartbeatTimeout}
}
