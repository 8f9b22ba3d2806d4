// Package providertest builds what enclave tests deploy: the test
// application (internal/enclaves/provider/local/testdata/app, a small HTTP server)
// compiled for the sandbox, and image layers from tar entries.
package providertest

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

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

var (
	appOnce sync.Once
	appBin  []byte
	appErr  error
)

// App is the test application, a static linux binary, compiled once per
// test binary.
func App(t testing.TB) []byte {
	t.Helper()
	appOnce.Do(func() {
		_, self, _, _ := runtime.Caller(0)
		src := filepath.Join(filepath.Dir(self), "..", "local", "testdata", "app")
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
	if appErr != nil {
		t.Fatal(appErr)
	}
	return appBin
}

// Entry is one file of a layer.
type Entry struct {
	Name string
	Type byte
	Mode int64
	Body []byte
	Link string
}

// Layer is an uncompressed layer holding entries, every time at the epoch.
func Layer(t testing.TB, entries ...Entry) v1.Layer {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		h := &tar.Header{Name: e.Name, Typeflag: e.Type, Mode: e.Mode, Size: int64(len(e.Body)), Linkname: e.Link, ModTime: time.Unix(0, 0)}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write(e.Body); err != nil {
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
	return l
}

// Bomb is a layer holding one file of size zero bytes at name, streamed: a
// few hundred KB of gzip that unpacks to size bytes, as an image that
// tries to fill the disk would be. Nothing of it is ever held in memory.
func Bomb(t testing.TB, name string, size int64) v1.Layer {
	t.Helper()
	l, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		pr, pw := io.Pipe()
		go func() {
			tw := tar.NewWriter(pw)
			err := tw.WriteHeader(&tar.Header{Name: name, Typeflag: tar.TypeReg, Mode: 0o644, Size: size, ModTime: time.Unix(0, 0)})
			if err == nil {
				_, err = io.CopyN(tw, zeros{}, size)
			}
			if err == nil {
				err = tw.Close()
			}
			pw.CloseWithError(err)
		}()
		return pr, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return l
}

type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}
