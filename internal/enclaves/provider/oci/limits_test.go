package oci_test

import (
	"archive/tar"
	"io"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"

	"conduit/internal/enclaves/provider/oci"
	"conduit/internal/enclaves/provider/providertest"
)

// A bomb that a later layer whites out writes nothing, but decompressing
// it is work: the layer's stream is counted as it is read, and reading
// stops at the limit with the setting named.
func TestBoundedStopsAWhitedOutBomb(t *testing.T) {
	img, err := mutate.AppendLayers(empty.Image,
		providertest.Bomb(t, "zeros", 64<<20),
		providertest.Layer(t, providertest.Entry{Name: ".wh.zeros", Type: tar.TypeReg, Mode: 0o644}))
	if err != nil {
		t.Fatal(err)
	}
	lim := oci.Limits{LayerBytes: 1 << 20}
	if err := lim.CheckManifest(img); err != nil {
		t.Fatalf("the compressed layers are small: %v", err)
	}
	b := oci.Bounded(img, lim)
	rc := mutate.Extract(b)
	n, err := io.Copy(io.Discard, rc)
	rc.Close()
	if err == nil || b.Err() == nil || b.Err().Setting != "enclaves.limits.layer_bytes" {
		t.Fatalf("read %d bytes; err %v; limit %v", n, err, b.Err())
	}
	if !strings.Contains(b.Err().Error(), "layer 1") {
		t.Errorf("the error does not say which layer: %v", b.Err())
	}

	// Together: two layers each under the layer limit, over the image limit.
	img, err = mutate.AppendLayers(empty.Image, providertest.Bomb(t, "a", 3<<20), providertest.Bomb(t, "b", 3<<20))
	if err != nil {
		t.Fatal(err)
	}
	b = oci.Bounded(img, oci.Limits{LayerBytes: 4 << 20, ImageBytes: 5 << 20})
	rc = mutate.Extract(b)
	_, _ = io.Copy(io.Discard, rc)
	rc.Close()
	if b.Err() == nil || b.Err().Setting != "enclaves.limits.image_bytes" {
		t.Fatalf("two layers over the image limit: %v", b.Err())
	}
}

func TestTreeCounts(t *testing.T) {
	tree := oci.NewTree(oci.Limits{Files: 2, PathDepth: 3, LayerBytes: 100, ImageBytes: 150})
	if err := tree.Entry("a/b/c", 90); err != nil {
		t.Fatal(err)
	}
	if le, _ := oci.Exceeded(tree.Entry("a/b/c/d", 0)); le == nil || le.Setting != "enclaves.limits.path_depth" {
		t.Errorf("depth: %v", le)
	}
	tree = oci.NewTree(oci.Limits{Files: 2, LayerBytes: 100, ImageBytes: 150})
	if le, _ := oci.Exceeded(tree.Entry("big", 101)); le == nil || le.Setting != "enclaves.limits.layer_bytes" {
		t.Errorf("a file bigger than a layer: %v", le)
	}
	tree = oci.NewTree(oci.Limits{Files: 2, LayerBytes: 100, ImageBytes: 150})
	_ = tree.Entry("x", 90)
	if le, _ := oci.Exceeded(tree.Entry("y", 90)); le == nil || le.Setting != "enclaves.limits.image_bytes" {
		t.Errorf("the image: %v", le)
	}
	if le, _ := oci.Exceeded(tree.Entry("z", 0)); le == nil || le.Setting != "enclaves.limits.files" {
		t.Errorf("files: %v", le)
	}
}
