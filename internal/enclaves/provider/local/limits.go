package local

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"io/fs"
	"os"
	"path/filepath"
	"sync"

	"conduit/internal/enclaves/provider/oci"
)

// Limits bound what enclaves may take of the host: the disk their images unpack to (per image
// and per account) and, while they run, /tmp, processes, memory and CPU. docs/enclaves.md
// ("Limits") lists each with its setting. Zero fields take DefaultLimits' values.
type Limits struct {
	// Image bounds one image's unpacking (layer, image, files, path depth).
	Image oci.Limits
	// AccountBytes bounds the unpacked images of all of an account's enclaves on this host
	// (enclaves.limits.account_bytes).
	AccountBytes int64
	// TmpBytes is the size of the tmpfs at /tmp (enclaves.limits.tmp_bytes): host memory.
	TmpBytes int64
	// Processes bounds the tasks (processes and threads) of one instance
	// (enclaves.limits.processes).
	Processes int
	// MemoryMiB and CPUs apply when the enclave's providerConfig names none
	// (enclaves.limits.memory_mib, enclaves.limits.cpus).
	MemoryMiB int
	CPUs      int
	// Cgroup is where instances get a cgroup v2 of their own: "auto" (the provider's own cgroup
	// when it can delegate the memory, pids and cpu controllers), "off", or a delegated cgroup
	// directory (enclaves.limits.cgroup). Without one, the rlimit fallback applies.
	Cgroup string
	// UIDBase and UIDCount are the host uids instances run as when the provider is root, one
	// per enclave (enclaves.limits.sandbox_uid_base, enclaves.limits.sandbox_uids): a uid of its
	// own is what makes the process limit per enclave, and root's processes would be exempt.
	UIDBase  int
	UIDCount int
}

// DefaultLimits are the limits a deployment has unless configured.
func DefaultLimits() Limits {
	return Limits{
		Image:        oci.DefaultLimits(),
		AccountBytes: 4 << 30,
		TmpBytes:     64 << 20,
		Processes:    256,
		MemoryMiB:    256,
		CPUs:         1,
		Cgroup:       "auto",
		UIDBase:      1_500_000_000,
		UIDCount:     1 << 20,
	}
}

// WithDefaults fills zero fields from DefaultLimits.
func (l Limits) WithDefaults() Limits {
	d := DefaultLimits()
	l.Image = l.Image.WithDefaults()
	if l.AccountBytes <= 0 {
		l.AccountBytes = d.AccountBytes
	}
	if l.TmpBytes <= 0 {
		l.TmpBytes = d.TmpBytes
	}
	if l.Processes <= 0 {
		l.Processes = d.Processes
	}
	if l.MemoryMiB <= 0 {
		l.MemoryMiB = d.MemoryMiB
	}
	if l.CPUs <= 0 {
		l.CPUs = d.CPUs
	}
	if l.Cgroup == "" {
		l.Cgroup = d.Cgroup
	}
	if l.UIDBase <= 0 {
		l.UIDBase = d.UIDBase
	}
	if l.UIDCount <= 0 {
		l.UIDCount = d.UIDCount
	}
	return l
}

// ownerFile records, beside an enclave's tree, whose it is, what it takes and the uid it runs
// as; Usage adds them up.
const ownerFile = "owner.json"

type owner struct {
	Account string `json:"account"`
	Bytes   int64  `json:"bytes"`
	// UID is the host uid the instance runs as and owns its tree; -1 the provider's own.
	UID int `json:"uid"`
}

func readOwner(dir string) (owner, error) {
	var o owner
	data, err := os.ReadFile(filepath.Join(dir, ownerFile))
	if err != nil {
		return o, err
	}
	return o, json.Unmarshal(data, &o)
}

// owners reads every enclave's owner record (except skip's).
func (p *Provider) owners(skip string) (map[string]owner, error) {
	ents, err := os.ReadDir(p.dir)
	if err != nil {
		return nil, err
	}
	out := map[string]owner{}
	for _, e := range ents {
		if !e.IsDir() || e.Name() == skip || !validID.MatchString(e.Name()) {
			continue
		}
		o, err := readOwner(filepath.Join(p.dir, e.Name()))
		if errors.Is(err, fs.ErrNotExist) {
			continue // being prepared, or from before owners were recorded
		}
		if err != nil {
			return nil, err
		}
		out[e.Name()] = o
	}
	return out, nil
}

