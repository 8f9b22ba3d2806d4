package local

import (
	"errors"
	"fmt"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"conduit/internal/attest"
	"conduit/internal/enclaves/provider"
	"conduit/internal/enclaves/provider/oci"
)

// classifyRegistry: images we will not unpack are permanent; registry
// failures are sorted by oci.Classify.
func classifyRegistry(id, ref string, err error) error {
	var bad *unsafeImageError
	if errors.As(err, &bad) {
		return provider.Errorf(provider.Permanent, "prepare", id, "image %s: %v", ref, err)
	}
	return oci.Classify(id, ref, err)
}

// describe measures an image: PCR0 over the manifest and layer digests, PCR1 over the runtime,
// PCR2 over the config digest and the image's default command line, environment and directory.
func describe(img v1.Image, ref string, rt attest.Runtime) (provider.Image, error) {
	manifestDigest, err := img.Digest()
	if err != nil {
		return provider.Image{}, err
	}
	configDigest, err := img.ConfigName()
	if err != nil {
		return provider.Image{}, err
	}
	layers, err := img.Layers()
	if err != nil {
		return provider.Image{}, err
	}
	var layerDigests []string
	for _, l := range layers {
		d, err := l.Digest()
		if err != nil {
			return provider.Image{}, err
		}
		layerDigests = append(layerDigests, d.String())
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return provider.Image{}, err
	}
	argv := append(append([]string(nil), cf.Config.Entrypoint...), cf.Config.Cmd...)
	if len(argv) == 0 {
		return provider.Image{}, &unsafeImageError{errors.New("the image has neither an entrypoint nor a command")}
	}
	workDir := cf.Config.WorkingDir
	if workDir == "" {
		workDir = "/"
	}
	out := provider.Image{
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
		return provider.Image{}, err
	}
	out.PCRs = pcrs
	return out, nil
}

// measure computes PCR0–2 for img run with extra environment entries. The PORT the provider
// assigns is not measured: it is host plumbing, like the vsock port a Nitro parent forwards, and
// measuring it would make every deployment's PCR2 differ.
func measure(img provider.Image, extraEnv []string, rt attest.Runtime) (map[int][]byte, error) {
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
func checkSame(want, got provider.Image) error {
	if want.ManifestDigest != got.ManifestDigest || want.ConfigDigest != got.ConfigDigest {
		return fmt.Errorf("the image to deploy (%s) is not the one prepared (%s); prepare it again", got.ManifestDigest, want.ManifestDigest)
	}
	return nil
}
