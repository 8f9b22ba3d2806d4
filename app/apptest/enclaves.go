package apptest

import (
	"archive/tar"
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// The enclave tests' application is the local provider's test program
// (internal/enclave/local/testdata/app): an HTTP server that prints a line
// per request, compiled once per test binary.
var (
	appOnce sync.Once
	appBin  []byte
	appErr  error
)

func enclaveApp() ([]byte, error) {
	appOnce.Do(func() {
		_, self, _, _ := runtime.Caller(0)
		src := filepath.Join(filepath.Dir(self), "..", "..", "internal", "enclave", "local", "testdata", "app")
		dir, err := os.MkdirTemp("", "enclave-app-")
		if err != nil {
			appErr = err
			return
		}
		defer os.RemoveAll(dir)
		out := filepath.Join(dir, "server")
		cmd := exec.Command("go", "build", "-trimpath", "-ldflags=-s -w", "-o", out, ".")
		cmd.Dir = src
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+runtime.GOARCH)
		if msg, err := cmd.CombinedOutput(); err != nil {
			appErr = fmt.Errorf("go build: %v: %s", err, msg)
			return
		}
		appBin, appErr = os.ReadFile(out)
	})
	return appBin, appErr
}

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
	bin, err := enclaveApp()
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, h := range []struct {
		hdr  tar.Header
		body []byte
	}{
		{tar.Header{Name: "app/", Typeflag: tar.TypeDir, Mode: 0o755}, nil},
		{tar.Header{Name: "app/server", Typeflag: tar.TypeReg, Mode: 0o755, Size: int64(len(bin))}, bin},
	} {
		h.hdr.ModTime = time.Unix(0, 0)
		if err := tw.WriteHeader(&h.hdr); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write(h.body); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	data := buf.Bytes()
	l, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(data)), nil })
	if err != nil {
		t.Fatal(err)
	}
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
