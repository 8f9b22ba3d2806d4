package frontend_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
)

// runbook is the SRE runbook of docs/operations.md as written: the
// variables it exports and the commands it shows, in order.
type runbook struct {
	vars     []string // CONDUIT_… names, in the order exported
	commands []string // "conduit enclave stuck -for 10m", …
}

func readRunbook(t *testing.T, title string) runbook {
	t.Helper()
	b, err := os.ReadFile("../docs/operations.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	start := strings.Index(doc, "## "+title)
	if start < 0 {
		t.Fatalf("docs/operations.md has no %q", title)
	}
	section := doc[start+3:]
	if end := strings.Index(section, "\n## "); end >= 0 {
		section = section[:end]
	}
	var rb runbook
	for _, m := range regexp.MustCompile(`(?m)^export (CONDUIT_[A-Z_]+)=`).FindAllStringSubmatch(section, -1) {
		rb.vars = append(rb.vars, m[1])
	}
	for _, m := range regexp.MustCompile(`(?m)^\$ (conduit .+)$`).FindAllStringSubmatch(section, -1) {
		rb.commands = append(rb.commands, strings.TrimSpace(m[1]))
	}
	if len(rb.vars) == 0 || len(rb.commands) == 0 {
		t.Fatalf("the runbook %q shows no variables or no commands", title)
	}
	return rb
}

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

// productionBinary builds cmd/conduit once for the package's tests.
func productionBinary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "conduit-runbook-")
		if err != nil {
			buildErr = err
			return
		}
		binPath = filepath.Join(dir, "conduit")
		cmd := exec.Command("go", "build", "-o", binPath, "./cmd/conduit")
		cmd.Dir = ".."
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = err
			t.Logf("%s", out)
		}
	})
	if buildErr != nil {
		t.Fatalf("building the production binary: %v", buildErr)
	}
	return binPath
}

// run runs one of the runbook's commands exactly as written (its
// placeholder enclave id replaced by id) with exactly the variables the
// runbook exports, their values from the test platform; the command's
// output and error are returned.
func (rb runbook) run(t *testing.T, command, id string) (string, error) {
	t.Helper()
	values := map[string]string{
		"CONDUIT_TEMPORAL_ADDRESS":    env.Config.Temporal.Address,
		"CONDUIT_TEMPORAL_NAMESPACE":  env.Config.Temporal.Namespace,
		"CONDUIT_TEMPORAL_CODEC_KEYS": env.Config.Temporal.CodecKeys,
	}
	environ := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME")}
	for _, v := range rb.vars {
		val, ok := values[v]
		if !ok {
			t.Fatalf("the runbook exports %s, which this test does not know how to set", v)
		}
		environ = append(environ, v+"="+val)
	}
	args := strings.Fields(strings.ReplaceAll(command, "enc_3fa…", id))
	cmd := exec.Command(productionBinary(t), args[1:]...)
	cmd.Env = environ
	out, err := cmd.CombinedOutput()
	return string(out), err
}
