package oci

import (
	"errors"
	"fmt"
	"io"
	"path"
	"strings"
	"sync"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// Limits bound what an image may unpack to. A layer is untrusted input: a
// megabyte of gzip can hold a gibibyte of zeros, so every count is of what
// decompression yields, checked while it is read, never after it is on disk.
// Zero fields take DefaultLimits' values.
type Limits struct {
	// LayerBytes bounds one layer's uncompressed tar stream
	// (enclaves.limits.layer_bytes).
	LayerBytes int64
	// ImageBytes bounds all layers' uncompressed streams together, and so
	// the tree written (enclaves.limits.image_bytes).
	ImageBytes int64
	// Files bounds the entries of the unpacked tree (enclaves.limits.files).
	Files int
	// PathDepth bounds the components of one path (enclaves.limits.path_depth).
	PathDepth int
}

// DefaultLimits: room for any reasonable service image (a Debian base with a
// runtime is a few hundred MB and tens of thousands of files).
func DefaultLimits() Limits {
	return Limits{LayerBytes: 1 << 30, ImageBytes: 2 << 30, Files: 100_000, PathDepth: 64}
}

// WithDefaults fills zero fields from DefaultLimits.
func (l Limits) WithDefaults() Limits {
	d := DefaultLimits()
	if l.LayerBytes <= 0 {
		l.LayerBytes = d.LayerBytes
	}
	if l.ImageBytes <= 0 {
		l.ImageBytes = d.ImageBytes
	}
	if l.Files <= 0 {
		l.Files = d.Files
	}
	if l.PathDepth <= 0 {
		l.PathDepth = d.PathDepth
	}
	return l
}

// LimitError is an image (or build input or output) over one of the
// limits. It is permanent: the same image is over the same limit again.
// Its message names the setting, so lastFailure says what to change.
type LimitError struct {
	// Setting is the configuration key ("enclaves.limits.layer_bytes").
	Setting string
	// Limit is the setting's value; What says what went over it.
	Limit int64
	What  string
}

func (e *LimitError) Error() string {
	return fmt.Sprintf("%s: over the limit %s = %d", e.What, e.Setting, e.Limit)
}

// Exceeded reports whether err is, or wraps, a LimitError, and which.
func Exceeded(err error) (*LimitError, bool) {
	var le *LimitError
	ok := errors.As(err, &le)
	return le, ok
}

// CheckManifest refuses an image whose manifest already says a layer is
// too big (compressed sizes: incompressible data is about as big packed),
// before a byte of it is downloaded.
func (l Limits) CheckManifest(img v1.Image) error {
	l = l.WithDefaults()
	m, err := img.Manifest()
	if err != nil {
		return err
	}
	var total int64
	for i, d := range m.Layers {
		if d.Size > l.LayerBytes {
			return &LimitError{Setting: "enclaves.limits.layer_bytes", Limit: l.LayerBytes,
				What: fmt.Sprintf("layer %d (%s) is %d bytes compressed", i+1, d.Digest, d.Size)}
		}
		total += d.Size
	}
	if total > l.ImageBytes {
		return &LimitError{Setting: "enclaves.limits.image_bytes", Limit: l.ImageBytes,
			What: fmt.Sprintf("the image's layers are %d bytes compressed", total)}
	}
	return nil
}

// Bounded is img whose layers stop with a LimitError once one decompresses
// past LayerBytes or all of them together past ImageBytes. mutate.Extract
// reads layers through Layers/Uncompressed, so unpacking img stops there.
// Err reports the limit that was hit, also when the error that surfaced
// was reworded on its way out.
func Bounded(img v1.Image, l Limits) *BoundedImage {
	return &BoundedImage{Image: img, lim: l.WithDefaults()}
}

// BoundedImage is an image read under Limits (Bounded).
type BoundedImage struct {
	v1.Image
	lim Limits

	mu    sync.Mutex
	total int64
	err   *LimitError
}

// Err is the limit the image went over (nil: none so far).
func (b *BoundedImage) Err() *LimitError {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.err
}

func (b *BoundedImage) trip(e *LimitError) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.err == nil {
		b.err = e
	}
	return b.err
}

