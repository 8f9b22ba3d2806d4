package local

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
)

// sandboxTools are the programs the local provider runs instances with: bubblewrap for the
// namespaces, and util-linux's prlimit and taskset for the resource limits.
type sandboxTools struct {
	bwrap, prlimit, taskset string
	version                 string // "bubblewrap 0.8.0", measured into PCR1
}

func findTools(bwrap string) (sandboxTools, error) {
	if bwrap == "" {
		bwrap = "bwrap"
	}
	var t sandboxTools
	var err error
	if t.bwrap, err = exec.LookPath(bwrap); err != nil {
		return t, fmt.Errorf("the local enclave provider needs bubblewrap (%q not found; Debian/Ubuntu: apt-get install bubblewrap): %w", bwrap, err)
	}
	out, err := exec.Command(t.bwrap, "--version").Output()
	if err != nil {
		return t, fmt.Errorf("%s --version: %w", t.bwrap, err)
	}
	t.version = strings.TrimSpace(string(out))
	for _, p := range []struct {
		dst  *string
		name string
	}{{&t.prlimit, "prlimit"}, {&t.taskset, "taskset"}} {
		if *p.dst, err = exec.LookPath(p.name); err != nil {
			return t, fmt.Errorf("the local enclave provider needs %s from util-linux for resource limits: %w", p.name, err)
		}
	}
	return t, nil
}

// probe runs a trivial sandbox, so that a host where bubblewrap cannot create namespaces (no
// unprivileged user namespaces, a seccomp profile that forbids them) fails at start with
// bubblewrap's own words rather than at the first deployment.
func (t sandboxTools) probe(dir string) error {
	args := []string{"--unshare-user", "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--die-with-parent",
		"--ro-bind", dir, "/", "--", "/probe"}
	out, err := exec.Command(t.bwrap, args...).CombinedOutput()
	// The probe binary does not exist; bubblewrap reaching execvp is success enough.
	if err != nil && !strings.Contains(string(out), "execvp") {
		return fmt.Errorf("bubblewrap cannot create an enclave sandbox here: %v: %s", err, strings.TrimSpace(string(out)))
	}
	return nil
}

// run is how one instance runs: its limits and who it is on the host.
type run struct {
	rootfs  string // the image's tree
	argv    []string
	env     []string
	workDir string
	cpus    int
	memMiB  int
	procs   int
	tmp     int64
	uid     int  // host uid of the sandbox; -1: the provider's own
	cgroup  bool // in a cgroup v2 of its own, which holds memory, pids and CPU
	ownNet  bool
}

// command builds the process tree of one instance:
//
//	taskset -c 0-(cpus-1) prlimit --data=… --nproc=… -- bwrap [namespaces, mounts] -- argv…
//
// What it isolates (docs/enclaves.md says the same): new user, pid, ipc, uts and mount namespaces
// (and cgroup when the kernel allows); with ownNet a network namespace with only loopback, whose
// one port the provider forwards (forward.go); the image's tree as a read-only root; a private
// /proc, minimal /dev and a size-capped tmpfs /tmp; no capabilities; a uid of its own; the
// environment only as given. What it does not: without ownNet the network is the host's.
//
// Limits: in a cgroup (r.cgroup) memory.max, pids.max and cpu.max hold for the instance as a
// whole. Without one the fallback is rlimits: RLIMIT_DATA per process for memory, RLIMIT_NPROC
// for tasks (per enclave, because each runs as a host uid of its own when the provider is root)
// and CPU affinity (taskset) for CPU.
func (t sandboxTools) command(r run) *exec.Cmd {
	var args []string
	if r.cpus > 0 && r.cpus < runtime.NumCPU() {
		args = append(args, t.taskset, "-c", fmt.Sprintf("0-%d", r.cpus-1))
	}
	args = append(args, t.prlimit)
	if r.memMiB > 0 && !r.cgroup {
		args = append(args, "--data="+strconv.FormatInt(int64(r.memMiB)<<20, 10))
	}
	if r.procs > 0 && !r.cgroup {
		// Checked against the tasks of the sandbox's uid; for root's uid the kernel would not
		// check at all, hence the uid of its own.
		args = append(args, "--nproc="+strconv.Itoa(r.procs))
	}
	args = append(args, "--core=0", "--",
		t.bwrap,
		"--unshare-user", "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try",
		"--uid", "1000", "--gid", "1000",
	)
	if r.ownNet {
		args = append(args, "--unshare-net")
	}
	args = append(args,
		"--hostname", "enclave",
		// The instance dies with the provider: after a worker restart, Deploy starts it again and
		// there is never a second, orphaned copy.
		"--die-with-parent",
		"--ro-bind", r.rootfs, "/",
		"--proc", "/proc",
		"--dev", "/dev",
	)
	if r.tmp > 0 {
		args = append(args, "--size", strconv.FormatInt(r.tmp, 10))
	}
	args = append(args,
		"--tmpfs", "/tmp",
		"--chdir", r.workDir,
		"--clearenv",
	)
	for _, kv := range r.env {
		k, v, _ := strings.Cut(kv, "=")
		args = append(args, "--setenv", k, v)
	}
	args = append(args, "--")
	args = append(args, r.argv...)
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH")}
	cmd.Dir = "/"
	return cmd
}
