// Package local is the embedded enclave provider: it pulls OCI images from any registry, measures
// them into Nitro-style PCRs, unpacks them into a private root and runs their entrypoint in a
// bubblewrap sandbox on this machine. Its agent (in the provider process, holding the enclave's
// keys) signs attestation documents with a leaf of the local attestation root. docs/enclaves.md
// says what this isolates and what it does not.
package local

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"conduit/internal/attest"
	"conduit/internal/enclaves/provider"
	"conduit/internal/enclaves/provider/oci"
)

// Options configure a Provider.
type Options struct {
	// Dir keeps every enclave's files (image tree, keys, leaf): Dir/<id>/. Created 0700.
	Dir string
	// Authority certifies each instance's attestation leaf.
	Authority *attest.Authority
	// Bwrap is the bubblewrap binary; empty means "bwrap" on PATH.
	Bwrap string
	// MaxLogLines bounds the application log kept per enclave (oldest dropped); 0 means 10000.
	MaxLogLines int
	// Limits bound images, accounts and instances (zero fields: DefaultLimits).
	Limits Limits
	// Now is the clock that decides when an attestation leaf is due for renewal; nil means
	// time.Now. Tests pass the clock they gave Authority.WithClock.
	Now func() time.Time
}

// Provider is the local enclave provider. It is safe for concurrent use.
type Provider struct {
	dir     string
	auth    *attest.Authority
	tools   sandboxTools
	runtime attest.Runtime
	maxLogs int
	now     func() time.Time
	// ownNet: instances get a network namespace of their own, reachable through a forwarded
	// port. False (not root) means they share the host's network.
	ownNet bool
	limits Limits
	// cg places instances in cgroups of their own (nil: the rlimit fallback, for cgWhy).
	cg    *cgroups
	cgWhy string

	// uids: instances run as host uids of their own (root, and a data directory they can reach);
	// otherwise as the provider's uid, for uidWhy.
	uids   bool
	uidWhy string

	uidMu        sync.Mutex
	reservedUIDs map[string]int // sandbox uids taken by ids not yet recorded on disk

	mu        sync.Mutex
	enclaves  map[string]*instance
	idLocks   map[string]*sync.Mutex
	idLocksMu sync.Mutex
	// accountLocks (under idLocksMu) serialise one account's unpacking (the quota).
	accountLocks map[string]*sync.Mutex
}

var (
	_ provider.Provider = (*Provider)(nil)
	_ provider.DiskUser = (*Provider)(nil)
)

// New checks that bubblewrap can build sandboxes here and returns a provider.
func New(opts Options) (*Provider, error) {
	if opts.Dir == "" || opts.Authority == nil {
		return nil, errors.New("local enclaves: Dir and Authority are required")
	}
	if err := os.MkdirAll(opts.Dir, 0o700); err != nil {
		return nil, fmt.Errorf("local enclaves: %w", err)
	}
	tools, err := findTools(opts.Bwrap)
	if err != nil {
		return nil, fmt.Errorf("local enclaves: %w", err)
	}
	probeDir, err := os.MkdirTemp(opts.Dir, ".probe-")
	if err != nil {
		return nil, fmt.Errorf("local enclaves: %w", err)
	}
	defer os.RemoveAll(probeDir)
	if err := tools.probe(probeDir); err != nil {
		return nil, fmt.Errorf("local enclaves: %w (docs/enclaves.md, requirements)", err)
	}
	var uts unix.Utsname
	if err := unix.Uname(&uts); err != nil {
		return nil, fmt.Errorf("local enclaves: %w", err)
	}
	max := opts.MaxLogLines
	if max <= 0 {
		max = 10000
	}
	now := opts.Now
	if now == nil {
		now = time.Now
	}
	limits := opts.Limits.WithDefaults()
	uids, uidWhy := sandboxUIDsUsable(opts.Dir)
	cg, why, err := detectCgroups(limits.Cgroup)
	if err != nil {
		return nil, fmt.Errorf("local enclaves: %w", err)
	}
	return &Provider{
		limits:       limits,
		uids:         uids,
		uidWhy:       uidWhy,
		cg:           cg,
		cgWhy:        why,
		reservedUIDs: map[string]int{},
		accountLocks: map[string]*sync.Mutex{},
		now:          now,
		ownNet:       canEnterNetns(),
		dir:          opts.Dir,
		auth:         opts.Authority,
		tools:        tools,
		runtime:      attest.Runtime{Sandbox: tools.version, Kernel: unix.ByteSliceToString(uts.Release[:])},
		maxLogs:      max,
		enclaves:     map[string]*instance{},
		idLocks:      map[string]*sync.Mutex{},
	}, nil
}

