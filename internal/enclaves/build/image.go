package build

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"regexp"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"conduit/internal/enclaves/provider"
	"conduit/internal/enclaves/provider/oci"
)

// The image layout, as ko makes it: the binary in /ko-app, on the PATH,
// as the entrypoint.
const (
	AppDir = "/ko-app"
	// epoch is every time in the image (ko's default SOURCE_DATE_EPOCH),
	// so the same binary always makes the same image.
	epoch = 0
)

// Image layers the binary onto an empty base: one layer holding
// /ko-app/<name> (0755, root-owned, times at the epoch), an OCI config
// for linux/amd64 with the entrypoint, PATH and working directory, and
// the source as labels. It is a pure function of its inputs.
func Image(bin []byte, name, repo, commit string) (v1.Image, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	at := time.Unix(epoch, 0).UTC()
	for _, h := range []struct {
		hdr  tar.Header
		body []byte
	}{
		{tar.Header{Name: strings.TrimPrefix(AppDir, "/") + "/", Typeflag: tar.TypeDir, Mode: 0o755}, nil},
		{tar.Header{Name: strings.TrimPrefix(AppDir, "/") + "/" + name, Typeflag: tar.TypeReg, Mode: 0o755, Size: int64(len(bin))}, bin},
	} {
		h.hdr.ModTime, h.hdr.Format = at, tar.FormatPAX
		if err := tw.WriteHeader(&h.hdr); err != nil {
			return nil, err
		}
		if _, err := tw.Write(h.body); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	data := buf.Bytes()
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(data)), nil },
		tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return nil, err
	}
	base := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	base = mutate.ConfigMediaType(base, types.OCIConfigJSON)
	img, err := mutate.Append(base, mutate.Addendum{Layer: layer, History: v1.History{
		Author: "conduit", CreatedBy: "go build -trimpath (conduit enclave build)", Created: v1.Time{Time: at},
	}})
	if err != nil {
		return nil, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture = GOOS, GOARCH
	cf.Created = v1.Time{Time: at}
	cf.Config = v1.Config{
		Entrypoint: []string{AppDir + "/" + name},
		Env:        []string{"PATH=" + AppDir + ":/usr/local/bin:/usr/bin:/bin"},
		WorkingDir: "/",
		Labels: map[string]string{
			"org.opencontainers.image.source":   repo,
			"org.opencontainers.image.revision": commit,
		},
	}
	return mutate.ConfigFile(img, cf)
}

var nameUnsafe = regexp.MustCompile(`[^a-z0-9._-]+`)

// component makes s a valid repository path component (lowercase,
// separators only between alphanumerics).
func component(s string) string {
	s = nameUnsafe.ReplaceAllString(strings.ToLower(s), "-")
	s = strings.Trim(s, "._-")
	if s == "" {
		return "app"
	}
	return s
}

// push builds the image around the binary and pushes it as
// Registry/owner/name:commit.
func (b *Builder) push(ctx context.Context, req Request, commit, binName, binPath string, log Log) (Result, error) {
	owner, repoName, _ := strings.Cut(req.Repo, "/")
	if binName == "" {
		binName = repoName
	}
	binName = component(binName)
	info, err := os.Stat(binPath)
	if err != nil {
		return Result{}, provider.Wrap(provider.Transient, "build", req.ID, err)
	}
	// The image is one layer holding the program: it must unpack within the limits the
	// provider will hold it to (and is not read into memory when it would not).
	if lim := b.o.Limits; info.Size() > min(lim.LayerBytes, lim.ImageBytes) {
		setting, limit := "enclaves.limits.layer_bytes", lim.LayerBytes
		if lim.ImageBytes < lim.LayerBytes {
			setting, limit = "enclaves.limits.image_bytes", lim.ImageBytes
		}
		return Result{}, provider.Errorf(provider.Permanent, "build", req.ID, "the image built is refused: %v",
			&oci.LimitError{Setting: setting, Limit: limit, What: fmt.Sprintf("the program is %d bytes", info.Size())})
	}
	bin, err := os.ReadFile(binPath)
	if err != nil {
		return Result{}, provider.Wrap(provider.Transient, "build", req.ID, err)
	}
	img, err := Image(bin, binName, req.Repo, commit)
	if err != nil {
		return Result{}, provider.Wrap(provider.Permanent, "build", req.ID, err)
	}
	tag := fmt.Sprintf("%s/%s/%s:%s", b.o.Registry, component(owner), component(repoName), commit)
	ref, err := name.NewTag(tag)
	if err != nil {
		return Result{}, provider.Errorf(provider.Permanent, "build", req.ID, "the image name %q is not valid (enclaves.build_registry): %v", tag, err)
	}
	digest, err := img.Digest()
	if err != nil {
		return Result{}, provider.Wrap(provider.Permanent, "build", req.ID, err)
	}
	log("build", fmt.Sprintf("pushing %s (%s, %d bytes of program)", tag, digest, len(bin)))
	if err := remote.Write(ref, img, remote.WithAuth(b.o.RegistryAuth), remote.WithContext(ctx)); err != nil {
		return Result{}, pushError(req.ID, tag, err)
	}
	byDigest := ref.Context().Digest(digest.String()).String()
	log("build", "pushed "+byDigest)
	return Result{Commit: commit, Image: byDigest, Tag: tag, Binary: AppDir + "/" + binName}, nil
}

// pushError sorts a push failure like the provider sorts pulls: the
// registry down, 5xx or 429 is transient; another 4xx (credentials
// refused, a name it will not take) is permanent.
func pushError(id, tag string, err error) error {
	var te *transport.Error
	if errors.As(err, &te) {
		if te.StatusCode >= 500 || te.StatusCode == http.StatusTooManyRequests || te.StatusCode == http.StatusRequestTimeout {
			return provider.Errorf(provider.Transient, "build", id, "the registry answered %d pushing %s: %v", te.StatusCode, tag, err)
		}
		return provider.Errorf(provider.Permanent, "build", id, "the registry refused %s: %v", tag, err)
	}
	var ne net.Error
	if errors.As(err, &ne) || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, io.ErrUnexpectedEOF) {
		return provider.Errorf(provider.Transient, "build", id, "the registry could not be reached pushing %s: %v", tag, err)
	}
	return provider.Errorf(provider.Transient, "build", id, "pushing %s: %v", tag, err)
}
