// Package build turns a github source into an OCI image the way ko does
// for Go programs: it clones the selected branch (go-git, shallow, one
// branch), compiles the repository's main package with the worker's go
// toolchain (CGO_ENABLED=0, linux/amd64, -trimpath), layers the binary
// onto an empty base and pushes the image to the build registry
// (go-containerregistry). No Docker, no daemon. docs/enclaves.md,
// "Building from github", is the user-facing description.
//
// Errors are *provider.Error with op "build": Permanent when retrying
// cannot help (no such repository or branch, credentials refused, a
// program that does not compile), Transient when it may (the git host or
// the registry down, answering 5xx or 429, a timeout).
package build

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"

	"github.com/google/go-containerregistry/pkg/authn"

	"conduit/internal/enclaves/provider"
	"conduit/internal/enclaves/provider/oci"
)

// DefaultGitBaseURL is where repositories are cloned from unless
// configured otherwise (enclaves.git_base_url).
const DefaultGitBaseURL = "https://github.com"

// Options configure a Builder.
type Options struct {
	// GitBaseURL is the git host: a repository "owner/name" is cloned from
	// GitBaseURL/owner/name.git (default https://github.com).
	GitBaseURL string
	// Registry is the repository prefix images are pushed under
	// ("host[:port]/path"); an image is Registry/owner/name:commit.
	Registry string
	// RegistryAuth pushes (nil: anonymous).
	RegistryAuth authn.Authenticator
	// WorkDir holds the temporary checkouts (empty: the system's).
	WorkDir string
	// Go is the go command (empty: "go" from PATH).
	Go string
	// Limits bound the checkout (files, path depth, a file's size) and the
	// image built (layer and image bytes); SourceBytes the repository's
	// objects fetched and the checkout's bytes (0: 256 MiB).
	Limits      oci.Limits
	SourceBytes int64
}

// Builder builds github sources into images. It keeps no state between
// builds; it is safe for concurrent use.
type Builder struct{ o Options }

// New makes a Builder. A missing go toolchain is not an error here (a
// worker that runs only registry-sourced enclaves does not need one); each
// build reports it.
func New(o Options) (*Builder, error) {
	if o.GitBaseURL == "" {
		o.GitBaseURL = DefaultGitBaseURL
	}
	o.GitBaseURL = strings.TrimRight(o.GitBaseURL, "/")
	if !strings.HasPrefix(o.GitBaseURL, "https://") && !strings.HasPrefix(o.GitBaseURL, "http://") {
		return nil, fmt.Errorf("build: the git base URL %q is not an http(s) URL", o.GitBaseURL)
	}
	o.Registry = strings.TrimRight(o.Registry, "/")
	if o.Registry == "" {
		return nil, errors.New("build: no registry to push images to")
	}
	if o.Go == "" {
		o.Go = "go"
	}
	if o.RegistryAuth == nil {
		o.RegistryAuth = authn.Anonymous
	}
	o.Limits = o.Limits.WithDefaults()
	if o.SourceBytes <= 0 {
		o.SourceBytes = 256 << 20
	}
	return &Builder{o: o}, nil
}

// Request is one build.
type Request struct {
	// ID is the enclave the build is for (errors name it).
	ID string
	// Repo is "owner/name"; Branch a branch name.
	Repo, Branch string
	// Username and Token authenticate to the git host (both optional; a
	// token without a username is sent as "x-access-token").
	Username, Token string
}

// Result is a pushed image.
type Result struct {
	// Commit is the commit built.
	Commit string `json:"commit"`
	// Image is the pushed image by digest (registry/owner/name@sha256:…),
	// Tag the same image by its tag (registry/owner/name:commit).
	Image string `json:"image"`
	Tag   string `json:"tag"`
	// Binary is the program's path inside the image (its entrypoint);
	// Package the directory of the main package in the repository.
	Binary  string `json:"binary"`
	Package string `json:"package"`
}

// Log receives the build's output line by line; stream is "git",
// "stdout", "stderr" or "build" (the builder's own steps).
type Log func(stream, line string)

var (
	repoRE = regexp.MustCompile(`^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$`)
)

// ValidRepo says why repo is not "owner/name" ("" when it is).
func ValidRepo(repo string) string {
	if !repoRE.MatchString(repo) {
		return `must be "owner/name" (letters, digits, ".", "-", "_")`
	}
	for _, p := range strings.Split(repo, "/") {
		if p == "." || p == ".." || strings.HasPrefix(p, ".") {
			return "owner and name may not start with \".\""
		}
	}
	return ""
}

