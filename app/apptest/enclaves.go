package apptest

import (
	"archive/tar"
	"runtime"
	"testing"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"conduit/internal/enclaves/provider/providertest"
)

// RequireEnclaves fails a test that needs the enclave provider when the
// harness could not turn it on: bubblewrap is a stated requirement (the
// README; .ci/run installs it), so its absence is a failure, never a
// silently skipped test.
func (e *Env) RequireEnclaves(t testing.TB) {
	t.Helper()
	if e.Registry == "" {
		t.Fatal("enclaves are off in this harness: bubblewrap (bwrap) is missing; apt-get install bubblewrap")
	}
}

// PushEnclaveApp pushes the test application to the harness's loopback
// registry as repo:tag and returns its reference.
func (e *Env) PushEnclaveApp(t testing.TB, repo, tag string) string {
	t.Helper()
	e.RequireEnclaves(t)
	return PushEnclaveApp(t, e.Registry, repo, tag, authn.Anonymous)
}

// PushEnclaveApp pushes the test application to the registry at host
// (e.g. a private one a test started) with auth.
func PushEnclaveApp(t testing.TB, host, repo, tag string, auth authn.Authenticator) string {
	t.Helper()
	l := providertest.Layer(t,
		providertest.Entry{Name: "app/", Type: tar.TypeDir, Mode: 0o755},
		providertest.Entry{Name: "app/server", Type: tar.TypeReg, Mode: 0o755, Body: providertest.App(t)})
	img, err := mutate.AppendLayers(empty.Image, l)
	if err != nil {
		t.Fatal(err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture = "linux", runtime.GOARCH
	cf.Config = v1.Config{Entrypoint: []string{"/app/server"}, Env: []string{"PATH=/app", "GREETING=hello from the enclave"}, WorkingDir: "/app"}
	if img, err = mutate.ConfigFile(img, cf); err != nil {
		t.Fatal(err)
	}
	ref := host + "/" + repo + ":" + tag
	r, err := name.ParseReference(ref)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(r, img, remote.WithAuth(auth)); err != nil {
		t.Fatal(err)
	}
	return ref
}

// AdminToken is the harness's operator token (admin.token).
const AdminToken = "apptest-admin-token"
