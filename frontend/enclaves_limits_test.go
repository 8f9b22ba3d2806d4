package frontend_test

import (
	"archive/tar"
	"context"
	"fmt"
	"net/http"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"conduit/app/apptest"
	"conduit/internal/enclaves/lifecycle"
	"conduit/internal/enclaves/provider/providertest"
)

// TestEnclaveBombImageRefused: an image whose small gzip layer holds a
// file far bigger than a layer may unpack to (the harness sets
// enclaves.limits.layer_bytes to 64 MiB; the file is 1 GiB) fails the
// enclave at once, with the limit named in lastFailure and error_message,
// and leaves nothing under the enclave data directory.
func TestEnclaveBombImageRefused(t *testing.T) {
	env.RequireEnclaves(t)
	app := providertest.Layer(t,
		providertest.Entry{Name: "app/", Type: tar.TypeDir, Mode: 0o755},
		providertest.Entry{Name: "app/server", Type: tar.TypeReg, Mode: 0o755, Body: providertest.App(t)})
	img, err := mutate.AppendLayers(empty.Image, app, providertest.Bomb(t, "app/zeros", 1<<30))
	if err != nil {
		t.Fatal(err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture = "linux", runtime.GOARCH
	cf.Config = v1.Config{Entrypoint: []string{"/app/server"}, WorkingDir: "/app"}
	if img, err = mutate.ConfigFile(img, cf); err != nil {
		t.Fatal(err)
	}
	ref := env.Registry + "/bomb/app:v1"
	r, err := name.ParseReference(ref)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(r, img); err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadDir(env.Config.Enclaves.DataDir)

	_, key := env.NewAccount(t)
	created := wantStatus(t, do(t, "POST", "/api/enclaves", key, enclaveBody(ref)), http.StatusAccepted)
	id := created["id"].(string)
	var e map[string]any
	apptest.Eventually(t, 2*time.Minute, "the bomb enclave to fail", func() error {
		e = wantStatus(t, do(t, "GET", "/api/enclaves/"+id, key, nil), http.StatusOK)
		if e["status"] != "FAILED" {
			if e["status"] == "DEPLOYED" {
				t.Fatalf("the bomb deployed: %v", e)
			}
			return fmt.Errorf("status %v", e["status"])
		}
		return nil
	})
	lf, _ := e["lastFailure"].(map[string]any)
	if lf == nil || !strings.Contains(lf["message"].(string), "enclaves.limits.layer_bytes") {
		t.Fatalf("lastFailure does not name the limit: %v", e)
	}
	if msg, _ := e["error_message"].(string); !strings.Contains(msg, "enclaves.limits.layer_bytes") {
		t.Fatalf("error_message does not name the limit: %v", e)
	}
	after, _ := os.ReadDir(env.Config.Enclaves.DataDir)
	for _, a := range after {
		if a.Name() == id || strings.HasPrefix(a.Name(), ".") {
			t.Errorf("left under the enclave data directory: %s (before: %v)", a.Name(), before)
		}
	}
	wantStatus(t, do(t, "DELETE", "/api/enclaves/"+id, key, nil), http.StatusNoContent)
}

// TestEnclaveDiskUsage: a deployed enclave's unpacked image counts in its
// account's usage (lifecycle.Service.Usage, readable without the
// provider's disk), and terminating it frees it.
func TestEnclaveDiskUsage(t *testing.T) {
	ref := env.PushEnclaveApp(t, "usage/echo", "v1")
	acct, key := env.NewAccount(t)
	svc := &lifecycle.Service{Store: env.Platform.Store}
	ctx := context.Background()
	created := wantStatus(t, do(t, "POST", "/api/enclaves", key, enclaveBody(ref)), http.StatusAccepted)
	id := created["id"].(string)
	waitEnclave(t, key, id, "DEPLOYED", 2*time.Minute)
	app := int64(len(providertest.App(t)))
	if n, err := svc.Usage(ctx, acct); err != nil || n < app || n > 2*app {
		t.Fatalf("usage %d (%v), want about the application's %d bytes", n, err, app)
	}
	wantStatus(t, do(t, "POST", "/api/enclaves/"+id+"/terminate", key, nil), http.StatusOK)
	apptest.Eventually(t, time.Minute, "the usage to be freed", func() error {
		if n, err := svc.Usage(ctx, acct); err != nil || n != 0 {
			return fmt.Errorf("usage %d (%v)", n, err)
		}
		return nil
	})
}