// Cgroups says whether instances get cgroup v2 limits here and, when not, why (the rlimit
// fallback applies: docs/enclaves.md, "Limits").
func (p *Provider) Cgroups() (bool, string) { return p.cg != nil, p.cgWhy }

// SandboxUIDs says whether instances run as host uids of their own (so the process limit is
// per instance) and, when not, why.
func (p *Provider) SandboxUIDs() (bool, string) { return p.uids, p.uidWhy }

// Runtime is what PCR1 measures on this host.
func (p *Provider) Runtime() attest.Runtime { return p.runtime }

// instance is a running (or paused, or exited) sandbox and its agent.
type instance struct {
	img    provider.Image
	info   provider.Instance
	cmd    *exec.Cmd
	uid    int           // the sandbox's host uid; -1: the provider's own
	fwd    *forwarder    // nil when the instance shares the host's network
	done   chan struct{} // closed when the process has been reaped
	keys   *keys
	signer *attest.Signer

	mu      sync.Mutex
	paused  bool
	exitErr error
	logs    []provider.LogLine
	nextSeq int64
}

var validID = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$`)

// lock serialises the calls for one id: a retried activity may overlap the attempt it retries.
func (p *Provider) lock(id string) (func(), error) {
	if !validID.MatchString(id) || strings.Contains(id, "..") {
		return nil, provider.Errorf(provider.Permanent, "id", id, "an enclave id is 1–128 letters, digits, '_', '.' or '-'")
	}
	p.idLocksMu.Lock()
	l, ok := p.idLocks[id]
	if !ok {
		l = &sync.Mutex{}
		p.idLocks[id] = l
	}
	p.idLocksMu.Unlock()
	l.Lock()
	return l.Unlock, nil
}

func (p *Provider) enclaveDir(id string) string { return filepath.Join(p.dir, id) }

const imageFile = "image.json"

// Prepare pulls, measures and unpacks. When the id already holds the same image (by manifest
// digest), the unpacked tree is kept and only the measurement is returned again.
func (p *Provider) Prepare(ctx context.Context, id string, src provider.Source) (provider.Image, error) {
	unlock, err := p.lock(id)
	if err != nil {
		return provider.Image{}, err
	}
	defer unlock()
	img, err := oci.Pull(ctx, id, src)
	if err != nil {
		return provider.Image{}, err
	}
	desc, err := describe(img, src.Ref, p.runtime)
	if err != nil {
		return provider.Image{}, classifyRegistry(id, src.Ref, err)
	}
	dir := p.enclaveDir(id)
	if prev, err := readImage(dir); err == nil && prev.ManifestDigest == desc.ManifestDigest {
		if o, err := readOwner(dir); err == nil {
			desc.DiskBytes = o.Bytes
		}
		return desc, nil
	}
	if p.running(id) {
		return provider.Image{}, provider.Errorf(provider.Permanent, "prepare", id, "the enclave runs another image; terminate it first")
	}
	_, statErr := os.Stat(dir)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return provider.Image{}, provider.Wrap(provider.Transient, "prepare", id, err)
	}
	if errors.Is(statErr, os.ErrNotExist) {
		// A first prepare that fails leaves no directory behind.
		defer func() {
			if _, err := readImage(dir); err != nil {
				_ = os.RemoveAll(dir)
			}
		}()
	}
	uid, err := p.sandboxUID(id)
	if err != nil {
		return provider.Image{}, provider.Wrap(provider.Transient, "prepare", id, err)
	}
	// Unpack beside the old tree and swap, so a failed attempt leaves nothing half-written behind
	// the name Deploy reads (and an image over a limit leaves nothing at all).
	tmp, err := os.MkdirTemp(dir, ".rootfs-")
	if err != nil {
		return provider.Image{}, provider.Wrap(provider.Transient, "prepare", id, err)
	}
	defer os.RemoveAll(tmp)
	unlockAccount := p.accountLock(src.Account)
	defer unlockAccount()
	budget, used, err := p.quotaBudget(src.Account, id)
	if err != nil {
		return provider.Image{}, provider.Wrap(provider.Transient, "prepare", id, err)
	}
	tree := oci.NewTree(p.limits.Image)
	if budget < tree.Budget {
		quota := p.limits.AccountBytes
		tree.Budget = max(budget, 0)
		tree.BudgetErr = func(written int64) *oci.LimitError {
			return &oci.LimitError{Setting: "enclaves.limits.account_bytes", Limit: quota,
				What: fmt.Sprintf("the account's enclaves would take more than %d bytes of disk (%d taken by its other enclaves, this image more than %d)", quota, used, written)}
		}
	}
	if err := unpack(img, filepath.Join(tmp, "rootfs"), p.limits.Image, tree, uid); err != nil {
		if le, over := oci.Exceeded(err); over {
			return provider.Image{}, provider.Errorf(provider.Permanent, "prepare", id, "image %s refused: %v", src.Ref, le)
		}
		return provider.Image{}, classifyRegistry(id, src.Ref, err)
	}
	if err := os.RemoveAll(filepath.Join(dir, "rootfs")); err != nil {
		return provider.Image{}, provider.Wrap(provider.Transient, "prepare", id, err)
	}
	if err := os.Rename(filepath.Join(tmp, "rootfs"), filepath.Join(dir, "rootfs")); err != nil {
		return provider.Image{}, provider.Wrap(provider.Transient, "prepare", id, err)
	}
	if err := writeJSON(filepath.Join(dir, ownerFile), owner{Account: src.Account, Bytes: tree.Bytes(), UID: uid}); err != nil {
		return provider.Image{}, provider.Wrap(provider.Transient, "prepare", id, err)
	}
	desc.DiskBytes = tree.Bytes()
	if err := writeJSON(filepath.Join(dir, imageFile), desc); err != nil {
		return provider.Image{}, provider.Wrap(provider.Transient, "prepare", id, err)
	}
	return desc, nil
}

func readImage(dir string) (provider.Image, error) {
	var img provider.Image
	data, err := os.ReadFile(filepath.Join(dir, imageFile))
	if err != nil {
		return img, err
	}
	return img, json.Unmarshal(data, &img)
}

func writeJSON(path string, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

func (p *Provider) get(id string) *instance {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.enclaves[id]
}

func (p *Provider) running(id string) bool {
	in := p.get(id)
	if in == nil {
		return false
	}
	select {
	case <-in.done:
		return false
	default:
		return true
	}
}

// Deploy starts the instance: its keys (made once per enclave and kept), a fresh attestation
// leaf, a loopback port, and the sandboxed process with its output captured.
func (p *Provider) Deploy(ctx context.Context, id string, img provider.Image, cfg provider.Config) (provider.Instance, error) {
	unlock, err := p.lock(id)
	if err != nil {
		return provider.Instance{}, err
	}
	defer unlock()
	if in := p.get(id); in != nil && p.running(id) {
		if err := checkSame(in.img, img); err != nil {
			return provider.Instance{}, provider.Wrap(provider.Permanent, "deploy", id, err)
		}
		return in.info, nil
	}
	dir := p.enclaveDir(id)
	prepared, err := readImage(dir)
	if err != nil {
		return provider.Instance{}, provider.Errorf(provider.Permanent, "deploy", id, "the image was not prepared: %v", err)
	}
	if err := checkSame(prepared, img); err != nil {
		return provider.Instance{}, provider.Wrap(provider.Permanent, "deploy", id, err)
	}
	for _, kv := range cfg.Env {
		if k, _, ok := strings.Cut(kv, "="); !ok || k == "" || k == "PORT" {
			return provider.Instance{}, provider.Errorf(provider.Permanent, "deploy", id, "environment entry %q: want KEY=value, and PORT is the provider's", kv)
		}
	}
	pcrs, err := measure(prepared, cfg.Env, p.runtime)
	if err != nil {
		return provider.Instance{}, provider.Wrap(provider.Permanent, "deploy", id, err)
	}
	k, err := loadOrCreateKeys(filepath.Join(dir, keysFile))
	if err != nil {
		return provider.Instance{}, provider.Wrap(provider.Transient, "deploy", id, err)
	}
	signer, err := p.auth.IssueLeaf(id)
	if err != nil {
		return provider.Instance{}, provider.Wrap(provider.Transient, "deploy", id, err)
	}
	ownNet := p.ownNet
	port := cfg.Port
	if port == 0 {
		port = 8080
	}
	if port < 1 || port > 65535 {
		return provider.Instance{}, provider.Errorf(provider.Permanent, "deploy", id, "port %d is not a TCP port", port)
	}
	if !ownNet {
		// On the host's network the application must take a port nobody else has.
		if port, err = freePort(); err != nil {
			return provider.Instance{}, provider.Wrap(provider.Transient, "deploy", id, err)
		}
	}
	env := append(append(append([]string(nil), prepared.Env...), cfg.Env...), "PORT="+strconv.Itoa(port))
	uid, err := p.treeOwner(id)
	if err != nil {
		return provider.Instance{}, provider.Wrap(provider.Transient, "deploy", id, err)
	}
	r := run{rootfs: filepath.Join(dir, "rootfs"), argv: prepared.Argv, env: env, workDir: prepared.WorkDir,
		cpus: cfg.CPUCount, memMiB: cfg.MemoryMiB, procs: p.limits.Processes, tmp: p.limits.TmpBytes,
		uid: uid, cgroup: p.cg != nil, ownNet: ownNet}
	if r.cpus <= 0 {
		r.cpus = p.limits.CPUs
	}
	if r.memMiB <= 0 {
		r.memMiB = p.limits.MemoryMiB
	}
	if uid < 0 && !r.cgroup && os.Geteuid() != 0 {
		// Sharing the provider's uid, the instance is counted with every task of it.
		r.procs += uidTasks(os.Geteuid())
	}
	cmd := p.tools.command(r)
	// Its own process group, so that pause, resume and terminate reach every process in it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if uid >= 0 {
		cmd.SysProcAttr.Credential = &syscall.Credential{Uid: uint32(uid), Gid: uint32(uid), Groups: []uint32{}}
	}
	if p.cg != nil {
		cgdir, err := p.cg.create(id, r.memMiB, r.cpus, r.procs)
		if err != nil {
			return provider.Instance{}, provider.Wrap(provider.Transient, "deploy", id, err)
		}
		defer cgdir.Close()
		cmd.SysProcAttr.UseCgroupFD, cmd.SysProcAttr.CgroupFD = true, int(cgdir.Fd())
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return provider.Instance{}, provider.Wrap(provider.Transient, "deploy", id, err)
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return provider.Instance{}, provider.Wrap(provider.Transient, "deploy", id, err)
	}
	in := &instance{
		uid:    uid,
		img:    prepared,
		cmd:    cmd,
		done:   make(chan struct{}),
		keys:   k,
		signer: signer,
		info: provider.Instance{
			ID:              id,
			Addr:            net.JoinHostPort("127.0.0.1", strconv.Itoa(port)),
			PCRs:            pcrs,
			EVMAddress:      k.evmAddress(),
			SolanaPublicKey: k.solanaAddress(),
			StartedAt:       time.Now().UTC(),
		},
	}
	if err := cmd.Start(); err != nil {
		return provider.Instance{}, provider.Wrap(provider.Transient, "deploy", id, err)
	}
	if ownNet {
		fwd, err := p.forward(cmd.Process.Pid, port)
		if err != nil {
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			_ = cmd.Wait()
			return provider.Instance{}, provider.Wrap(provider.Transient, "deploy", id, err)
		}
		in.fwd = fwd
		in.info.Addr = fwd.addr()
		in.info.NetworkIsolated = true
	}
	var readers sync.WaitGroup
	readers.Add(2)
	go func() { defer readers.Done(); p.capture(in, provider.Stdout, stdout) }()
	go func() { defer readers.Done(); p.capture(in, provider.Stderr, stderr) }()
	go func() {
		readers.Wait() // Wait closes the pipes; read them to the end first
		err := cmd.Wait()
		if in.fwd != nil {
			in.fwd.close()
		}
		in.mu.Lock()
		in.exitErr = err
		in.mu.Unlock()
		close(in.done)
	}()
	p.mu.Lock()
	p.enclaves[id] = in
	p.mu.Unlock()
	return in.info, nil
}

func (p *Provider) forward(pid, port int) (*forwarder, error) {
	ns, err := sandboxNetns(pid, 10*time.Second)
	if err != nil {
		return nil, err
	}
	fwd, err := newForwarder(ns, net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		ns.Close()
		return nil, err
	}
	return fwd, nil
}

// freePort picks a loopback port for the application. Another process could take it before the
// application binds it; the application then fails and Status shows it exited.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// capture turns one output stream into log lines. Lines longer than 64 KiB are split.
func (p *Provider) capture(in *instance, stream provider.Stream, r io.Reader) {
	br := bufio.NewReaderSize(r, 64<<10)
	for {
		line, err := br.ReadSlice('\n')
		if len(line) > 0 {
			text := strings.TrimRight(string(line), "\r\n")
			in.mu.Lock()
			in.nextSeq++
			in.logs = append(in.logs, provider.LogLine{Seq: in.nextSeq, Time: time.Now().UTC(), Stream: stream, Text: text})
			if len(in.logs) > p.maxLogs {
				in.logs = append(in.logs[:0:0], in.logs[len(in.logs)-p.maxLogs:]...)
			}
			in.mu.Unlock()
		}
		if err != nil && !errors.Is(err, bufio.ErrBufferFull) {
			return
		}
	}
}

// signalGroup sends sig to the instance's process group (bubblewrap, the namespace's init and the
// application all share it: the sandbox does not start a new session).
func (in *instance) signalGroup(sig syscall.Signal) error {
	err := syscall.Kill(-in.cmd.Process.Pid, sig)
	if errors.Is(err, syscall.ESRCH) {
		return nil
	}
	return err
}

// Pause stops every process of the instance with SIGSTOP (which cannot be caught or ignored).
// The kernel still accepts connections on the application's listening socket, but nothing answers
// them until Resume.
func (p *Provider) Pause(ctx context.Context, id string) error {
	return p.setPaused(id, "pause", true)
}

// Resume continues the stopped processes with SIGCONT.
func (p *Provider) Resume(ctx context.Context, id string) error {
	return p.setPaused(id, "resume", false)
}

func (p *Provider) setPaused(id, op string, pause bool) error {
	unlock, err := p.lock(id)
	if err != nil {
		return err
	}
	defer unlock()
	in := p.get(id)
	if in == nil || !p.running(id) {
		return provider.Wrap(provider.Permanent, op, id, provider.ErrNotRunning)
	}
	sig := syscall.SIGCONT
	if pause {
		sig = syscall.SIGSTOP
	}
	if err := in.signalGroup(sig); err != nil {
		return provider.Wrap(provider.Transient, op, id, err)
	}
	in.mu.Lock()
	in.paused = pause
	in.mu.Unlock()
	return nil
}

// Terminate kills the process group, waits until every process of the instance is gone, and
// removes the enclave's directory: image tree, keys, everything.
func (p *Provider) Terminate(ctx context.Context, id string) error {
	unlock, err := p.lock(id)
	if err != nil {
		return err
	}
	defer unlock()
	if in := p.get(id); in != nil {
		_ = in.signalGroup(syscall.SIGKILL)
		select {
		case <-in.done:
		case <-time.After(10 * time.Second):
			return provider.Errorf(provider.Transient, "terminate", id, "the instance did not exit within 10s of SIGKILL")
		case <-ctx.Done():
			return provider.Wrap(provider.Transient, "terminate", id, ctx.Err())
		}
		// bubblewrap has been reaped, but the sandbox's init and what it ran may still be dying
		// (the kernel kills a pid namespace's processes when its init dies, not at once).
		if err := in.waitGone(ctx, 10*time.Second); err != nil {
			return provider.Wrap(provider.Transient, "terminate", id, err)
		}
		p.mu.Lock()
		delete(p.enclaves, id)
		p.mu.Unlock()
	}
	if p.cg != nil {
		if err := p.cg.remove(id); err != nil {
			return provider.Wrap(provider.Transient, "terminate", id, err)
		}
	}
	if err := os.RemoveAll(p.enclaveDir(id)); err != nil {
		return provider.Wrap(provider.Transient, "terminate", id, err)
	}
	p.uidMu.Lock()
	delete(p.reservedUIDs, id)
	p.uidMu.Unlock()
	return nil
}

// Status reports the instance's phase.
func (p *Provider) Status(ctx context.Context, id string) (provider.Status, error) {
	if !validID.MatchString(id) {
		return provider.Status{}, provider.Errorf(provider.Permanent, "status", id, "invalid enclave id")
	}
	in := p.get(id)
	if in == nil {
		if _, err := readImage(p.enclaveDir(id)); err == nil {
			return provider.Status{Phase: provider.PhasePrepared}, nil
		}
		return provider.Status{Phase: provider.PhaseAbsent}, nil
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	select {
	case <-in.done:
		st := provider.Status{Phase: provider.PhaseExited}
		var ee *exec.ExitError
		if errors.As(in.exitErr, &ee) {
			st.ExitCode = ee.ExitCode()
			st.Detail = ee.Error()
		}
		return st, nil
	default:
	}
	if in.paused {
		return provider.Status{Phase: provider.PhasePaused, Addr: in.info.Addr}, nil
	}
	return provider.Status{Phase: provider.PhaseRunning, Addr: in.info.Addr}, nil
}

// Logs returns kept application lines after seq `after`.
func (p *Provider) Logs(ctx context.Context, id string, after int64, limit int) ([]provider.LogLine, error) {
	in := p.get(id)
	if in == nil {
		return nil, nil
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	var out []provider.LogLine
	for _, l := range in.logs {
		if l.Seq > after {
			out = append(out, l)
			if limit > 0 && len(out) == limit {
				break
			}
		}
	}
	return out, nil
}

// Attest has the agent sign a document with the instance's PCRs, the nonce and its signing keys.
func (p *Provider) Attest(ctx context.Context, id string, nonce []byte) ([]byte, error) {
	in := p.get(id)
	if in == nil || !p.running(id) {
		return nil, provider.Wrap(provider.Permanent, "attest", id, provider.ErrNotRunning)
	}
	userData, err := in.keys.public().UserData()
	if err != nil {
		return nil, provider.Wrap(provider.Permanent, "attest", id, err)
	}
	signer, err := p.leaf(id, in)
	if err != nil {
		return nil, provider.Wrap(provider.Transient, "attest", id, err)
	}
	doc, err := signer.Sign(attest.Document{PCRs: in.info.PCRs, UserData: userData, Nonce: nonce})
	if err != nil {
		// A nonce over 512 bytes is the usual cause; retrying will not shorten it.
		return nil, provider.Wrap(provider.Permanent, "attest", id, err)
	}
	return doc, nil
}

// leafRenewal is how long before its leaf expires an instance gets a new one. Leaves live three
// hours (attest.LeafLifetime); enclaves run for days.
const leafRenewal = 15 * time.Minute

// leaf returns the instance's signer, renewed from the authority when it is about to expire, so
// that a long-running enclave's documents keep verifying.
func (p *Provider) leaf(id string, in *instance) (*attest.Signer, error) {
	in.mu.Lock()
	defer in.mu.Unlock()
	if p.now().Add(leafRenewal).Before(in.signer.Certificate().NotAfter) {
		return in.signer, nil
	}
	s, err := p.auth.IssueLeaf(id)
	if err != nil {
		return nil, err
	}
	in.signer = s
	return s, nil
}

// Sign has the agent sign with the enclave's EVM or Solana key.
func (p *Provider) Sign(ctx context.Context, id string, req provider.SignRequest) ([]byte, error) {
	in := p.get(id)
	if in == nil || !p.running(id) {
		return nil, provider.Wrap(provider.Permanent, "sign", id, provider.ErrNotRunning)
	}
	sig, err := in.keys.sign(req)
	if err != nil {
		return nil, provider.Wrap(provider.Permanent, "sign", id, err)
	}
	return sig, nil
}
