// Package oci pulls enclave images from OCI registries for every provider,
// and sorts registry failures into the lifecycle's transient and permanent
// kinds (internal/enclaves/provider).
package oci

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"

	"conduit/internal/enclaves/provider"
)

// Pull resolves src to its linux/amd64 image. go-containerregistry picks
// the scheme from the host: plain HTTP for loopback and RFC 1918
// addresses, HTTPS for everything else (docs/enclaves.md, pulling).
func Pull(ctx context.Context, id string, src provider.Source) (v1.Image, error) {
	ref, err := name.ParseReference(src.Ref)
	if err != nil {
		return nil, provider.Errorf(provider.Permanent, "prepare", id, "image reference %q: %v", src.Ref, err)
	}
	auth := authn.Anonymous
	if src.Username != "" || src.Password != "" {
		auth = &authn.Basic{Username: src.Username, Password: src.Password}
	}
	img, err := remote.Image(ref, remote.WithContext(ctx), remote.WithAuth(auth),
		remote.WithPlatform(v1.Platform{OS: "linux", Architecture: "amd64"}),
		// A few quick retries ride out a blip; longer outages are the
		// lifecycle's to retry, with its own backoff and the failure visible
		// in the meantime.
		remote.WithRetryBackoff(remote.Backoff{Duration: 100 * time.Millisecond, Factor: 2, Jitter: 0.1, Steps: 3}))
	if err != nil {
		return nil, Classify(id, src.Ref, err)
	}
	return img, nil
}

// Classify sorts a failure to pull ref: what the registry refused (4xx but
// 429) is permanent; an unreachable registry, a timeout, 5xx and 429 are
// transient. Errors that are already an provider.Error keep their kind.
func Classify(id, ref string, err error) error {
	var known *provider.Error
	if errors.As(err, &known) {
		return err
	}
	var terr *transport.Error
	if errors.As(err, &terr) {
		switch {
		case terr.StatusCode == http.StatusTooManyRequests || terr.StatusCode >= 500:
			return provider.Errorf(provider.Transient, "prepare", id, "pulling %s: %v", ref, err)
		case terr.StatusCode >= 400:
			return provider.Errorf(provider.Permanent, "prepare", id, "pulling %s: %v", ref, err)
		}
	}
	if errors.Is(err, context.Canceled) {
		return provider.Wrap(provider.Transient, "prepare", id, err)
	}
	return provider.Errorf(provider.Transient, "prepare", id, "pulling %s: %v", ref, err)
}
