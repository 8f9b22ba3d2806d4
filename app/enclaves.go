package app

import (
	"context"
	"crypto/x509"
	"fmt"

	"github.com/google/go-containerregistry/pkg/authn"

	"conduit/activities"
	"conduit/frontend"
	"conduit/internal/attest"
	"conduit/internal/codec"
	"conduit/internal/config"
	"conduit/internal/enclaves"
	"conduit/internal/enclaves/build"
	"conduit/internal/enclaves/provider"
	"conduit/internal/enclaves/provider/local"
	"conduit/internal/enclaves/provider/nitro"
	"conduit/internal/enclaves/provider/oci"
)

// Enclaves is the enclave lifecycle's runtime: the provider the worker's
// activities call and the key that seals registry credentials.
type Enclaves struct {
	// Provider runs enclaves; the worker starts it on first use (a
	// frontend-only process never needs bubblewrap), and a restarted
	// worker keeps the same one.
	Provider provider.Provider
	// Providers are every configured provider by providerId (the local
	// one included), started with Provider; Offered what the API accepts.
	Providers provider.Providers
	Offered   enclaves.Offered
	// Secrets seals registry credentials (nil: private registries are
	// refused).
	Secrets *codec.Codec
	// Builder builds github sources (nil without enclaves.build_registry:
	// github sources are refused).
	Builder *build.Builder
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
	e := &Enclaves{Offered: enclaves.Offered{enclaves.ProviderLocal: {enclaves.RegionLocal}}}
	if c.AWS.Enabled {
		e.Offered[nitro.ProviderID] = []string{c.AWS.Region}
	}
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
	if c.BuildRegistry != "" {
		var auth authn.Authenticator = authn.Anonymous
		if c.BuildRegistryUsername != "" || c.BuildRegistryPassword != "" {
			auth = &authn.Basic{Username: c.BuildRegistryUsername, Password: c.BuildRegistryPassword}
		}
		var err error
		if e.Builder, err = build.New(build.Options{GitBaseURL: c.GitBaseURL, Registry: c.BuildRegistry, RegistryAuth: auth,
			Limits: imageLimits(c.Limits), SourceBytes: c.Limits.SourceBytes}); err != nil {
			return nil, fmt.Errorf("enclaves.build_registry: %w", err)
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
	l := c.Limits
	p, err := local.New(local.Options{Dir: c.DataDir, Authority: auth, Limits: local.Limits{
		Image: imageLimits(l), AccountBytes: l.AccountBytes, TmpBytes: l.TmpBytes, Processes: l.Processes,
		MemoryMiB: l.MemoryMiB, CPUs: l.CPUs, Cgroup: l.Cgroup, UIDBase: l.SandboxUIDBase, UIDCount: l.SandboxUIDs,
	}})
	if err != nil {
		return err
	}
	providers := provider.Providers{enclaves.ProviderLocal: p}
	if c.AWS.Enabled {
		a := c.AWS
		np, err := nitro.New(context.Background(), nitro.Options{
			Limits: imageLimits(c.Limits), Region: a.Region, AMI: a.AMI, InstanceType: a.InstanceType, SubnetID: a.Subnet, SecurityGroupIDs: a.SecurityGroups(),
			InstanceProfile: a.InstanceProfile, Bucket: a.EIFBucket, KeyPrefix: a.EIFPrefix, LogGroup: a.LogGroup,
			AgentPort: a.AgentPort, AgentScheme: a.AgentScheme, AgentSecret: []byte(a.AgentSecret),
			KernelPath: a.KernelPath, InitPath: a.InitPath, NSMPath: a.NSMPath, Cmdline: a.Cmdline,
			EC2Endpoint: a.EC2Endpoint, S3Endpoint: a.S3Endpoint, LogsEndpoint: a.LogsEndpoint, S3PathStyle: a.S3PathStyle,
			BootTimeout: a.BootTimeout, WorkDir: c.DataDir,
		})
		if err != nil {
			return err
		}
		providers[nitro.ProviderID] = np
	}
	e.Provider, e.Providers = p, providers
	e.Root = auth.Root()
	return nil
}

// imageLimits are the unpacking limits (enclaves.limits).
func imageLimits(l config.EnclavesLimits) oci.Limits {
	return oci.Limits{LayerBytes: l.LayerBytes, ImageBytes: l.ImageBytes, Files: l.Files, PathDepth: l.PathDepth}
}

func (p *Platform) enclaveActivities() (*activities.Enclaves, error) {
	if p.Enclaves == nil {
		return nil, nil
	}
	if err := p.Enclaves.startProvider(p.Config.Enclaves); err != nil {
		return nil, err
	}
	if lp, ok := p.Enclaves.Provider.(*local.Provider); ok {
		// Which limits hold here (docs/enclaves.md, "Limits").
		cg, cgWhy := lp.Cgroups()
		uids, uidWhy := lp.SandboxUIDs()
		p.Log.Info("local enclaves: sandbox limits", "cgroups", cg, "cgroupsFallback", cgWhy, "uidPerEnclave", uids, "uidFallback", uidWhy)
	}
	c := p.Config.Enclaves
	a := &activities.Enclaves{Store: p.Store, Provider: p.Enclaves.Provider, Providers: p.Enclaves.Providers, Secrets: p.Enclaves.Secrets,
		Retention: c.LogRetention, Builder: p.Enclaves.Builder, Root: p.Enclaves.Root}
	a.BuildAuth.Username, a.BuildAuth.Password = c.BuildRegistryUsername, c.BuildRegistryPassword
	return a, nil
}

func (p *Platform) enclaveFrontend() frontend.Enclaves {
	if p.Enclaves == nil {
		return frontend.Enclaves{}
	}
	c := p.Config.Enclaves
	return frontend.Enclaves{Enabled: true, Secrets: p.Enclaves.Secrets, LogEvery: c.LogEvery, HeartbeatTimeout: c.HeartbeatTimeout,
		Builds: p.Enclaves.Builder != nil, RetryMax: c.RetryMax, GiveUpAfter: c.GiveUpAfter,
		Providers: p.Enclaves.Offered}
}