// ValidBranch says why b is not a usable branch name ("" when it is): the
// rules of git check-ref-format, a little stricter.
func ValidBranch(b string) string {
	switch {
	case b == "":
		return "is empty"
	case len(b) > 255:
		return "is longer than 255 characters"
	case strings.HasPrefix(b, "-") || strings.HasPrefix(b, "/") || strings.HasSuffix(b, "/") || strings.HasSuffix(b, "."):
		return `may not start with "-" or "/", nor end with "/" or "."`
	case strings.Contains(b, "..") || strings.Contains(b, "//") || strings.Contains(b, "@{") || strings.HasSuffix(b, ".lock") || b == "@":
		return `may not contain "..", "//" or "@{", nor end with ".lock"`
	}
	for _, r := range b {
		if r <= ' ' || r == 0x7f || strings.ContainsRune(`~^:?*[\`, r) {
			return "may not contain spaces, control characters or any of ~^:?*[\\"
		}
	}
	for _, p := range strings.Split(b, "/") {
		if strings.HasPrefix(p, ".") {
			return `no part may start with "."`
		}
	}
	return ""
}

// Build clones, compiles, layers and pushes. Building the same commit
// again pushes the same image (same digest): the binary is reproducible
// (-trimpath, no VCS stamping, the worker's toolchain) and so are the
// layer and config (fixed times, fixed order).
func (b *Builder) Build(ctx context.Context, req Request, log Log) (Result, error) {
	if log == nil {
		log = func(string, string) {}
	}
	perm := func(format string, args ...any) error {
		return provider.Errorf(provider.Permanent, "build", req.ID, format, args...)
	}
	if why := ValidRepo(req.Repo); why != "" {
		return Result{}, perm("the repository %q %s", req.Repo, why)
	}
	if why := ValidBranch(req.Branch); why != "" {
		return Result{}, perm("the branch %q %s", req.Branch, why)
	}
	goBin, err := exec.LookPath(b.o.Go)
	if err != nil {
		return Result{}, perm("this worker cannot build Go programs: the go toolchain (%s) is not on its PATH", b.o.Go)
	}
	dir, err := os.MkdirTemp(b.o.WorkDir, "enclave-build-")
	if err != nil {
		return Result{}, provider.Wrap(provider.Transient, "build", req.ID, err)
	}
	defer os.RemoveAll(dir)

	src, commit, err := b.clone(ctx, dir, req, log)
	if err != nil {
		return Result{}, err
	}
	if err := localReplaces(src); err != nil {
		return Result{}, perm("%v", err)
	}
	pkg, name, err := mainPackage(src)
	if err != nil {
		return Result{}, perm("%v", err)
	}
	bin, err := b.compile(ctx, goBin, src, pkg, dir, log, req.ID)
	if err != nil {
		return Result{}, err
	}
	res, err := b.push(ctx, req, commit, name, bin, log)
	if err != nil {
		return Result{}, err
	}
	res.Package = pkg
	return res, nil
}

// lineWriter hands every complete line to log; Close flushes the rest.
type lineWriter struct {
	mu     sync.Mutex
	stream string
	log    Log
	buf    []byte
	// tail keeps the last lines, for an error message.
	tail []string
}

func (w *lineWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf = append(w.buf, p...)
	for {
		i := bytes.IndexAny(w.buf, "\r\n")
		if i < 0 {
			break
		}
		if w.buf[i] == '\n' {
			w.emit(string(w.buf[:i]))
		}
		// A line ended by \r is redrawn (progress): only its last state,
		// ended by \n, is kept.
		w.buf = w.buf[i+1:]
	}
	if len(w.buf) > 64<<10 {
		w.emit(string(w.buf))
		w.buf = nil
	}
	return len(p), nil
}

func (w *lineWriter) emit(line string) {
	line = strings.TrimRight(line, " \t")
	if strings.TrimSpace(line) == "" {
		return
	}
	w.log(w.stream, line)
	w.tail = append(w.tail, line)
	if len(w.tail) > 20 {
		w.tail = w.tail[len(w.tail)-20:]
	}
}

func (w *lineWriter) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.buf) > 0 {
		w.emit(string(w.buf))
		w.buf = nil
	}
	return nil
}

var _ io.WriteCloser = (*lineWriter)(nil)
