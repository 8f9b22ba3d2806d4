package local

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/ed25519"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/crypto"
	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"golang.org/x/sys/unix"

	"conduit/app/apptest/wait"
	"conduit/internal/attest"
	"conduit/internal/enclaves/provider"
	"conduit/internal/enclaves/provider/oci"
	"conduit/internal/enclaves/provider/providertest"
)

var testConfig = v1.Config{
	Entrypoint: []string{"/app/server"},
	Env:        []string{"PATH=/app", "GREETING=hello from the image"},
	WorkingDir: "/app",
}

// appImage is the test application: the binary in one layer, a second layer that deletes a file
// of the first with a whiteout.
func appImage(t *testing.T) v1.Image {
	t.Helper()
	l1 := providertest.Layer(t,
		providertest.Entry{Name: "app/", Type: tar.TypeDir, Mode: 0o755},
		providertest.Entry{Name: "app/server", Type: tar.TypeReg, Mode: 0o755, Body: providertest.App(t)},
		providertest.Entry{Name: "app/junk", Type: tar.TypeReg, Mode: 0o644, Body: []byte("deleted by the next layer")},
	)
	l2 := providertest.Layer(t, providertest.Entry{Name: "app/.wh.junk", Type: tar.TypeReg, Mode: 0o644})
	img, err := mutate.AppendLayers(empty.Image, l1, l2)
	if err != nil {
		t.Fatal(err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture, cf.Config = "linux", "amd64", testConfig
	img, err = mutate.ConfigFile(img, cf)
	if err != nil {
		t.Fatal(err)
	}
	return img
}

func push(t *testing.T, img v1.Image, ref string, auth authn.Authenticator) {
	t.Helper()
	r, err := name.ParseReference(ref)
	if err != nil {
		t.Fatal(err)
	}
	if auth == nil {
		auth = authn.Anonymous
	}
	if err := remote.Write(r, img, remote.WithAuth(auth)); err != nil {
		t.Fatal(err)
	}
}

// pushedApp starts a loopback registry for the test, pushes the test
// application to it and returns its reference.
func pushedApp(t *testing.T) string {
	t.Helper()
	reg, err := StartRegistry(RegistryOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { reg.Close() })
	ref := reg.Host + "/apps/hello:1"
	push(t, appImage(t), ref, nil)
	return ref
}

// searchableDir is a temporary directory that other uids can pass through (not list), as an
// instance's own uid must to reach its image (docs/enclaves.md, "Limits").
func searchableDir(t *testing.T) string {
	t.Helper()
	d := t.TempDir()
	for _, p := range []string{filepath.Dir(d), d} {
		if err := os.Chmod(p, 0o711); err != nil {
			t.Fatal(err)
		}
	}
	return d
}

func newProvider(t *testing.T) (*Provider, *attest.Authority) {
	t.Helper()
	auth, err := attest.NewAuthority(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	// Not skipped when bubblewrap is missing: the provider is the point of the test.
	p, err := New(Options{Dir: searchableDir(t), Authority: auth})
	if err != nil {
		t.Fatalf("the local provider cannot start here (install bubblewrap: apt-get install bubblewrap): %v", err)
	}
	return p, auth
}

func get(addr, path string, timeout time.Duration) (string, error) {
	c := http.Client{Timeout: timeout}
	resp, err := c.Get("http://" + addr + path)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return string(b), err
}

func waitAnswer(t *testing.T, p *Provider, id, addr, path string) string {
	t.Helper()
	var body string
	wait.Eventually(t, 10*time.Second, "the application to answer on "+addr, func() error {
		var err error
		if body, err = get(addr, path, time.Second); err != nil {
			st, _ := p.Status(context.Background(), id)
			logs, _ := p.Logs(context.Background(), id, 0, 0)
			return fmt.Errorf("%v; status %+v, logs %+v", err, st, logs)
		}
		return nil
	})
	return body
}

// groupStates maps each process of a process group to its state letter from /proc.
func groupStates(t *testing.T, pgid int) map[int]byte {
	t.Helper()
	out := map[int]byte{}
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		data, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid pgrp …; comm may hold spaces, so cut at the last ')'.
		fields := strings.Fields(string(data[bytes.LastIndexByte(data, ')')+1:]))
		if len(fields) < 3 {
			continue
		}
		if g, _ := strconv.Atoi(fields[2]); g == pgid {
			out[pid] = fields[0][0]
		}
	}
	return out
}

func TestLifecycle(t *testing.T) {
	ctx := context.Background()
	p, auth := newProvider(t)
	reg, err := StartRegistry(RegistryOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer reg.Close()
	img := appImage(t)
	ref := reg.Host + "/apps/hello:1"
	push(t, img, ref, nil)

	// Prepare measures what an independent computation from the pushed image says.
	const id = "enc_lifecycle"
	prepared, err := p.Prepare(ctx, id, provider.Source{Ref: ref})
	if err != nil {
		t.Fatal(err)
	}
	manifestDigest, _ := img.Digest()
	configDigest, _ := img.ConfigName()
	var layerDigests []string
	layers, _ := img.Layers()
	for _, l := range layers {
		d, _ := l.Digest()
		layerDigests = append(layerDigests, d.String())
	}
	wantPCR0, _ := attest.ImagePCR(manifestDigest.String(), layerDigests)
	bwrapVersion, _ := exec.Command("bwrap", "--version").Output()
	var uts unix.Utsname
	_ = unix.Uname(&uts)
	wantPCR1, _ := attest.RuntimePCR(attest.Runtime{Sandbox: strings.TrimSpace(string(bwrapVersion)), Kernel: unix.ByteSliceToString(uts.Release[:])})
	// A host service the application must not reach when its network is its own.
	probe, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer probe.Close()
	deployEnv := []string{"GREETING=hello from the deployment", "PROBE_ADDR=" + probe.Addr().String()}
	wantPCR2, _ := attest.ApplicationPCR(attest.Application{
		ConfigDigest: configDigest.String(), Argv: testConfig.Entrypoint,
		Env: append(append([]string(nil), testConfig.Env...), deployEnv...), WorkDir: "/app",
	})
	wantImagePCR2, _ := attest.ApplicationPCR(attest.Application{ConfigDigest: configDigest.String(), Argv: testConfig.Entrypoint, Env: testConfig.Env, WorkDir: "/app"})
	for i, want := range map[int][]byte{0: wantPCR0, 1: wantPCR1, 2: wantImagePCR2} {
		if !bytes.Equal(prepared.PCRs[i], want) {
			t.Errorf("prepared PCR%d = %x, want %x", i, prepared.PCRs[i], want)
		}
	}
	if prepared.ManifestDigest != manifestDigest.String() || len(prepared.LayerDigests) != 2 {
		t.Errorf("prepared %+v", prepared)
	}
	rootfs := filepath.Join(p.enclaveDir(id), "rootfs")
	if _, err := os.Stat(filepath.Join(rootfs, "app/junk")); !os.IsNotExist(err) {
		t.Errorf("the whiteout did not delete app/junk: %v", err)
	}
	again, err := p.Prepare(ctx, id, provider.Source{Ref: ref})
	if err != nil || again.ManifestDigest != prepared.ManifestDigest {
		t.Fatalf("second Prepare: %v %+v", err, again)
	}

	// Deploy: the application answers on the forwarded loopback port, inside its sandbox.
	inst, err := p.Deploy(ctx, id, prepared, provider.Config{CPUCount: 1, MemoryMiB: 512, Env: deployEnv})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Terminate(ctx, id)
	for i, want := range map[int][]byte{0: wantPCR0, 1: wantPCR1, 2: wantPCR2} {
		if !bytes.Equal(inst.PCRs[i], want) {
			t.Errorf("instance PCR%d = %x, want %x", i, inst.PCRs[i], want)
		}
	}
	if body := waitAnswer(t, p, id, inst.Addr, "/"); body != "hello from the deployment" {
		t.Errorf("GET / = %q", body)
	}
	who := waitAnswer(t, p, id, inst.Addr, "/whoami")
	wantInside := []string{"uid=1000 ", "pid=2 ", "host=enclave ", "wd=/app ", "rootWrite=true ", "tmpWrite=true ", "hostEtc=false "}
	// As root the provider isolates the network; otherwise it falls back to the host's, and must
	// say so (TestHostNetworkFallback covers that path as root too).
	if os.Geteuid() == 0 {
		wantInside = append(wantInside, "hostNet=false ", "PORT=8080")
		if !inst.NetworkIsolated {
			t.Error("running as root, the instance must have a network of its own")
		}
	} else if inst.NetworkIsolated {
		t.Error("not running as root, the instance cannot have been given a network of its own")
	}
	for _, want := range wantInside {
		if !strings.Contains(who, want) {
			t.Errorf("inside the sandbox: %q lacks %q", who, want)
		}
	}
	if strings.Contains(who, "HOME=") || !strings.Contains(who, "PORT=") {
		t.Errorf("environment leaked or PORT missing: %s", who)
	}
	again2, err := p.Deploy(ctx, id, prepared, provider.Config{CPUCount: 1, MemoryMiB: 512, Env: deployEnv})
	if err != nil || again2.Addr != inst.Addr {
		t.Fatalf("a second Deploy must return the running instance: %v %+v", err, again2)
	}
	if st, _ := p.Status(ctx, id); st.Phase != provider.PhaseRunning || st.Addr != inst.Addr {
		t.Errorf("status %+v", st)
	}

	// Logs hold stdout and stderr with times and increasing sequence numbers. The lines are
	// read from the application's pipes as it writes them, so wait (bounded) for the last.
	var logs []provider.LogLine
	wait.Eventually(t, 10*time.Second, "the application's lines in the logs", func() error {
		logs, err = p.Logs(ctx, id, 0, 0)
		if err != nil {
			return err
		}
		var all []string
		for _, l := range logs {
			all = append(all, string(l.Stream)+":"+l.Text)
		}
		joined := strings.Join(all, "\n")
		for _, want := range []string{"stdout:listening on", "stderr:a line on stderr", "stdout:request /whoami"} {
			if !strings.Contains(joined, want) {
				return fmt.Errorf("logs lack %q:\n%s", want, joined)
			}
		}
		return nil
	})
	for i, l := range logs {
		if l.Time.IsZero() || (i > 0 && l.Seq <= logs[i-1].Seq) {
			t.Errorf("bad log line %+v", l)
		}
	}
	if tail, _ := p.Logs(ctx, id, logs[len(logs)-1].Seq-1, 5); len(tail) != 1 {
		t.Errorf("Logs after the last but one: %d lines", len(tail))
	}

	// Pause: every process of the group is stopped and the application does not answer.
	pgid := p.get(id).cmd.Process.Pid
	if err := p.Pause(ctx, id); err != nil {
		t.Fatal(err)
	}
	if err := p.Pause(ctx, id); err != nil {
		t.Fatalf("a second Pause: %v", err)
	}
	states := groupStates(t, pgid)
	if len(states) < 2 {
		t.Fatalf("process group %d: %v", pgid, states)
	}
	wait.Eventually(t, 5*time.Second, "every process of the group stopped after Pause", func() error {
		if states = groupStates(t, pgid); !allStopped(states) {
			return fmt.Errorf("states %v", states)
		}
		return nil
	})
	if _, err := get(inst.Addr, "/", 300*time.Millisecond); err == nil {
		t.Error("a paused application answered")
	}
	if st, _ := p.Status(ctx, id); st.Phase != provider.PhasePaused {
		t.Errorf("status %+v", st)
	}
	if err := p.Resume(ctx, id); err != nil {
		t.Fatal(err)
	}
	if body := waitAnswer(t, p, id, inst.Addr, "/"); body != "hello from the deployment" {
		t.Errorf("after Resume GET / = %q", body)
	}

	// Attest: the document verifies against the local root with the expected PCRs and nonce, and
	// the attested keys check the agent's signatures.
	nonce := []byte("a fresh challenge")
	doc, err := p.Attest(ctx, id, nonce)
	if err != nil {
		t.Fatal(err)
	}
	rep := attest.Verify(doc, attest.VerifyOptions{Root: auth.Root(), PCRs: map[int][]byte{0: wantPCR0, 1: wantPCR1, 2: wantPCR2}, Nonce: nonce})
	if !rep.Verified() || rep.TrustLevel != attest.TrustLocal || rep.IntegrityScore != 100 {
		t.Fatalf("verification: %+v", rep)
	}
	addr, err := rep.EVMAddress()
	if err != nil || addr.Hex() != inst.EVMAddress {
		t.Fatalf("attested address %v (%v), instance says %s", addr, err, inst.EVMAddress)
	}
	hash := crypto.Keccak256([]byte("a transaction to sign"))
	sig, err := p.Sign(ctx, id, provider.SignRequest{Key: provider.KeyEVM, Payload: hash})
	if err != nil {
		t.Fatal(err)
	}
	pub, err := crypto.SigToPub(hash, sig)
	if err != nil || crypto.PubkeyToAddress(*pub) != addr {
		t.Fatalf("the EVM signature does not recover to the attested address: %v", err)
	}
	solKey, err := rep.SolanaPublicKey()
	if err != nil || solKey.String() != inst.SolanaPublicKey {
		t.Fatalf("attested Solana key %v (%v), instance says %s", solKey, err, inst.SolanaPublicKey)
	}
	msg := []byte("a solana message")
	solSig, err := p.Sign(ctx, id, provider.SignRequest{Key: provider.KeySolana, Payload: msg})
	if err != nil || !ed25519.Verify(ed25519.PublicKey(solKey[:]), msg, solSig) {
		t.Fatalf("the Solana signature does not verify under the attested key: %v", err)
	}
	if _, err := p.Sign(ctx, id, provider.SignRequest{Key: provider.KeyEVM, Payload: []byte("not a hash")}); !provider.IsPermanent(err) {
		t.Errorf("signing a non-hash: %v", err)
	}
	if info, err := os.Stat(filepath.Join(p.enclaveDir(id), keysFile)); err != nil || info.Mode().Perm() != 0o600 {
		t.Errorf("keys file: %v %v", info, err)
	}

	// Terminate: processes gone, files removed; again is a no-op.
	if err := p.Terminate(ctx, id); err != nil {
		t.Fatal(err)
	}
	// Zombies are allowed: the sandbox's init is reparented to the host's reaper, which may
	// collect it a little later; a zombie runs nothing and holds no memory.
	if left := alive(groupStates(t, pgid)); len(left) != 0 {
		t.Errorf("processes left after Terminate: %v", left)
	}
	if _, err := os.Stat(p.enclaveDir(id)); !os.IsNotExist(err) {
		t.Errorf("files left after Terminate: %v", err)
	}
	if err := p.Terminate(ctx, id); err != nil {
		t.Errorf("a second Terminate: %v", err)
	}
	if st, _ := p.Status(ctx, id); st.Phase != provider.PhaseAbsent {
		t.Errorf("status after Terminate %+v", st)
	}
	if _, err := p.Attest(ctx, id, nonce); !provider.IsPermanent(err) {
		t.Errorf("attesting a terminated enclave: %v", err)
	}
}

func alive(states map[int]byte) map[int]byte {
	out := map[int]byte{}
	for pid, s := range states {
		if s != 'Z' {
			out[pid] = s
		}
	}
	return out
}

func allStopped(states map[int]byte) bool {
	for _, s := range states {
		if s != 'T' {
			return false
		}
	}
	return len(states) > 0
}

// TestLimits deploys with one CPU and 128 MiB: the application sees one CPU, and allocating more
// than its memory ends it instead of the host.
func TestLimits(t *testing.T) {
	if runtime.NumCPU() < 2 {
		t.Fatal("this test needs at least two CPUs to show that the instance gets one")
	}
	ctx := context.Background()
	p, _ := newProvider(t)
	ref := pushedApp(t)
	const id = "enc_limits"
	img, err := p.Prepare(ctx, id, provider.Source{Ref: ref})
	if err != nil {
		t.Fatal(err)
	}
	inst, err := p.Deploy(ctx, id, img, provider.Config{CPUCount: 1, MemoryMiB: 128, Port: 9000})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Terminate(ctx, id)
	if got := waitAnswer(t, p, id, inst.Addr, "/cpus"); got != "1" {
		t.Errorf("the instance sees %s CPUs, want 1", got)
	}
	if got, err := get(inst.Addr, "/alloc?mib=8", 10*time.Second); err != nil || !strings.HasPrefix(got, "allocated") {
		t.Fatalf("a small allocation failed: %q %v", got, err)
	}
	if got, err := get(inst.Addr, "/alloc?mib=256", 10*time.Second); err == nil && strings.HasPrefix(got, "allocated") {
		t.Fatalf("256 MiB allocated under a 128 MiB limit")
	}
	wait.Eventually(t, 5*time.Second, "the instance to exit after exceeding its memory", func() error {
		if st, _ := p.Status(ctx, id); st.Phase != provider.PhaseExited {
			return fmt.Errorf("the instance is %+v", st)
		}
		return nil
	})
	logs, _ := p.Logs(ctx, id, 0, 0)
	var sawOOM bool
	for _, l := range logs {
		sawOOM = sawOOM || (l.Stream == provider.Stderr && strings.Contains(l.Text, "out of memory"))
	}
	if !sawOOM {
		t.Errorf("no out-of-memory line in the logs: %+v", logs)
	}
	// An exited instance is not running: Deploy starts it again (same keys, new process).
	again, err := p.Deploy(ctx, id, img, provider.Config{CPUCount: 1, MemoryMiB: 128, Port: 9000})
	if err != nil {
		t.Fatal(err)
	}
	if again.EVMAddress != inst.EVMAddress {
		t.Error("a redeployed enclave must keep its signing keys")
	}
	if got := waitAnswer(t, p, id, again.Addr, "/cpus"); got != "1" {
		t.Errorf("after redeploy: %s CPUs", got)
	}
}

// TestConcurrentDeploy: retried activities may overlap; one id still gets one instance.
func TestConcurrentDeploy(t *testing.T) {
	ctx := context.Background()
	p, _ := newProvider(t)
	ref := pushedApp(t)
	const id = "enc_concurrent"
	img, err := p.Prepare(ctx, id, provider.Source{Ref: ref})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Terminate(ctx, id)
	addrs := make([]string, 4)
	var wg sync.WaitGroup
	for i := range addrs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			inst, err := p.Deploy(ctx, id, img, provider.Config{})
			if err != nil {
				t.Error(err)
				return
			}
			addrs[i] = inst.Addr
		}()
	}
	wg.Wait()
	for _, a := range addrs {
		if a != addrs[0] {
			t.Fatalf("concurrent deploys made different instances: %v", addrs)
		}
	}
	waitAnswer(t, p, id, addrs[0], "/")
	// Deploying another image under a running id is refused, permanently.
	other := img
	other.ManifestDigest = "sha256:" + strings.Repeat("0", 64)
	if _, err := p.Deploy(ctx, id, other, provider.Config{}); !provider.IsPermanent(err) {
		t.Errorf("deploying a different image over a running one: %v", err)
	}
	// A paused instance can be terminated directly.
	pgid := p.get(id).cmd.Process.Pid
	if err := p.Pause(ctx, id); err != nil {
		t.Fatal(err)
	}
	if err := p.Terminate(ctx, id); err != nil {
		t.Fatalf("terminating a paused instance: %v", err)
	}
	if left := alive(groupStates(t, pgid)); len(left) != 0 {
		t.Errorf("processes left: %v", left)
	}
	if err := p.Resume(ctx, id); !provider.IsPermanent(err) {
		t.Errorf("resuming a terminated enclave: %v", err)
	}
}

// TestLeafRenewal: an enclave that outlives its three-hour leaf still attests, with a new leaf.
func TestLeafRenewal(t *testing.T) {
	ctx := context.Background()
	var mu sync.Mutex
	clock := time.Now()
	now := func() time.Time { mu.Lock(); defer mu.Unlock(); return clock }
	base, err := attest.NewAuthority(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	auth := base.WithClock(now)
	p, err := New(Options{Dir: t.TempDir(), Authority: auth, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	ref := pushedApp(t)
	const id = "enc_renewal"
	img, err := p.Prepare(ctx, id, provider.Source{Ref: ref})
	if err != nil {
		t.Fatal(err)
	}
	inst, err := p.Deploy(ctx, id, img, provider.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Terminate(ctx, id)
	first := p.get(id).signer.Certificate()

	mu.Lock()
	clock = clock.Add(attest.LeafLifetime)
	mu.Unlock()
	doc, err := p.Attest(ctx, id, []byte("later"))
	if err != nil {
		t.Fatal(err)
	}
	rep := attest.Verify(doc, attest.VerifyOptions{Root: auth.Root(), PCRs: inst.PCRs, Nonce: []byte("later"), Now: now})
	if !rep.Verified() {
		t.Fatalf("a document three hours on: %+v", rep.Checks)
	}
	if p.get(id).signer.Certificate().Equal(first) {
		t.Error("the leaf was not renewed")
	}
}

// TestProviderRestart: a worker that restarts gets a new Provider over the same directory. The
// prepared image is still there, and the enclave keeps its keys when it is deployed again.
func TestProviderRestart(t *testing.T) {
	ctx := context.Background()
	auth, err := attest.NewAuthority(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	p1, err := New(Options{Dir: dir, Authority: auth})
	if err != nil {
		t.Fatal(err)
	}
	ref := pushedApp(t)
	const id = "enc_restart"
	img, err := p1.Prepare(ctx, id, provider.Source{Ref: ref})
	if err != nil {
		t.Fatal(err)
	}
	first, err := p1.Deploy(ctx, id, img, provider.Config{})
	if err != nil {
		t.Fatal(err)
	}
	// The old process dies with its instances (--die-with-parent); here the instance is killed by
	// hand, since the test process lives on.
	old := p1.get(id)
	_ = old.signalGroup(syscall.SIGKILL)
	<-old.done

	p2, err := New(Options{Dir: dir, Authority: auth})
	if err != nil {
		t.Fatal(err)
	}
	if st, _ := p2.Status(ctx, id); st.Phase != provider.PhasePrepared {
		t.Fatalf("after a restart: %+v", st)
	}
	again, err := p2.Deploy(ctx, id, img, provider.Config{})
	if err != nil {
		t.Fatal(err)
	}
	if again.EVMAddress != first.EVMAddress || again.SolanaPublicKey != first.SolanaPublicKey {
		t.Error("the enclave's keys changed across a provider restart")
	}
	waitAnswer(t, p2, id, again.Addr, "/")
	if err := p2.Terminate(ctx, id); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, id)); !os.IsNotExist(err) {
		t.Errorf("files left: %v", err)
	}
}

// TestHostNetworkFallback: without the right to enter namespaces (not root) the instance shares
// the host's network. It still works, is given a free port, and says it is not isolated.
func TestHostNetworkFallback(t *testing.T) {
	ctx := context.Background()
	p, _ := newProvider(t)
	p.ownNet = false
	ref := pushedApp(t)
	probe, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer probe.Close()
	const id = "enc_hostnet"
	img, err := p.Prepare(ctx, id, provider.Source{Ref: ref})
	if err != nil {
		t.Fatal(err)
	}
	inst, err := p.Deploy(ctx, id, img, provider.Config{Port: 8080, Env: []string{"PROBE_ADDR=" + probe.Addr().String()}})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Terminate(ctx, id)
	if inst.NetworkIsolated {
		t.Error("an instance on the host's network must not claim isolation")
	}
	who := waitAnswer(t, p, id, inst.Addr, "/whoami")
	_, port, _ := net.SplitHostPort(inst.Addr)
	if !strings.Contains(who, "hostNet=true ") || !strings.Contains(who, "PORT="+port) {
		t.Errorf("on the host's network: %s", who)
	}
}

func TestPullErrors(t *testing.T) {
	ctx := context.Background()
	p, _ := newProvider(t)

	reg, err := StartRegistry(RegistryOptions{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = p.Prepare(ctx, "enc_missing", provider.Source{Ref: reg.Host + "/apps/nothing:1"})
	if !provider.IsPermanent(err) {
		t.Errorf("a missing image: want a permanent error, got %v", err)
	}
	if _, err := p.Prepare(ctx, "enc_badref", provider.Source{Ref: "UPPER CASE/!!"}); !provider.IsPermanent(err) {
		t.Errorf("a bad reference: want a permanent error, got %v", err)
	}
	// Images that can never run: no command, a layer that climbs out of its root.
	noCmd, err := mutate.AppendLayers(empty.Image, providertest.Layer(t, providertest.Entry{Name: "app/", Type: tar.TypeDir, Mode: 0o755}))
	if err != nil {
		t.Fatal(err)
	}
	push(t, noCmd, reg.Host+"/apps/nocmd:1", nil)
	if _, err := p.Prepare(ctx, "enc_nocmd", provider.Source{Ref: reg.Host + "/apps/nocmd:1"}); !provider.IsPermanent(err) {
		t.Errorf("an image without a command: want a permanent error, got %v", err)
	}
	escape, err := mutate.AppendLayers(empty.Image, providertest.Layer(t, providertest.Entry{Name: "../outside", Type: tar.TypeReg, Mode: 0o644, Body: []byte("x")}))
	if err != nil {
		t.Fatal(err)
	}
	escape, err = mutate.Config(escape, testConfig)
	if err != nil {
		t.Fatal(err)
	}
	push(t, escape, reg.Host+"/apps/escape:1", nil)
	if _, err := p.Prepare(ctx, "enc_escape", provider.Source{Ref: reg.Host + "/apps/escape:1"}); !provider.IsPermanent(err) {
		t.Errorf("an image whose layer climbs out: want a permanent error, got %v", err)
	}
	host := reg.Host
	reg.Close()
	_, err = p.Prepare(ctx, "enc_down", provider.Source{Ref: host + "/apps/hello:1"})
	if err == nil || provider.IsPermanent(err) {
		t.Errorf("a registry that is down: want a transient error, got %v", err)
	}
	if _, err := p.Prepare(ctx, "../escape", provider.Source{Ref: host + "/x:1"}); !provider.IsPermanent(err) {
		t.Errorf("a bad id: %v", err)
	}
}

// TestLayerFetchFails: the manifest and config come through but a layer does not (503). The
// failure must surface as transient — not as a short, "complete" root — and leave no tree behind.
func TestLayerFetchFails(t *testing.T) {
	ctx := context.Background()
	p, _ := newProvider(t)
	img := appImage(t)
	layers, _ := img.Layers()
	bad, _ := layers[0].Digest()
	var failing sync.Map
	failing.Store(bad.String(), true)
	reg := registry.New(registry.Logger(log.New(io.Discard, "", 0)))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet && strings.Contains(r.URL.Path, "/blobs/") {
			if _, ok := failing.Load(path.Base(r.URL.Path)); ok {
				http.Error(w, "unavailable", http.StatusServiceUnavailable)
				return
			}
		}
		reg.ServeHTTP(w, r)
	}))
	defer srv.Close()
	ref := strings.TrimPrefix(srv.URL, "http://") + "/apps/hello:1"
	push(t, img, ref, nil)

	_, err := p.Prepare(ctx, "enc_layer", provider.Source{Ref: ref})
	if err == nil || provider.IsPermanent(err) {
		t.Fatalf("a layer that cannot be fetched: want a transient error, got %v", err)
	}
	if _, err := os.Stat(filepath.Join(p.enclaveDir("enc_layer"), "rootfs")); !os.IsNotExist(err) {
		t.Errorf("a partial tree was left: %v", err)
	}
	// The registry recovers: the retry succeeds.
	failing.Delete(bad.String())
	if _, err := p.Prepare(ctx, "enc_layer", provider.Source{Ref: ref}); err != nil {
		t.Fatalf("after the registry recovered: %v", err)
	}
	if _, err := os.Stat(filepath.Join(p.enclaveDir("enc_layer"), "rootfs", "app", "server")); err != nil {
		t.Error(err)
	}
}

func TestPrivateRegistry(t *testing.T) {
	ctx := context.Background()
	p, _ := newProvider(t)
	reg, err := StartRegistry(RegistryOptions{Username: "builder", Password: "s3cret", BlobDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer reg.Close()
	ref := reg.Host + "/private/hello:1"
	push(t, appImage(t), ref, &authn.Basic{Username: "builder", Password: "s3cret"})

	if _, err := p.Prepare(ctx, "enc_anon", provider.Source{Ref: ref}); !provider.IsPermanent(err) {
		t.Errorf("without credentials: want a permanent error, got %v", err)
	}
	if _, err := p.Prepare(ctx, "enc_wrong", provider.Source{Ref: ref, Username: "builder", Password: "wrong"}); !provider.IsPermanent(err) {
		t.Errorf("with wrong credentials: want a permanent error, got %v", err)
	}
	img, err := p.Prepare(ctx, "enc_private", provider.Source{Ref: ref, Username: "builder", Password: "s3cret"})
	if err != nil {
		t.Fatalf("with credentials: %v", err)
	}
	if len(img.PCRs[0]) != attest.PCRSize {
		t.Errorf("PCR0 %x", img.PCRs[0])
	}
	if err := p.Terminate(ctx, "enc_private"); err != nil {
		t.Fatal(err)
	}
}

// mutate.Extract already drops or refuses most escapes; unpack must hold on its own as well, so
// both layers are tested: whole images, and single entries straight into unpackEntry.
func TestUnpackRefusesEscapes(t *testing.T) {
	outside := t.TempDir()
	for _, tc := range []struct {
		name    string
		entries []providertest.Entry
	}{
		{"dotdot", []providertest.Entry{{Name: "../outside", Type: tar.TypeReg, Mode: 0o644, Body: []byte("x")}}},
		{"through a symlink", []providertest.Entry{
			{Name: "etc", Type: tar.TypeSymlink, Link: outside},
			{Name: "etc/planted", Type: tar.TypeReg, Mode: 0o644, Body: []byte("x")},
		}},
		{"file then symlink over its directory", []providertest.Entry{
			{Name: "etc/planted", Type: tar.TypeReg, Mode: 0o644, Body: []byte("x")},
			{Name: "etc", Type: tar.TypeSymlink, Link: outside},
		}},
		{"hard link out", []providertest.Entry{{Name: "passwd", Type: tar.TypeLink, Link: "../../etc/passwd"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			img, err := mutate.AppendLayers(empty.Image, providertest.Layer(t, tc.entries...))
			if err != nil {
				t.Fatal(err)
			}
			dir := t.TempDir()
			_ = unpack(img, filepath.Join(dir, "rootfs"), oci.Limits{}, oci.NewTree(oci.Limits{}), -1) // refusing or dropping are both fine
			if _, err := os.Stat(filepath.Join(dir, "outside")); err == nil {
				t.Error("a file was written outside the root")
			}
			if _, err := os.Stat(filepath.Join(outside, "planted")); err == nil {
				t.Error("a file was written through a symbolic link")
			}
			if _, err := os.Lstat(filepath.Join(dir, "rootfs", "passwd")); err == nil {
				t.Error("a hard link out of the root was made")
			}
		})
	}

	root := filepath.Join(t.TempDir(), "rootfs")
	if err := os.Mkdir(root, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(root, "etc")); err != nil {
		t.Fatal(err)
	}
	for _, h := range []*tar.Header{
		{Name: "../outside", Typeflag: tar.TypeReg, Mode: 0o644},
		{Name: "a/../../outside", Typeflag: tar.TypeReg, Mode: 0o644},
		{Name: "etc/planted", Typeflag: tar.TypeReg, Mode: 0o644},
		{Name: "etc/sub/planted", Typeflag: tar.TypeDir, Mode: 0o755},
		{Name: "passwd", Typeflag: tar.TypeLink, Linkname: "../../etc/passwd"},
		{Name: "passwd", Typeflag: tar.TypeLink, Linkname: "etc/x"},
	} {
		if err := unpackEntry(root, h, strings.NewReader(""), -1); err == nil {
			t.Errorf("unpackEntry accepted %q (link %q)", h.Name, h.Linkname)
		}
	}
	if ents, _ := os.ReadDir(outside); len(ents) != 0 {
		t.Errorf("written outside the root: %v", ents)
	}
}

func TestKeysAreStable(t *testing.T) {
	path := filepath.Join(t.TempDir(), keysFile)
	k1, err := loadOrCreateKeys(path)
	if err != nil {
		t.Fatal(err)
	}
	k2, err := loadOrCreateKeys(path)
	if err != nil {
		t.Fatal(err)
	}
	if k1.evmAddress() != k2.evmAddress() || k1.solanaAddress() != k2.solanaAddress() {
		t.Error("reloaded keys differ")
	}
}