// Usage is the bytes the account's enclaves take on this host's disk: their unpacked images,
// as counted when they were unpacked (the trees are read-only to the enclaves, so that is what
// they still take). The account quota (enclaves.limits.account_bytes) is checked against it.
func (p *Provider) Usage(ctx context.Context, account string) (int64, error) {
	all, err := p.owners("")
	if err != nil {
		return 0, err
	}
	var n int64
	for _, o := range all {
		if o.Account == account {
			n += o.Bytes
		}
	}
	return n, nil
}

// accountLock serialises the unpacking of one account's images, so that two concurrent
// deployments cannot both fit in the same remaining quota.
func (p *Provider) accountLock(account string) func() {
	p.idLocksMu.Lock()
	l, ok := p.accountLocks[account]
	if !ok {
		l = &sync.Mutex{}
		p.accountLocks[account] = l
	}
	p.idLocksMu.Unlock()
	l.Lock()
	return l.Unlock
}

// sandboxUID picks the host uid for enclave id: -1 (the provider's own) unless the provider is
// root; otherwise the one already recorded for it, or the lowest of the range no other enclave
// has. Callers hold the id's lock; uidMu keeps two ids from taking the same uid.
func (p *Provider) sandboxUID(id string) (int, error) {
	if !p.uids {
		return -1, nil
	}
	if err := os.Chmod(p.enclaveDir(id), 0o711); err != nil {
		return 0, err
	}
	if o, err := readOwner(p.enclaveDir(id)); err == nil && o.UID >= p.limits.UIDBase {
		return o.UID, nil
	}
	p.uidMu.Lock()
	defer p.uidMu.Unlock()
	if u, ok := p.reservedUIDs[id]; ok {
		return u, nil
	}
	all, err := p.owners(id)
	if err != nil {
		return 0, err
	}
	taken := map[int]bool{}
	for _, o := range all {
		taken[o.UID] = true
	}
	for _, u := range p.reservedUIDs {
		taken[u] = true
	}
	// Another provider on this host (another worker, another test
	// process) knows nothing of these uids, and an instance's processes
	// are found and ended by uid: the search starts at a point of the
	// range derived from this provider's directory, so providers with
	// directories of their own do not hand out the same uids.
	h := fnv.New32a()
	_, _ = h.Write([]byte(p.dir))
	start := int(h.Sum32() % uint32(p.limits.UIDCount))
	for i := range p.limits.UIDCount {
		u := p.limits.UIDBase + (start+i)%p.limits.UIDCount
		if !taken[u] {
			p.reservedUIDs[id] = u
			return u, nil
		}
	}
	return 0, fmt.Errorf("every sandbox uid (%d from %d, enclaves.limits.sandbox_uids) is taken", p.limits.UIDCount, p.limits.UIDBase)
}

// quotaBudget is what account may still unpack: the quota less what its other enclaves take.
func (p *Provider) quotaBudget(account, id string) (int64, int64, error) {
	all, err := p.owners(id)
	if err != nil {
		return 0, 0, err
	}
	var used int64
	for _, o := range all {
		if o.Account == account {
			used += o.Bytes
		}
	}
	return p.limits.AccountBytes - used, used, nil
}

// sandboxUIDsUsable says whether instances can run as uids of their own: the provider must be
// root, and the uid must reach the image's tree, bubblewrap binding it by path — every directory
// above dir searchable by others. dir itself becomes 0711 (searchable, not listable); what is in
// it stays the provider's (keys 0600).
func sandboxUIDsUsable(dir string) (bool, string) {
	if os.Geteuid() != 0 {
		return false, "the provider is not root: instances run as its uid"
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return false, err.Error()
	}
	for d := filepath.Dir(abs); ; d = filepath.Dir(d) {
		info, err := os.Stat(d)
		if err != nil {
			return false, err.Error()
		}
		if info.Mode().Perm()&0o001 == 0 {
			return false, fmt.Sprintf("%s is not searchable by others (mode %v), so an instance's own uid could not reach its image: instances run as root's uid, without a process limit", d, info.Mode().Perm())
		}
		if d == filepath.Dir(d) {
			break
		}
	}
	if err := os.Chmod(abs, 0o711); err != nil {
		return false, err.Error()
	}
	return true, ""
}
