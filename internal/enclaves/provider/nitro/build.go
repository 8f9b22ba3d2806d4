package nitro

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"

	"conduit/internal/enclaves/provider"
	"conduit/internal/enclaves/provider/nitro/eif"
	"conduit/internal/enclaves/provider/oci"
)

// bootBlobs are the parts of every EIF that do not come from the image.
type bootBlobs struct {
	kernel, init, nsm []byte
	cmdline           string
	// digest identifies them together: a changed kernel or init means every EIF is rebuilt.
	digest string
}

func readBootBlobs(kernelPath, initPath, nsmPath, cmdline string) (bootBlobs, error) {
	var b bootBlobs
	var err error
	if b.kernel, err = os.ReadFile(kernelPath); err != nil {
		return b, fmt.Errorf("kernel_path: %w", err)
	}
	if b.init, err = os.ReadFile(initPath); err != nil {
		return b, fmt.Errorf("init_path: %w", err)
	}
	if nsmPath != "" {
		if b.nsm, err = os.ReadFile(nsmPath); err != nil {
			return b, fmt.Errorf("nsm_path: %w", err)
		}
	}
	b.cmdline = strings.TrimSpace(cmdline)
	h := sha256.New()
	for _, part := range [][]byte{b.kernel, b.init, b.nsm, []byte(b.cmdline)} {
		fmt.Fprintf(h, "%d:", len(part))
		h.Write(part)
	}
	b.digest = "sha256:" + hex.EncodeToString(h.Sum(nil))
	return b, nil
}

