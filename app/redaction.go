package app

import (
	"crypto/sha256"
	"strings"

	"conduit/frontend"
	"conduit/internal/quota"
	"conduit/internal/redactlog"
	"conduit/internal/redactproxy"
	"conduit/internal/vault"
)

// redaction builds the redaction proxies, their audit log and the PII
// vault from redaction.* (docs/redaction-proxies.md). Without a vault key
// (redaction.keys, else temporal.codec_keys) proxies still work with
// x-model-key, but store no upstream key, and the vault answers 503.
func (p *Platform) redaction() *frontend.Redaction {
	cfg := p.Config.Redaction
	var master *vault.Master
	spec := p.Config.VaultKeys()
	if spec != "" {
		var err error
		if master, err = vault.NewMaster(spec); err != nil {
			p.Log.Warn("the PII vault is off: its keys do not load", "reason", err)
			master = nil
		}
	} else {
		p.Log.Info("the PII vault is off and proxies store no upstream keys (set redaction.keys)")
	}
	// The hash action's key comes from the primary vault key, so hashes
	// stay stable across restarts (and change when that key rotates).
	first, _, _ := strings.Cut(spec, ",")
	hk := sha256.Sum256([]byte("redaction-hash-action/" + strings.TrimSpace(first)))
	log := &redactlog.Service{Store: p.Store}
	return &frontend.Redaction{
		Proxies: &redactproxy.Service{Store: p.Store, Master: master, Fetcher: p.Media.Images, Log: log,
			OpenAIURL: cfg.OpenAIURL, AnthropicURL: cfg.AnthropicURL, Timeout: cfg.UpstreamTimeout, MaxProxies: cfg.MaxProxies, HashKey: hk[:]},
		Log:          log,
		Vault:        &vault.Service{Store: p.Store, Master: master, Quota: p.piiQuota()},
		MaxBodyBytes: cfg.MaxBodyBytes,
	}
}

// piiQuota is the vault's share of the account quotas (quota.pii_*).
func (p *Platform) piiQuota() quota.Limits {
	return quota.Limits{PIISubjects: p.Config.Quota.PIISubjects, PIITokens: p.Config.Quota.PIITokens}
}

// piiUsage reports the vault's subjects and tokens in GET
// /api/account/usage (counted whether or not the vault has a key).
func (p *Platform) piiUsage() quota.Source {
	return &vault.Service{Store: p.Store, Quota: p.piiQuota()}
}
