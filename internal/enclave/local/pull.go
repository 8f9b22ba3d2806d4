package local

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"

	"conduit/internal/attest"
	"conduit/internal/enclave"
)

// pull resolves src to an image in its registry. go-containerregistry picks the scheme from the
// host: plain HTTP for loopback and RFC 1918 addresses, HTTPS for everything else
// (docs/enclaves.md, pulling).
func pull(ctx context.Context, id string, src enclave.Source) (v1.Image, error) {
	ref, err := name.ParseReference(src.Ref)
	if err != nil {
		return nil, enclave.Errorf(enclave.Permanent, "prepare", id, "image reference %q: %v", src.Ref, err)
	}
	auth := authn.Anonymous
	if src.Username != "" || src.Password != "" {
		auth = &authn.Basic{Username: src.Username, Password: src.Password}
	}
	img, err := remote.Image(ref, remote.WithContext(ctx), remote.WithAuth(auth),
		remote.WithPlatform(v1.Platform{OS: "linux", Architecture: "amd64"}),
		// A few quick retries ride out a blip; longer outages are the lifecycle's to retry, with
		// its own backoff and the failure visible in the meantime.
		remote.WithRetryBackoff(remote.Backoff{Duration: 100 * time.Millisecond, Factor: 2, Jitter: 0.1, Steps: 3}))
	if err != nil {
		return nil, classifyRegistry(id, src.Ref, err)
	}
	return img, nil
}

// classifyRegistry sorts a registry failure: what the registry said no to (missing image or
// repository, refused credentials, a bad request) is permanent; everything else — refused
// connections, timeouts, 5xx, 429 — is transient, so the lifecycle retries until the registry is
// back.
func classifyRegistry(id, ref string, err error) error {
	var bad *unsafeImageError
	if errors.As(err, &bad) {
		return enclave.Errorf(enclave.Permanent, "prepare", id, "image %s: %v", ref, err)
	}
	var terr *transport.Error
	if errors.As(err, &terr) {
		switch {
		case terr.StatusCode == http.StatusTooManyRequests || terr.StatusCode >= 500:
			return enclave.Errorf(enclave.Transient, "prepare", id, "pulling %s: %v", ref, err)
		case terr.StatusCode >= 400:
			return enclave.Errorf(enclave.Permanent, "prepare", id, "pulling %s: %v", ref, err)
		}
	}
	if errors.Is(err, context.Canceled) {
		return enclave.Wrap(enclave.Transient, "prepare", id, err)
	}
	return enclave.Errorf(enclave.Transient, "prepare", id, "pulling %s: %v", ref, err)
}

// describe measures an image: PCR0 over the manifest and layer digests, PCR1 over the runtime,
// PCR2 over the config digest and the image's default command line, environment and directory.
func describe(img v1.Image, ref string, rt attest.Runtime) (enclave.Image, error) {
	manifestDigest, err := img.Digest()
	if err != nil {
		return enclave.Image{}, err
	}
	configDigest, err := img.ConfigName()
	if err != nil {
		return enclave.Image{}, err
	}
	layers, err := img.Layers()
	if err != nil {
		return enclave.Image{}, err
	}
	var layerDigests []string
	for _, l := range layers {
		d, err := l.Digest()
		if err != nil {
			return enclave.Image{}, err
		}
		layerDigests = append(layerDigests, d.String())
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return enclave.Image{}, err
	}
	argv := append(append([]string(nil), cf.Config.Entrypoint...), cf.Config.Cmd...)
	if len(argv) == 0 {
		return enclave.Image{}, &unsafeImageError{errors.New("the image has neither an entrypoint nor a command")}
	}
	workDir := cf.Config.WorkingDir
	if workDir == "" {
		workDir = "/"
	}
	out := enclave.Image{
		Ref:            ref,
		ManifestDigest: manifestDigest.String(),
		ConfigDigest:   configDigest.String(),
		LayerDigests:   layerDigests,
		Argv:           argv,
		Env:            cf.Config.Env,
		WorkDir:        workDir,
	}
	pcrs, err := measure(out, nil, rt)
	if err != nil {
		return enclave.Image{}, err
	}
	out.PCRs = pcrs
	return out, nil
}

// measure computes PCR0–2 for img run with extra environment entries. The PORT the provider
// assigns is not measured: it is host plumbing, like the vsock port a Nitro parent forwards, and
// measuring it would make every deployment's PCR2 differ.
func measure(img enclave.Image, extraEnv []string, rt attest.Runtime) (map[int][]byte, error) {
	pcr0, err := attest.ImagePCR(img.ManifestDigest, img.LayerDigests)
	if err != nil {
		return nil, err
	}
	pcr1, err := attest.RuntimePCR(rt)
	if err != nil {
		return nil, err
	}
	pcr2, err := attest.ApplicationPCR(attest.Application{
		ConfigDigest: img.ConfigDigest,
		Argv:         img.Argv,
		Env:          append(append([]string(nil), img.Env...), extraEnv...),
		WorkDir:      img.WorkDir,
	})
	if err != nil {
		return nil, err
	}
	return map[int][]byte{attest.PCRImage: pcr0, attest.PCRRuntime: pcr1, attest.PCRApplication: pcr2}, nil
}

// checkSame refuses to deploy an Image value that is not the one prepared on disk, so what runs
// is what was measured.
func checkSame(want, got enclave.Image) error {
	if want.ManifestDigest != got.ManifestDigest || want.ConfigDigest != got.ConfigDigest {
		return fmt.Errorf("the image to deploy (%s) is not the one prepared (%s); prepare it again", got.ManifestDigest, want.ManifestDigest)
	}
	return nil
}
