package local

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// cgroupRoot is the mount point of the unified (v2) hierarchy.
const cgroupRoot = "/sys/fs/cgroup"

// controllers are what an instance's cgroup must have.
var controllers = []string{"memory", "pids", "cpu"}

// cgroups places instances in cgroup v2 groups of their own under base, whose children get the
// memory, pids and cpu controllers.
type cgroups struct{ base string }

// detectCgroups finds where instances can have cgroups. setting is enclaves.limits.cgroup:
// "off", "auto" (a child of the provider's own cgroup, which works when that cgroup may enable
// the controllers for its children: the root of a cgroup namespace, typically a container's), or
// the path of a cgroup delegated to the provider (systemd's Delegate=yes, with the provider's
// processes in another group). nil with a reason means the rlimit fallback; an explicit path that
// does not work is an error.
func detectCgroups(setting string) (*cgroups, string, error) {
	switch setting {
	case "off":
		return nil, "cgroups are off (enclaves.limits.cgroup)", nil
	case "", "auto":
		var st unix.Statfs_t
		if err := unix.Statfs(cgroupRoot, &st); err != nil || st.Type != unix.CGROUP2_SUPER_MAGIC {
			return nil, "no cgroup v2 hierarchy at " + cgroupRoot, nil
		}
		own, err := ownCgroup()
		if err != nil {
			return nil, err.Error(), nil
		}
		c, err := delegate(filepath.Join(cgroupRoot, own), "conduit-enclaves")
		if err != nil {
			return nil, err.Error(), nil
		}
		return c, "", nil
	default:
		var st unix.Statfs_t
		if err := unix.Statfs(setting, &st); err != nil || st.Type != unix.CGROUP2_SUPER_MAGIC {
			return nil, "", fmt.Errorf("enclaves.limits.cgroup %s is not a cgroup v2 directory", setting)
		}
		c, err := delegate(setting, "")
		if err != nil {
			return nil, "", fmt.Errorf("enclaves.limits.cgroup: %w", err)
		}
		return c, "", nil
	}
}

// ownCgroup is this process's cgroup v2 path ("0::/path" in /proc/self/cgroup).
func ownCgroup() (string, error) {
	f, err := os.Open("/proc/self/cgroup")
	if err != nil {
		return "", err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if p, ok := strings.CutPrefix(sc.Text(), "0::"); ok {
			return p, nil
		}
	}
	return "", errors.New("this process has no cgroup v2 path")
}

// delegate enables the controllers for dir's children (and, with sub, makes dir/sub and enables
// them there too) and checks that a child gets them.
func delegate(dir, sub string) (*cgroups, error) {
	if err := enable(dir); err != nil {
		return nil, err
	}
	if sub != "" {
		dir = filepath.Join(dir, sub)
		if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
			return nil, fmt.Errorf("cannot make the cgroup %s: %w", dir, err)
		}
		if err := enable(dir); err != nil {
			return nil, err
		}
	}
	return &cgroups{base: dir}, nil
}

// enable writes +memory +pids +cpu to dir's cgroup.subtree_control. The kernel refuses it for a
// cgroup that holds processes (other than a namespace's root), which is the usual reason.
func enable(dir string) error {
	have, err := os.ReadFile(filepath.Join(dir, "cgroup.controllers"))
	if err != nil {
		return fmt.Errorf("cannot read the cgroup %s: %w", dir, err)
	}
	for _, c := range controllers {
		if !strings.Contains(" "+strings.TrimSpace(string(have))+" ", " "+c+" ") {
			return fmt.Errorf("the cgroup %s does not have the %s controller", dir, c)
		}
	}
	on, _ := os.ReadFile(filepath.Join(dir, "cgroup.subtree_control"))
	var want []string
	for _, c := range controllers {
		if !strings.Contains(" "+strings.TrimSpace(string(on))+" ", " "+c+" ") {
			want = append(want, "+"+c)
		}
	}
	if len(want) == 0 {
		return nil
	}
	if err := os.WriteFile(filepath.Join(dir, "cgroup.subtree_control"), []byte(strings.Join(want, " ")), 0); err != nil {
		return fmt.Errorf("cannot enable %v for the children of %s (a cgroup with processes cannot; delegate one to the worker): %w", want, dir, err)
	}
	return nil
}

// create makes the instance's cgroup with its limits and opens it, for clone3's
// CLONE_INTO_CGROUP: the sandbox starts inside it, never outside for a moment.
func (c *cgroups) create(id string, memMiB, cpus, procs int) (*os.File, error) {
	dir := filepath.Join(c.base, "enclave-"+id)
	c.remove(id) // left by a provider that died
	if err := os.Mkdir(dir, 0o755); err != nil {
		return nil, err
	}
	set := map[string]string{"pids.max": strconv.Itoa(procs)}
	if memMiB > 0 {
		set["memory.max"] = strconv.FormatInt(int64(memMiB)<<20, 10)
		set["memory.swap.max"] = "0"
	}
	if cpus > 0 {
		set["cpu.max"] = fmt.Sprintf("%d 100000", cpus*100000)
	}
	for k, v := range set {
		if err := os.WriteFile(filepath.Join(dir, k), []byte(v), 0); err != nil && k != "memory.swap.max" {
			_ = os.Remove(dir)
			return nil, fmt.Errorf("cgroup %s: %w", k, err)
		}
	}
	f, err := os.Open(dir)
	if err != nil {
		_ = os.Remove(dir)
		return nil, err
	}
	return f, nil
}

// remove kills whatever is left in the instance's cgroup and removes it, waiting a bounded time
// for the processes to go.
func (c *cgroups) remove(id string) error {
	dir := filepath.Join(c.base, "enclave-"+id)
	if _, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	_ = os.WriteFile(filepath.Join(dir, "cgroup.kill"), []byte("1"), 0)
	deadline := time.Now().Add(10 * time.Second)
	for {
		err := os.Remove(dir)
		if err == nil || errors.Is(err, os.ErrNotExist) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the cgroup %s is still busy: %w", dir, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
