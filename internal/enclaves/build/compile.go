package build

import (
	"context"
	"errors"
	"fmt"
	"go/build"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"

	"golang.org/x/mod/modfile"

	"conduit/internal/enclaves/provider"
)

// Target platform of every build (the local provider runs linux/amd64
// images, and so does a Nitro enclave on x86 hosts).
const (
	GOOS   = "linux"
	GOARCH = "amd64"
)

// mainPackage finds the program to build: the repository's root when it
// is a main package, else the only main package directly under cmd/. It
// answers the package's directory (relative, "." for the root) and the
// binary's name (the directory's name; the repository's for the root).
func mainPackage(src string) (string, string, error) {
	ctxt := build.Default
	ctxt.GOOS, ctxt.GOARCH, ctxt.CgoEnabled = GOOS, GOARCH, false
	isMain := func(dir string) bool {
		p, err := ctxt.ImportDir(dir, 0)
		return err == nil && p.Name == "main"
	}
	if isMain(src) {
		return ".", "", nil
	}
	entries, _ := os.ReadDir(filepath.Join(src, "cmd"))
	var found []string
	for _, e := range entries {
		if e.IsDir() && isMain(filepath.Join(src, "cmd", e.Name())) {
			found = append(found, e.Name())
		}
	}
	sort.Strings(found)
	switch len(found) {
	case 1:
		return "cmd/" + found[0], found[0], nil
	case 0:
		return "", "", errors.New("no main package: the repository's root is not a Go main package (linux/amd64, no cgo), nor is there one under cmd/")
	}
	return "", "", fmt.Errorf("more than one main package under cmd/ (%s) and none at the root: keep one", strings.Join(found, ", "))
}

// localReplaces refuses a go.mod anywhere in the checkout whose replace
// directives name a directory outside it: the go command would compile
// (and quote in its errors) files of the worker's host.
func localReplaces(src string) error {
	return filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || d.Name() != "go.mod" {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, path)
		f, err := modfile.Parse(rel, data, nil)
		if err != nil {
			return nil // the go command reports it, in the build logs
		}
		for _, r := range f.Replace {
			if r.New.Version != "" {
				continue // a module, not a directory
			}
			to := r.New.Path
			if !filepath.IsAbs(to) {
				to = filepath.Join(filepath.Dir(path), to)
			}
			if in, err := filepath.Rel(src, to); err != nil || in == ".." || strings.HasPrefix(in, ".."+string(filepath.Separator)) {
				return fmt.Errorf("%s replaces %s with %s, a directory outside the repository", rel, r.Old.Path, r.New.Path)
			}
		}
		return nil
	})
}

// goEnv is the go command's environment: the worker's PATH, HOME, TMPDIR,
// proxies and GO* settings (GOPROXY, GOFLAGS, caches, …), nothing else of
// it, and the build's own settings over them.
func goEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch {
		case k == "PATH" || k == "HOME" || k == "TMPDIR" || strings.HasPrefix(k, "GO"),
			strings.EqualFold(k, "HTTP_PROXY"), strings.EqualFold(k, "HTTPS_PROXY"), strings.EqualFold(k, "NO_PROXY"):
			env = append(env, kv)
		}
	}
	// GOTOOLCHAIN=local: a go.mod asking for another toolchain is an
	// error, not a download; GOWORK=off: a go.work cannot reach outside
	// the checkout.
	return append(env, "CGO_ENABLED=0", "GOOS="+GOOS, "GOARCH="+GOARCH, "GOTOOLCHAIN=local", "GOWORK=off")
}

// networkFailure recognises output of a go command that could not fetch
// modules (a proxy or VCS host down): worth retrying, unlike a compile
// error.
var networkFailure = regexp.MustCompile(`(?i)dial tcp|i/o timeout|connection refused|connection reset|no such host|TLS handshake timeout|server misbehaving|502 Bad Gateway|503 Service Unavailable|504 Gateway Timeout|429 Too Many Requests|unexpected EOF`)

// compile runs go build for the package and answers the binary's path.
func (b *Builder) compile(ctx context.Context, goBin, src, pkg, dir string, log Log, id string) (string, error) {
	out := filepath.Join(dir, "out", "app")
	args := []string{"build", "-trimpath", "-buildvcs=false", "-o", out, "./" + pkg}
	log("build", fmt.Sprintf("go build -trimpath -buildvcs=false ./%s (CGO_ENABLED=0 GOOS=%s GOARCH=%s)", pkg, GOOS, GOARCH))
	if v, err := exec.CommandContext(ctx, goBin, "version").Output(); err == nil {
		log("build", strings.TrimSpace(string(v)))
	}
	cmd := exec.CommandContext(ctx, goBin, args...)
	cmd.Dir = src
	cmd.Env = goEnv()
	cmd.WaitDelay = 5 * time.Second
	stdout := &lineWriter{stream: "stdout", log: log}
	stderr := &lineWriter{stream: "stderr", log: log}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	err := cmd.Run()
	_ = stdout.Close()
	_ = stderr.Close()
	if err == nil {
		return out, nil
	}
	if ctx.Err() != nil {
		return "", provider.Errorf(provider.Transient, "build", id, "go build was interrupted: %v", ctx.Err())
	}
	tail := strings.Join(stderr.tail, "\n")
	var exit *exec.ExitError
	if !errors.As(err, &exit) {
		return "", provider.Errorf(provider.Transient, "build", id, "go build could not run: %v", err)
	}
	if networkFailure.MatchString(tail) {
		return "", provider.Errorf(provider.Transient, "build", id, "go build could not fetch modules; it is retried:\n%s", tail)
	}
	return "", provider.Errorf(provider.Permanent, "build", id, "go build failed:\n%s", tail)
}
