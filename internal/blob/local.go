package blob

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"
)

// Local keeps files in a folder; the content type sits beside each file in
// a ".meta" sidecar.
type Local struct {
	dir string
}

// NewLocal keeps files under dir, creating it.
func NewLocal(dir string) (*Local, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	return &Local{dir: dir}, nil
}

type meta struct {
	ContentType string `json:"contentType"`
}

func (l *Local) path(key string) (string, error) {
	if err := ValidKey(key); err != nil {
		return "", err
	}
	return filepath.Join(l.dir, filepath.FromSlash(key)), nil
}

// Put writes to a temporary file beside the target and renames it into
// place, so a crash never leaves half a file under the key.
func (l *Local) Put(_ context.Context, key, contentType string, body io.Reader) (Object, error) {
	p, err := l.path(key)
	if err != nil {
		return Object{}, err
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return Object{}, err
	}
	tmp, err := os.CreateTemp(filepath.Dir(p), ".put-*")
	if err != nil {
		return Object{}, err
	}
	defer os.Remove(tmp.Name()) // no-op after the rename
	n, err := io.Copy(tmp, body)
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return Object{}, err
	}
	m, _ := json.Marshal(meta{ContentType: contentType})
	if err := os.WriteFile(p+".meta", m, 0o644); err != nil {
		return Object{}, err
	}
	if err := os.Rename(tmp.Name(), p); err != nil {
		return Object{}, err
	}
	return Object{Key: key, ContentType: contentType, Size: n}, nil
}

// Get opens the file; the returned reader also seeks (for range requests).
func (l *Local) Get(ctx context.Context, key string) (io.ReadCloser, Object, error) {
	obj, err := l.Stat(ctx, key)
	if err != nil {
		return nil, Object{}, err
	}
	p, _ := l.path(key)
	f, err := os.Open(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, Object{}, ErrNotFound
	}
	return f, obj, err
}

// Stat describes the file.
func (l *Local) Stat(_ context.Context, key string) (Object, error) {
	p, err := l.path(key)
	if err != nil {
		return Object{}, err
	}
	fi, err := os.Stat(p)
	if errors.Is(err, fs.ErrNotExist) || (err == nil && fi.IsDir()) {
		return Object{}, ErrNotFound
	}
	if err != nil {
		return Object{}, err
	}
	var m meta
	if b, err := os.ReadFile(p + ".meta"); err == nil {
		_ = json.Unmarshal(b, &m)
	}
	if m.ContentType == "" {
		m.ContentType = "application/octet-stream"
	}
	return Object{Key: key, ContentType: m.ContentType, Size: fi.Size()}, nil
}

// Presign: a local folder has no URLs of its own.
func (l *Local) Presign(context.Context, string, time.Duration) (string, bool, error) {
	return "", false, nil
}

// Delete removes the file and its sidecar.
func (l *Local) Delete(_ context.Context, key string) error {
	p, err := l.path(key)
	if err != nil {
		return err
	}
	if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	if err := os.Remove(p + ".meta"); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}
