package local

import (
	"archive/tar"
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"

	"conduit/internal/attest"
	"conduit/internal/enclaves/provider"
	"conduit/internal/enclaves/provider/oci"
	"conduit/internal/enclaves/provider/providertest"
)

func newLimitedProvider(t *testing.T, lim Limits) *Provider {
	t.Helper()
	auth, err := attest.NewAuthority(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	p, err := New(Options{Dir: searchableDir(t), Authority: auth, Limits: lim})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// imageOf is the test application with more layers on top.
func imageOf(t *testing.T, layers ...v1.Layer) v1.Image {
	t.Helper()
	img, err := mutate.AppendLayers(appImage(t), layers...)
	if err != nil {
		t.Fatal(err)
	}
	return img
}

// TestImageLimits: an image over each unpacking limit is refused, permanently, with the setting
// named, and leaves nothing on disk.
func TestImageLimits(t *testing.T) {
	ctx := context.Background()
	reg, err := StartRegistry(RegistryOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer reg.Close()
	deep := strings.Repeat("d/", 9) + "f"
	var many []providertest.Entry
	for i := range 40 {
		many = append(many, providertest.Entry{Name: "many/" + strconv.Itoa(i), Type: tar.TypeReg, Mode: 0o644})
	}
	lim := Limits{Image: oci.Limits{LayerBytes: 32 << 20, ImageBytes: 48 << 20, Files: 30, PathDepth: 8}}
	for _, tc := range []struct {
		name, setting string
		img           v1.Image
	}{
		{"bomb layer", "enclaves.limits.layer_bytes", imageOf(t, providertest.Bomb(t, "zeros", 1<<30))},
		{"too much together", "enclaves.limits.image_bytes", imageOf(t, providertest.Bomb(t, "a", 25<<20), providertest.Bomb(t, "b", 25<<20))},
		{"too many files", "enclaves.limits.files", imageOf(t, providertest.Layer(t, many...))},
		{"too deep", "enclaves.limits.path_depth", imageOf(t, providertest.Layer(t, providertest.Entry{Name: deep, Type: tar.TypeReg, Mode: 0o644}))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newLimitedProvider(t, lim)
			ref := reg.Host + "/limits/" + strings.ReplaceAll(tc.name, " ", "-") + ":1"
			push(t, tc.img, ref, nil)
			_, err := p.Prepare(ctx, "enc_limit", provider.Source{Ref: ref, Account: "acct"})
			if !provider.IsPermanent(err) || !strings.Contains(err.Error(), tc.setting) {
				t.Fatalf("want a permanent refusal naming %s, got %v", tc.setting, err)
			}
			if ents, _ := os.ReadDir(p.dir); len(ents) != 0 {
				t.Errorf("left on disk after the refusal: %v", ents)
			}
			if n, err := p.Usage(ctx, "acct"); err != nil || n != 0 {
				t.Errorf("usage after a refusal: %d, %v", n, err)
			}
		})
	}
}

// TestAccountQuota: an account's images count against its quota; the next one over it is
// refused, permanently, naming the setting; another account is unaffected; terminating frees it.
func TestAccountQuota(t *testing.T) {
	ctx := context.Background()
	ref := pushedApp(t)
	app := int64(len(providertest.App(t)))
	p := newLimitedProvider(t, Limits{AccountBytes: app + app/2})
	if _, err := p.Prepare(ctx, "enc_q1", provider.Source{Ref: ref, Account: "acct"}); err != nil {
		t.Fatal(err)
	}
	used, err := p.Usage(ctx, "acct")
	if err != nil || used < app || used > app+app/2 {
		t.Fatalf("usage %d (%v), want about %d", used, err, app)
	}
	_, err = p.Prepare(ctx, "enc_q2", provider.Source{Ref: ref, Account: "acct"})
	if !provider.IsPermanent(err) || !strings.Contains(err.Error(), "enclaves.limits.account_bytes") {
		t.Fatalf("over the quota: %v", err)
	}
	if _, err := os.Stat(p.enclaveDir("enc_q2")); !os.IsNotExist(err) {
		t.Errorf("the refused enclave left its directory: %v", err)
	}
	if _, err := p.Prepare(ctx, "enc_q3", provider.Source{Ref: ref, Account: "other"}); err != nil {
		t.Fatalf("another account: %v", err)
	}
	if err := p.Terminate(ctx, "enc_q1"); err != nil {
		t.Fatal(err)
	}
	if n, _ := p.Usage(ctx, "acct"); n != 0 {
		t.Errorf("usage after terminate: %d", n)
	}
	if _, err := p.Prepare(ctx, "enc_q2", provider.Source{Ref: ref, Account: "acct"}); err != nil {
		t.Fatalf("after freeing the quota: %v", err)
	}
}

// TestSandboxLimitsFromInside runs the test application and has it look at its limits: /tmp
// fills at its size, forking stops at the process limit, and its rlimits are the configured ones.
func TestSandboxLimitsFromInside(t *testing.T) {
	ctx := context.Background()
	ref := pushedApp(t)
	const tmp, procs = 4 << 20, 40
	p := newLimitedProvider(t, Limits{TmpBytes: tmp, Processes: procs, MemoryMiB: 200})
	cg, why := p.Cgroups()
	t.Logf("cgroups: %v %s; own uids: %v %s", cg, why, p.uids, p.uidWhy)
	const id = "enc_inside"
	img, err := p.Prepare(ctx, id, provider.Source{Ref: ref})
	if err != nil {
		t.Fatal(err)
	}
	inst, err := p.Deploy(ctx, id, img, provider.Config{Port: 9000})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Terminate(ctx, id)
	waitAnswer(t, p, id, inst.Addr, "/")
	got, err := get(inst.Addr, fmt.Sprintf("/limits?tmpBytes=%d&fork=%d", 2*tmp, 2*procs), 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("from inside:\n%s", got)
	var written int64
	var tmpErr string
	fmt.Sscanf(got[strings.Index(got, "tmpWritten="):], "tmpWritten=%d tmpErr=%s", &written, &tmpErr)
	if written > tmp || !strings.Contains(got, "no space left on device") {
		t.Errorf("/tmp took %d bytes of a %d-byte cap (%s)", written, tmp, tmpErr)
	}
	var forked int
	fmt.Sscanf(got[strings.Index(got, "forked="):], "forked=%d", &forked)
	if forked >= procs || !strings.Contains(got, "resource temporarily unavailable") {
		t.Errorf("started %d processes under a limit of %d", forked, procs)
	}
	if !cg {
		// The rlimit fallback: the limits are the process's own.
		// Under a uid of its own the limit is exact; sharing the provider's uid it is raised by
		// that uid's tasks at start.
		var soft, hard int
		fmt.Sscanf(got[strings.Index(got, "Max processes"):], "Max processes %d %d", &soft, &hard)
		if p.uids && (soft != procs || hard != procs) || !p.uids && (soft < procs || soft != hard) {
			t.Errorf("process rlimit %d/%d seen from inside, configured %d (own uid: %v)", soft, hard, procs, p.uids)
		}
		if !strings.Contains(got, fmt.Sprintf("Max data size %d %d bytes", 200<<20, 200<<20)) {
			t.Errorf("no data rlimit of 200 MiB seen from inside")
		}
	}
	// The application is still there: hitting the limits failed its calls, not it.
	if body, err := get(inst.Addr, "/", 5*time.Second); err != nil || body != "hello from the image" {
		t.Errorf("after the limits: %q %v", body, err)
	}
}
