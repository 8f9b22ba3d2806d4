// Package uitest installs the dashboard's locked npm dependencies for the
// tests that need them (the build check, axe-core for the browser tests),
// once, even when test packages run in parallel.
package uitest

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"syscall"
	"testing"
)

// Dir is the dashboard's source folder, ui/.
func Dir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..")
}

// Deps makes sure ui/node_modules holds what package-lock.json locks
// (npm ci when it does not) and returns ui/. Test binaries that call it at
// once take turns under a file lock. It fails the test when npm is missing.
func Deps(t testing.TB) string {
	t.Helper()
	dir := Dir()
	lock, err := os.OpenFile(filepath.Join(os.TempDir(), "conduit-ui-npm.lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	defer syscall.Flock(int(lock.Fd()), syscall.LOCK_UN)
	if current(dir) {
		return dir
	}
	if _, err := exec.LookPath("npm"); err != nil {
		t.Fatalf("the dashboard's tests need Node.js and npm (Debian: apt-get install nodejs npm): %v", err)
	}
	cmd := exec.Command("npm", "ci", "--no-audit", "--no-fund", "--silent")
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("npm ci in %s: %v\n%s", dir, err, out)
	}
	return dir
}

// current says node_modules was installed from the present lock file: npm
// writes node_modules/.package-lock.json on every install.
func current(dir string) bool {
	installed, err := os.Stat(filepath.Join(dir, "node_modules", ".package-lock.json"))
	if err != nil {
		return false
	}
	lock, err := os.Stat(filepath.Join(dir, "package-lock.json"))
	return err == nil && !installed.ModTime().Before(lock.ModTime())
}

// NPM runs npm with args in ui/, failing the test on an error.
func NPM(t testing.TB, args ...string) {
	t.Helper()
	cmd := exec.Command("npm", args...)
	cmd.Dir = Dir()
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("npm %v: %v\n%s", args, err, out)
	}
}
