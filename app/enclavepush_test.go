package app_test

import (
	"bytes"
	"context"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"conduit/app"
	"conduit/internal/config"
	"conduit/internal/enclaves/provider/local"
)

// `conduit enclave push` (the dev banner's way to get an image into the
// embedded registry) uploads a docker-save tarball and an OCI layout
// directory; the registry then serves the same digest.
func TestEnclavePushUploadsAnImage(t *testing.T) {
	reg, err := local.StartRegistry(local.RegistryOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer reg.Close()
	img, err := random.Image(1024, 2)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := img.Digest()
	dir := t.TempDir()
	tarPath := filepath.Join(dir, "app.tar")
	tag, _ := name.NewTag("app:1")
	if err := tarball.WriteToFile(tarPath, tag, img); err != nil {
		t.Fatal(err)
	}
	lp, err := layout.Write(filepath.Join(dir, "layout"), empty.Index)
	if err != nil || lp.AppendImage(img) != nil {
		t.Fatalf("layout: %v", err)
	}
	push := func(args ...string) (string, error) {
		var out bytes.Buffer
		err := app.ProductionCommands()["enclave"].Run(context.Background(), &app.Env{Config: &config.Config{}, Log: slog.New(slog.DiscardHandler), Stdout: &out}, append([]string{"push"}, args...))
		return out.String(), err
	}
	for i, src := range []string{tarPath, string(lp)} {
		ref := reg.Host + "/app:" + []string{"tar", "dir"}[i]
		out, err := push(src, ref)
		if err != nil || !strings.Contains(out, want.String()) {
			t.Fatalf("push %s: %q %v", src, out, err)
		}
		r, _ := name.ParseReference(ref)
		got, err := remote.Image(r)
		if err != nil {
			t.Fatal(err)
		}
		if d, _ := got.Digest(); d != want {
			t.Fatalf("%s serves %s, pushed %s", ref, d, want)
		}
	}
	if _, err := push(filepath.Join(dir, "missing.tar"), reg.Host+"/app:x"); err == nil {
		t.Fatal("pushed a missing file")
	}
	if _, err := push(tarPath, "NOT A REF"); err == nil || !strings.Contains(err.Error(), "not an image reference") {
		t.Fatalf("bad reference: %v", err)
	}
}
