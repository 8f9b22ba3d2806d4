package app

import (
	"context"
	"fmt"
	"os"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// pushImage uploads the image at path — a `docker save` tarball or an OCI
// image layout directory holding one image — to ref, and returns its
// digest. It is what the dev banner offers instead of a tool the machine
// may not have.
func pushImage(ctx context.Context, path, ref string) (string, error) {
	r, err := name.ParseReference(ref)
	if err != nil {
		return "", fmt.Errorf("%q is not an image reference (registry/repository:tag): %v", ref, err)
	}
	st, err := os.Stat(path)
	if err != nil {
		return "", err
	}
	var img v1.Image
	if st.IsDir() {
		img, err = layoutImage(path)
	} else {
		img, err = tarball.ImageFromPath(path, nil)
	}
	if err != nil {
		return "", fmt.Errorf("reading the image at %s: %v", path, err)
	}
	if err := remote.Write(r, img, remote.WithContext(ctx), remote.WithAuthFromKeychain(authn.DefaultKeychain)); err != nil {
		return "", fmt.Errorf("pushing to %s: %v", ref, err)
	}
	d, err := img.Digest()
	return d.String(), err
}

// layoutImage is the one image of an OCI layout directory.
func layoutImage(dir string) (v1.Image, error) {
	idx, err := layout.ImageIndexFromPath(dir)
	if err != nil {
		return nil, err
	}
	m, err := idx.IndexManifest()
	if err != nil {
		return nil, err
	}
	if len(m.Manifests) != 1 {
		return nil, fmt.Errorf("the layout holds %d manifests; push one image", len(m.Manifests))
	}
	return idx.Image(m.Manifests[0].Digest)
}