// bootstrapRamdisk is nitro-cli's first ramdisk: dev/, init and (when given) nsm.ko.
func (b bootBlobs) bootstrapRamdisk() ([]byte, error) {
	var buf bytes.Buffer
	w := eif.NewCPIOWriter(&buf)
	entries := []eif.CPIOEntry{{Name: "dev", Mode: eif.ModeDir | 0o755}, {Name: "init", Mode: eif.ModeRegular | 0o755, Data: b.init}}
	if b.nsm != nil {
		entries = append(entries, eif.CPIOEntry{Name: "nsm.ko", Mode: eif.ModeRegular | 0o755, Data: b.nsm})
	}
	for _, e := range entries {
		if err := w.Write(e); err != nil {
			return nil, err
		}
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// badImage is an image that cannot become an EIF as it is.
type badImage struct{ err error }

func (e *badImage) Error() string { return e.err.Error() }
func (e *badImage) Unwrap() error { return e.err }

// classifyRegistry: images that cannot become an EIF are permanent;
// registry failures are sorted by oci.Classify.
func classifyRegistry(id, ref string, err error) error {
	var bad *badImage
	if errors.As(err, &bad) {
		return provider.Errorf(provider.Permanent, "prepare", id, "image %s: %v", ref, err)
	}
	return oci.Classify(id, ref, err)
}

// describe reads what the EIF needs from the image: digests, argv (entrypoint then cmd), env.
func describe(img v1.Image, ref string) (provider.Image, *v1.ConfigFile, error) {
	md, err := img.Digest()
	if err != nil {
		return provider.Image{}, nil, err
	}
	cd, err := img.ConfigName()
	if err != nil {
		return provider.Image{}, nil, err
	}
	layers, err := img.Layers()
	if err != nil {
		return provider.Image{}, nil, err
	}
	out := provider.Image{Ref: ref, ManifestDigest: md.String(), ConfigDigest: cd.String()}
	for _, l := range layers {
		d, err := l.Digest()
		if err != nil {
			return provider.Image{}, nil, err
		}
		out.LayerDigests = append(out.LayerDigests, d.String())
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return provider.Image{}, nil, err
	}
	out.Argv = append(append([]string(nil), cf.Config.Entrypoint...), cf.Config.Cmd...)
	if len(out.Argv) == 0 {
		return provider.Image{}, nil, &badImage{errors.New("the image has neither an entrypoint nor a command")}
	}
	out.Env = cf.Config.Env
	// nitro-cli's init starts the command in "/"; so does ours (the image's WorkingDir is
	// not carried into the EIF, see docs/enclaves.md).
	out.WorkDir = "/"
	return out, cf, nil
}

// lines writes one item per line, refusing items that contain a newline (the init reads the
// cmd and env files line by line).
func lines(what string, items []string) ([]byte, error) {
	var b bytes.Buffer
	for _, it := range items {
		if strings.ContainsAny(it, "\n\x00") {
			return nil, &badImage{fmt.Errorf("%s entry %q contains a newline or NUL, which the enclave's init cannot read", what, it)}
		}
		b.WriteString(it)
		b.WriteByte('\n')
	}
	return b.Bytes(), nil
}

// appRamdisk writes nitro-cli's second ramdisk to w: the image's flattened filesystem under
// rootfs/, the directories the init mounts over (rootfs/dev, run, sys, var, proc, tmp), and the
// files cmd and env. Hard links become symbolic links to the absolute target ("/"+target), which
// resolves the same inside the enclave's root. Devices and FIFOs are left out (the init provides
// /dev). Parent directories missing from the layers are added (mode 0755), since the kernel's
// initramfs unpacker does not create them.
//
// The unpacking is bounded like the local provider's (oci.Limits): an image over a limit is a
// badImage naming the setting, and the ramdisk file is removed by the caller.
func appRamdisk(w io.Writer, img v1.Image, desc provider.Image, lim oci.Limits) error {
	if err := lim.CheckManifest(img); err != nil {
		if le, over := oci.Exceeded(err); over {
			return &badImage{le}
		}
		return fmt.Errorf("reading the image's manifest: %w", err)
	}
	bounded := oci.Bounded(img, lim)
	tree := oci.NewTree(lim)
	cw := eif.NewCPIOWriter(w)
	dirs := map[string]bool{}
	var mkdirs func(p string) error
	mkdirs = func(p string) error {
		if p == "." || p == "" || dirs[p] {
			return nil
		}
		if err := mkdirs(path.Dir(p)); err != nil {
			return err
		}
		dirs[p] = true
		return cw.Write(eif.CPIOEntry{Name: p, Mode: eif.ModeDir | 0o755})
	}
	if err := mkdirs("rootfs"); err != nil {
		return err
	}
	rc := mutate.Extract(bounded)
	defer rc.Close()
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			// mutate.Extract writes the trailer before reporting a failed layer: read to the end.
			if _, err = io.Copy(io.Discard, rc); err == nil {
				break
			}
		}
		if le := bounded.Err(); le != nil {
			return &badImage{le}
		}
		if err != nil {
			if strings.Contains(err.Error(), "unsafe tar path") {
				return &badImage{err}
			}
			return fmt.Errorf("reading the image's layers: %w", err)
		}
		rel, err := clean(h.Name)
		if err != nil {
			return &badImage{fmt.Errorf("%q: %w", h.Name, err)}
		}
		size := int64(0)
		if h.Typeflag == tar.TypeReg {
			size = h.Size
		}
		if err := tree.Entry(h.Name, size); err != nil {
			return &badImage{err}
		}
		if rel == "" {
			continue
		}
		name := "rootfs/" + rel
		if err := mkdirs(path.Dir(name)); err != nil {
			return err
		}
		perm := uint32(h.Mode) & 0o7777
		mtime := uint32(0)
		if t := h.ModTime.Unix(); t > 0 && t < 1<<32 {
			mtime = uint32(t)
		}
		e := eif.CPIOEntry{Name: name, UID: uint32(h.Uid), GID: uint32(h.Gid), MTime: mtime}
		switch h.Typeflag {
		case tar.TypeDir:
			if dirs[name] {
				continue
			}
			dirs[name] = true
			e.Mode = eif.ModeDir | perm
			err = cw.Write(e)
		case tar.TypeReg:
			e.Mode = eif.ModeRegular | perm
			err = cw.WriteFrom(e, h.Size, tr)
		case tar.TypeSymlink:
			e.Mode, e.Data = eif.ModeSymlink|0o777, []byte(h.Linkname)
			err = cw.Write(e)
		case tar.TypeLink:
			target, cerr := clean(h.Linkname)
			if cerr != nil || target == "" {
				return &badImage{fmt.Errorf("hard link %q → %q leaves the image", h.Name, h.Linkname)}
			}
			e.Mode, e.Data = eif.ModeSymlink|0o777, []byte("/"+target)
			err = cw.Write(e)
		default:
			continue
		}
		if err != nil {
			return err
		}
	}
	for _, d := range []string{"dev", "run", "sys", "var", "proc", "tmp"} {
		if err := mkdirs("rootfs/" + d); err != nil {
			return err
		}
	}
	cmd, err := lines("command", desc.Argv)
	if err != nil {
		return err
	}
	env, err := lines("environment", desc.Env)
	if err != nil {
		return err
	}
	if err := cw.Write(eif.CPIOEntry{Name: "cmd", Mode: eif.ModeRegular | 0o644, Data: cmd}); err != nil {
		return err
	}
	if err := cw.Write(eif.CPIOEntry{Name: "env", Mode: eif.ModeRegular | 0o644, Data: env}); err != nil {
		return err
	}
	return cw.Close()
}

