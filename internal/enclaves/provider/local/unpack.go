package local

import (
	"archive/tar"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"

	"conduit/internal/enclaves/provider/oci"
)

// unpack writes the image's filesystem into dir, which must not exist yet. mutate.Extract
// flattens the layers and applies whiteouts (".wh.name" deletes, ".wh..wh..opq" empties a
// directory), so what arrives here is the final tree. Entries are untrusted: any name that would
// land outside dir is refused, and nothing is written through a symbolic link, so a layer cannot
// plant "etc -> /etc" and then write /etc/passwd on the host. Symbolic links themselves are kept
// as they are; they resolve inside the sandbox, whose root is dir.
//
// What is read and written is bounded while it is read (oci.Limits and tree's budget): an image
// over a limit stops with an *oci.LimitError and the caller removes dir. Every entry is owned by
// owner (a uid; -1 leaves the provider's), the uid the sandbox runs as outside its namespace.
func unpack(img v1.Image, dir string, lim oci.Limits, tree *oci.Tree, owner int) error {
	if err := lim.CheckManifest(img); err != nil {
		if _, over := oci.Exceeded(err); over {
			return err
		}
		return fmt.Errorf("reading the image's manifest: %w", err)
	}
	if err := os.Mkdir(dir, 0o755); err != nil {
		return err
	}
	bounded := oci.Bounded(img, lim)
	rc := mutate.Extract(bounded)
	defer rc.Close()
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			// Extract writes the tar trailer before it reports its own failure (a deferred
			// Close), so the archive can look complete when it is not: read on to the end of the
			// stream, where a failure — a layer that could not be fetched, a refused path — shows.
			_, err = io.Copy(io.Discard, rc)
			if err == nil {
				break
			}
		}
		if le := bounded.Err(); le != nil {
			return le // reworded or not on its way out, this is why it stopped
		}
		if err != nil {
			// mutate.Extract refuses names that climb out with this message; anything else is
			// reading the layers (from the registry: layers are fetched as they are read).
			if strings.Contains(err.Error(), "unsafe tar path") {
				return &unsafeImageError{err}
			}
			return fmt.Errorf("reading the image's layers: %w", err)
		}
		size := int64(0)
		if h.Typeflag == tar.TypeReg {
			size = h.Size
		}
		if err := tree.Entry(h.Name, size); err != nil {
			return err
		}
		if err := unpackEntry(dir, h, tr, owner); err != nil {
			return &unsafeImageError{fmt.Errorf("unpacking %q: %w", h.Name, err)}
		}
	}
	// The sandbox mounts /proc, /dev and /tmp over these; the root is read-only, so they must exist.
	for _, d := range []string{"proc", "dev", "tmp"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			return err
		}
	}
	return chown(dir, owner)
}

// chown gives p (not following a link) to owner; -1 leaves it as it is.
func chown(p string, owner int) error {
	if owner < 0 {
		return nil
	}
	return os.Lchown(p, owner, owner)
}

// unsafeImageError is an image that cannot be unpacked as it is: retrying will not change it.
type unsafeImageError struct{ err error }

func (e *unsafeImageError) Error() string { return e.err.Error() }
func (e *unsafeImageError) Unwrap() error { return e.err }

// inside maps an archive name to a path under dir, or fails if it would leave dir.
func inside(dir, name string) (string, error) {
	clean := path.Clean("/" + name)
	if clean == "/" {
		return dir, nil
	}
	for _, part := range strings.Split(name, "/") {
		if part == ".." {
			return "", errors.New("the name climbs out of the image with ..")
		}
	}
	return filepath.Join(dir, filepath.FromSlash(clean)), nil
}

// noLinksOnTheWay fails if any directory between dir and p is a symbolic link.
func noLinksOnTheWay(dir, p string) error {
	rel, err := filepath.Rel(dir, filepath.Dir(p))
	if err != nil || rel == "." {
		return err
	}
	cur := dir
	for _, part := range strings.Split(rel, string(filepath.Separator)) {
		cur = filepath.Join(cur, part)
		info, err := os.Lstat(cur)
		if errors.Is(err, os.ErrNotExist) {
			return nil // created below as a real directory
		}
		if err != nil {
			return err
		}
		if info.Mode()&os.ModeSymlink != 0 {
			return fmt.Errorf("%s is a symbolic link; refusing to write through it", cur)
		}
		if !info.IsDir() {
			return fmt.Errorf("%s is not a directory", cur)
		}
	}
	return nil
}

func unpackEntry(dir string, h *tar.Header, r io.Reader, owner int) error {
	if err := writeEntry(dir, h, r); err != nil {
		return err
	}
	if h.Typeflag == tar.TypeReg || h.Typeflag == tar.TypeDir || h.Typeflag == tar.TypeSymlink {
		target, _ := inside(dir, h.Name)
		return chown(target, owner)
	}
	return nil
}

func writeEntry(dir string, h *tar.Header, r io.Reader) error {
	target, err := inside(dir, h.Name)
	if err != nil {
		return err
	}
	if target == dir {
		return nil
	}
	if err := noLinksOnTheWay(dir, target); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
		return err
	}
	// Setuid, setgid and sticky bits are dropped: nothing in an enclave needs privileges.
	mode := os.FileMode(h.Mode).Perm()
	switch h.Typeflag {
	case tar.TypeDir:
		// u+rwx so that Terminate can always remove the tree.
		if err := os.MkdirAll(target, mode|0o700); err != nil {
			return err
		}
		return os.Chmod(target, mode|0o700)
	case tar.TypeReg:
		_ = os.Remove(target)
		f, err := os.OpenFile(target, os.O_CREATE|os.O_EXCL|os.O_WRONLY, mode)
		if err != nil {
			return err
		}
		if _, err := io.Copy(f, r); err != nil {
			f.Close()
			return err
		}
		return f.Close()
	case tar.TypeSymlink:
		_ = os.Remove(target)
		return os.Symlink(h.Linkname, target)
	case tar.TypeLink:
		src, err := inside(dir, h.Linkname)
		if err != nil {
			return err
		}
		if err := noLinksOnTheWay(dir, src); err != nil {
			return err
		}
		if info, err := os.Lstat(src); err != nil || !info.Mode().IsRegular() {
			return fmt.Errorf("hard link to %q, which is not a regular file in the image", h.Linkname)
		}
		_ = os.Remove(target)
		return os.Link(src, target)
	default:
		// Devices, FIFOs and the like: the sandbox provides /dev; nothing else is needed.
		return nil
	}
}
