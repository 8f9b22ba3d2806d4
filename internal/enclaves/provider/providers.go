package provider

import (
	"context"
	"slices"
)

// Providers are the providers a deployment runs, by providerId ("local", "aws-nitro"). An
// enclave's record names its provider; the lifecycle's activities look it up here.
type Providers map[string]Provider

// Get returns the provider named id. An id this deployment does not run is a permanent error:
// the enclave was created when it was configured, and retrying will not bring it back.
func (ps Providers) Get(id string) (Provider, error) {
	if p, ok := ps[id]; ok && p != nil {
		return p, nil
	}
	return nil, Errorf(Permanent, "provider", id, "provider %q is not configured here (configured: %v)", id, ps.IDs())
}

// IDs lists the configured provider ids, sorted.
func (ps Providers) IDs() []string {
	out := make([]string, 0, len(ps))
	for id := range ps {
		out = append(out, id)
	}
	slices.Sort(out)
	return out
}

// DiskUser is a provider that keeps enclave data on its host's disk, under
// a per-account quota (enclaves.limits.account_bytes).
type DiskUser interface {
	// Usage is the bytes account's enclaves take there.
	Usage(ctx context.Context, account string) (int64, error)
}

// Usage is the bytes account's enclaves take on disk across the providers
// that keep any (the local one; AWS Nitro keeps images in S3, not here).
func (ps Providers) Usage(ctx context.Context, account string) (int64, error) {
	var n int64
	for _, id := range ps.IDs() {
		if d, ok := ps[id].(DiskUser); ok {
			u, err := d.Usage(ctx, account)
			if err != nil {
				return 0, err
			}
			n += u
		}
	}
	return n, nil
}