// clean maps an archive name to a relative path, refusing names that climb out with "..".
func clean(n string) (string, error) {
	for _, part := range strings.Split(n, "/") {
		if part == ".." {
			return "", errors.New("the name climbs out of the image with ..")
		}
	}
	c := strings.TrimPrefix(path.Clean("/"+n), "/")
	return c, nil
}

// builtEIF is an EIF on disk and what it measures.
type builtEIF struct {
	path   string
	size   int64
	sha384 string
	pcrs   eif.PCRs
}

// buildEIF turns the image into an EIF in WorkDir. The bytes depend only on the image and the
// boot blobs (no build time: the metadata's BuildTime is the image's creation time), so a retry
// builds the same file.
func (p *Provider) buildEIF(img v1.Image, desc provider.Image, cf *v1.ConfigFile) (*builtEIF, error) {
	rd, err := os.CreateTemp(p.opts.WorkDir, "ramdisk-*.cpio")
	if err != nil {
		return nil, err
	}
	defer os.Remove(rd.Name())
	defer rd.Close()
	if err := appRamdisk(rd, img, desc, p.opts.Limits); err != nil {
		return nil, err
	}
	rdSize, err := rd.Seek(0, io.SeekCurrent)
	if err != nil {
		return nil, err
	}
	boot, err := p.boot.bootstrapRamdisk()
	if err != nil {
		return nil, err
	}
	rawConfig, err := img.RawConfigFile()
	if err != nil {
		return nil, err
	}
	docker, err := json.Marshal(map[string]any{"RepoDigests": []string{repoDigest(desc)}, "Id": desc.ConfigDigest, "Config": json.RawMessage(rawConfig)})
	if err != nil {
		return nil, err
	}
	built := ""
	if !cf.Created.IsZero() {
		built = cf.Created.UTC().Format(time.RFC3339)
	}
	out, err := os.CreateTemp(p.opts.WorkDir, "enclave-*.eif")
	if err != nil {
		return nil, err
	}
	ok := false
	defer func() {
		out.Close()
		if !ok {
			os.Remove(out.Name())
		}
	}()
	pcrs, err := eif.Write(out, eif.Image{
		Kernel:   eif.BytesBlob(p.boot.kernel),
		Cmdline:  p.boot.cmdline,
		Ramdisks: []eif.Blob{eif.BytesBlob(boot), {R: rd, Size: rdSize}},
		Metadata: eif.Metadata{
			ImageName: desc.Ref, ImageVersion: desc.ManifestDigest,
			BuildMetadata: eif.BuildMetadata{BuildTime: built, BuildTool: "conduit", BuildToolVersion: eifBuilderVersion,
				OperatingSystem: cf.OS, KernelVersion: p.opts.KernelVersion},
			DockerInfo: docker, CustomMetadata: json.RawMessage(`null`),
		},
	})
	if err != nil {
		return nil, err
	}
	size, err := out.Seek(0, io.SeekEnd)
	if err != nil {
		return nil, err
	}
	if _, err := out.Seek(0, io.SeekStart); err != nil {
		return nil, err
	}
	h := sha512.New384()
	if _, err := io.Copy(h, out); err != nil {
		return nil, err
	}
	ok = true
	return &builtEIF{path: out.Name(), size: size, sha384: hex.EncodeToString(h.Sum(nil)), pcrs: pcrs}, nil
}

// eifBuilderVersion changes when the EIF layout we write changes (so do the PCRs).
const eifBuilderVersion = "1"

func repoDigest(d provider.Image) string {
	if ref, err := name.ParseReference(d.Ref); err == nil {
		return ref.Context().Name() + "@" + d.ManifestDigest
	}
	return d.Ref
}
