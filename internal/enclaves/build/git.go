package build

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"

	"github.com/go-git/go-billy/v5/osfs"
	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/transport"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
	"github.com/go-git/go-git/v5/storage/memory"

	"conduit/internal/enclaves/provider"
)

// clone checks the branch's head out into dir/src: a shallow clone of one
// branch, no tags, no submodules. The repository's objects stay in memory,
// so the checkout has no .git directory (and the go command stamps no VCS
// information into the binary).
func (b *Builder) clone(ctx context.Context, dir string, req Request, log Log) (string, string, error) {
	src := filepath.Join(dir, "src")
	if err := os.Mkdir(src, 0o700); err != nil {
		return "", "", provider.Wrap(provider.Transient, "build", req.ID, err)
	}
	url := b.o.GitBaseURL + "/" + req.Repo + ".git"
	log("build", fmt.Sprintf("cloning %s (branch %s)", url, req.Branch))
	opts := &git.CloneOptions{
		URL:           url,
		ReferenceName: plumbing.NewBranchReferenceName(req.Branch),
		SingleBranch:  true,
		Depth:         1,
		Tags:          git.NoTags,
	}
	if req.Token != "" {
		user := req.Username
		if user == "" {
			user = "x-access-token"
		}
		opts.Auth = &githttp.BasicAuth{Username: user, Password: req.Token}
	}
	progress := &lineWriter{stream: "git", log: log}
	opts.Progress = progress
	repo, err := git.CloneContext(ctx, memory.NewStorage(), osfs.New(src, osfs.WithBoundOS()), opts)
	_ = progress.Close()
	if err != nil {
		return "", "", gitError(req, err)
	}
	head, err := repo.Head()
	if err != nil {
		return "", "", provider.Wrap(provider.Permanent, "build", req.ID, fmt.Errorf("the clone has no head: %w", err))
	}
	commit := head.Hash().String()
	msg := ""
	if c, err := repo.CommitObject(head.Hash()); err == nil {
		msg = strings.SplitN(strings.TrimSpace(c.Message), "\n", 2)[0]
	}
	log("build", fmt.Sprintf("checked out %s at %s %s", req.Branch, commit, msg))
	if err := confined(src); err != nil {
		return "", "", provider.Wrap(provider.Permanent, "build", req.ID, err)
	}
	return src, commit, nil
}

// gitError sorts a clone failure: what the repository or the credentials
// say is permanent; the host being unreachable, slow or failing is not.
func gitError(req Request, err error) error {
	perm := func(format string, args ...any) error {
		return provider.Errorf(provider.Permanent, "build", req.ID, format, args...)
	}
	var unexpected *plumbing.UnexpectedError
	var status *githttp.Err
	if errors.As(err, &unexpected) {
		errors.As(unexpected.Err, &status)
	} else {
		errors.As(err, &status)
	}
	var noRef git.NoMatchingRefSpecError
	switch {
	case errors.Is(err, transport.ErrRepositoryNotFound):
		return perm("the repository %s does not exist (or the token cannot see it)", req.Repo)
	case errors.Is(err, transport.ErrAuthenticationRequired):
		return perm("the git host asks for credentials for %s: give a token that can read it", req.Repo)
	case errors.Is(err, transport.ErrAuthorizationFailed), errors.Is(err, transport.ErrInvalidAuthMethod):
		return perm("the git host refused the credentials for %s", req.Repo)
	case errors.Is(err, transport.ErrEmptyRemoteRepository):
		return perm("the repository %s is empty", req.Repo)
	case errors.As(err, &noRef), errors.Is(err, plumbing.ErrReferenceNotFound):
		return perm("the repository %s has no branch %q", req.Repo, req.Branch)
	case status != nil:
		code := status.StatusCode()
		if code >= 500 || code == 429 || code == 408 {
			return provider.Errorf(provider.Transient, "build", req.ID, "the git host answered %d; the build is retried", code)
		}
		return perm("the git host answered %d for %s", code, req.Repo)
	}
	var ne net.Error
	if errors.As(err, &ne) || errors.Is(err, context.DeadlineExceeded) {
		return provider.Errorf(provider.Transient, "build", req.ID, "the git host could not be reached: %v", err)
	}
	return provider.Wrap(provider.Transient, "build", req.ID, fmt.Errorf("cloning %s: %w", req.Repo, err))
}

// confined refuses a checkout with a symbolic link that leads out of it:
// the go command would read (and its error messages quote) files of the
// worker. Links are resolved as the kernel would (through other links);
// a link to nothing leads nowhere and is left alone.
func confined(root string) error {
	real, err := filepath.EvalSymlinks(root)
	if err != nil {
		return err
	}
	return filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type()&fs.ModeSymlink == 0 {
			return nil
		}
		rel, _ := filepath.Rel(root, path)
		to, err := filepath.EvalSymlinks(path)
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("the repository's symbolic link %s cannot be followed: %w", rel, err)
		}
		if in, _ := filepath.Rel(real, to); in == ".." || strings.HasPrefix(in, ".."+string(filepath.Separator)) || filepath.IsAbs(in) {
			return fmt.Errorf("the repository's symbolic link %s leads outside it", rel)
		}
		return nil
	})
}