// Layers wraps every layer of the image.
func (b *BoundedImage) Layers() ([]v1.Layer, error) {
	ls, err := b.Image.Layers()
	if err != nil {
		return nil, err
	}
	out := make([]v1.Layer, len(ls))
	for i, l := range ls {
		out[i] = &boundedLayer{Layer: l, img: b, n: i + 1}
	}
	return out, nil
}

type boundedLayer struct {
	v1.Layer
	img *BoundedImage
	n   int
}

func (l *boundedLayer) Uncompressed() (io.ReadCloser, error) {
	rc, err := l.Layer.Uncompressed()
	if err != nil {
		return nil, err
	}
	return &countingReader{rc: rc, l: l}, nil
}

type countingReader struct {
	rc io.ReadCloser
	l  *boundedLayer
	n  int64
}

func (r *countingReader) Read(p []byte) (int, error) {
	n, err := r.rc.Read(p)
	r.n += int64(n)
	b := r.l.img
	b.mu.Lock()
	b.total += int64(n)
	total := b.total
	b.mu.Unlock()
	lim := b.lim
	switch {
	case r.n > lim.LayerBytes:
		d, _ := r.l.Digest()
		return n, b.trip(&LimitError{Setting: "enclaves.limits.layer_bytes", Limit: lim.LayerBytes,
			What: fmt.Sprintf("layer %d (%s) unpacks to more than %d bytes", r.l.n, d, lim.LayerBytes)})
	case total > lim.ImageBytes:
		return n, b.trip(&LimitError{Setting: "enclaves.limits.image_bytes", Limit: lim.ImageBytes,
			What: fmt.Sprintf("the image's layers unpack to more than %d bytes", lim.ImageBytes)})
	}
	return n, err
}

func (r *countingReader) Close() error { return r.rc.Close() }

// Tree counts what an unpacking writes against Files, PathDepth and a byte
// budget (ImageBytes, or less: what an account's quota leaves).
type Tree struct {
	lim   Limits
	files int
	bytes int64
	// Budget bounds the bytes written; BudgetErr is the error when it runs
	// out (nil: ImageBytes's).
	Budget    int64
	BudgetErr func(written int64) *LimitError
}

// NewTree counts against l (defaults filled) with ImageBytes as the budget.
func NewTree(l Limits) *Tree {
	l = l.WithDefaults()
	return &Tree{lim: l, Budget: l.ImageBytes}
}

// Bytes is what has been counted so far.
func (t *Tree) Bytes() int64 { return t.bytes }

// Entry counts one entry named name (slash-separated) of size bytes.
func (t *Tree) Entry(name string, size int64) error {
	t.files++
	if t.files > t.lim.Files {
		return &LimitError{Setting: "enclaves.limits.files", Limit: int64(t.lim.Files),
			What: fmt.Sprintf("the image has more than %d files", t.lim.Files)}
	}
	clean := strings.Trim(path.Clean("/"+name), "/")
	if depth := strings.Count(clean, "/") + 1; clean != "" && depth > t.lim.PathDepth {
		return &LimitError{Setting: "enclaves.limits.path_depth", Limit: int64(t.lim.PathDepth),
			What: fmt.Sprintf("%q is %d directories deep", truncate(name, 120), depth)}
	}
	if size > t.lim.LayerBytes {
		// A file comes from one layer: that layer is over its limit too.
		return &LimitError{Setting: "enclaves.limits.layer_bytes", Limit: t.lim.LayerBytes,
			What: fmt.Sprintf("%q is %d bytes", truncate(name, 120), size)}
	}
	return t.Add(size)
}

// Add counts n more bytes.
func (t *Tree) Add(n int64) error {
	t.bytes += n
	if t.bytes > t.Budget {
		if t.BudgetErr != nil {
			return t.BudgetErr(t.bytes)
		}
		return &LimitError{Setting: "enclaves.limits.image_bytes", Limit: t.lim.ImageBytes,
			What: fmt.Sprintf("the image unpacks to more than %d bytes", t.Budget)}
	}
	return nil
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
