// Package apt installs missing Debian packages for the dev command, when
// it may: as root, on Linux, with apt-get present.
package apt

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"runtime"
	"strings"
)

// ErrCannot says installing is not possible here (not root, not Linux, no
// apt-get); the caller tells the user what to install.
var ErrCannot = errors.New("packages can only be installed as root on a Debian-like system")

// Install apt-get installs pkgs non-interactively.
func Install(log *slog.Logger, pkgs ...string) error {
	if os.Geteuid() != 0 || runtime.GOOS != "linux" {
		return ErrCannot
	}
	if _, err := exec.LookPath("apt-get"); err != nil {
		return ErrCannot
	}
	log.Warn("installing missing Debian packages (one time)", "packages", strings.Join(pkgs, " "))
	for _, args := range [][]string{{"update"}, append([]string{"install", "-y", "--no-install-recommends"}, pkgs...)} {
		cmd := exec.Command("apt-get", args...)
		cmd.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("apt-get %s failed: %s", args[0], LastLine(out, err))
		}
	}
	return nil
}

// LastLine is the last non-empty line of a command's output (its error
// when there is none): usually the one that says what went wrong.
func LastLine(out []byte, err error) string {
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if l := strings.TrimSpace(lines[i]); l != "" {
			return l
		}
	}
	if err != nil {
		return err.Error()
	}
	return "no output"
}
