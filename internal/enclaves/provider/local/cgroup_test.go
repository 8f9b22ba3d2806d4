package local

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The cgroup files are plain files: on a directory that plays a delegated cgroup v2 (this
// machine has cgroup v1, so the real hierarchy cannot be used here) the provider enables the
// controllers for the children and writes each instance's limits.
func TestCgroupFiles(t *testing.T) {
	base := t.TempDir()
	write := func(p, s string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	read := func(p string) string {
		t.Helper()
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		return strings.TrimSpace(string(data))
	}
	// A cgroup without the pids controller cannot be used.
	write(filepath.Join(base, "cgroup.controllers"), "cpu memory io")
	if _, err := delegate(base, ""); err == nil || !strings.Contains(err.Error(), "pids") {
		t.Fatalf("no pids controller: %v", err)
	}
	write(filepath.Join(base, "cgroup.controllers"), "cpuset cpu io memory pids")
	write(filepath.Join(base, "conduit-enclaves", "cgroup.controllers"), "cpu memory pids")
	c, err := delegate(base, "conduit-enclaves")
	if err != nil {
		t.Fatal(err)
	}
	if got := read(filepath.Join(base, "cgroup.subtree_control")); got != "+memory +pids +cpu" {
		t.Errorf("the parent's subtree_control: %q", got)
	}
	f, err := c.create("enc_1", 128, 2, 64)
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	dir := filepath.Join(base, "conduit-enclaves", "enclave-enc_1")
	for file, want := range map[string]string{"memory.max": "134217728", "memory.swap.max": "0", "pids.max": "64", "cpu.max": "200000 100000"} {
		if got := read(filepath.Join(dir, file)); got != want {
			t.Errorf("%s = %q, want %q", file, got, want)
		}
	}
}

func TestCgroupsOffOrUnavailable(t *testing.T) {
	if c, why, err := detectCgroups("off"); c != nil || err != nil || why == "" {
		t.Errorf("off: %v %q %v", c, why, err)
	}
	// A path that is not a cgroup v2 directory is a configuration error, not a fallback.
	if _, _, err := detectCgroups(t.TempDir()); err == nil {
		t.Error("a plain directory was taken for a cgroup")
	}
	// auto never fails: it says why it falls back, or finds a cgroup.
	if c, why, err := detectCgroups("auto"); err != nil || (c == nil) == (why == "") {
		t.Errorf("auto: %v %q %v", c, why, err)
	}
}
