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
	"conduit/internal/enclaves/provider/oci"
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
	store := &boundedStorage{Storage: memory.NewStorage(), limit: b.o.SourceBytes}
	repo, err := git.CloneContext(ctx, store, osfs.New(src, osfs.WithBoundOS()), opts)
	_ = progress.Close()
	if store.over != nil {
		return "", "", provider.Errorf(provider.Permanent, "build", req.ID, "the repository %s is refused: %v", req.Repo, store.over)
	}
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
	if err := confined(src, b.checkoutTree()); err != nil {
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
//
// tree (nil: none) counts the checkout against the limits: files, path
// depth and bytes.
func confined(root string, tree *oci.Tree) error {
	real, err := filepath.EvalSymlinks(root)
	if err != nil {
		return err
	}
	return filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if tree != nil && rel != "." {
			var size int64
			if d.Type().IsRegular() {
				if info, err := d.Info(); err == nil {
					size = info.Size()
				}
			}
			if err := tree.Entry(filepath.ToSlash(rel), size); err != nil {
				return err
			}
		}
		if d.Type()&fs.ModeSymlink == 0 {
			return nil
		}
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

// checkoutTree counts a checkout: the image limits for files and depth,
// SourceBytes for its bytes.
func (b *Builder) checkoutTree() *oci.Tree {
	t := oci.NewTree(b.o.Limits)
	limit := b.o.SourceBytes
	t.Budget = limit
	t.BudgetErr = func(written int64) *oci.LimitError {
		return &oci.LimitError{Setting: "enclaves.limits.source_bytes", Limit: limit,
			What: fmt.Sprintf("the checkout is more than %d bytes", written)}
	}
	return t
}

// boundedStorage keeps a clone's objects in memory up to limit bytes: a
// repository is untrusted input, and a small pack can inflate to a lot.
// The first object over the limit fails the clone; over says why.
type boundedStorage struct {
	*memory.Storage
	limit int64
	n     int64
	over  *oci.LimitError
}

func (s *boundedStorage) SetEncodedObject(obj plumbing.EncodedObject) (plumbing.Hash, error) {
	s.n += obj.Size()
	if s.n > s.limit {
		if s.over == nil {
			s.over = &oci.LimitError{Setting: "enclaves.limits.source_bytes", Limit: s.limit,
				What: fmt.Sprintf("its objects are more than %d bytes", s.limit)}
		}
		return plumbing.ZeroHash, s.over
	}
	return s.Storage.SetEncodedObject(obj)
}
