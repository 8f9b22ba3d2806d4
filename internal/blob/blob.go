// Package blob keeps rendered files and fetched images: in a local folder
// (the embedded default, served by the frontend) or in S3 and S3-compatible
// stores. Files are handed out as URLs whose `c` query parameter is a
// signature over the key (Signer): holding the URL is the permission.
package blob

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"
)

// ErrNotFound: no file under the key.
var ErrNotFound = errors.New("blob: not found")

// Object describes a stored file.
type Object struct {
	Key         string
	ContentType string
	Size        int64
}

// Store keeps files by key.
type Store interface {
	// Put stores body under key, replacing what was there, streaming.
	Put(ctx context.Context, key, contentType string, body io.Reader) (Object, error)
	// Get opens a stored file (ErrNotFound when absent); the caller closes.
	Get(ctx context.Context, key string) (io.ReadCloser, Object, error)
	// Stat describes a stored file (ErrNotFound when absent).
	Stat(ctx context.Context, key string) (Object, error)
	// Presign returns a time-limited direct download URL when the backend
	// has one (S3); the local backend says ok=false and the frontend
	// serves the bytes itself.
	Presign(ctx context.Context, key string, ttl time.Duration) (url string, ok bool, err error)
	// Delete removes a stored file; a missing one is not an error, so a
	// retried delete succeeds.
	Delete(ctx context.Context, key string) error
}

// ValidKey accepts slash-separated keys of [A-Za-z0-9._-] segments, none
// empty or starting with '.', at most 512 bytes, not ending in .meta (the
// local store's sidecars): safe as a path and in a URL.
func ValidKey(key string) error {
	if key == "" || len(key) > 512 || strings.HasSuffix(key, ".meta") {
		return fmt.Errorf("blob key must be 1 to 512 bytes and not end in .meta")
	}
	for _, seg := range strings.Split(key, "/") {
		// A leading dot would reach the local store's temporary files.
		if seg == "" || seg[0] == '.' {
			return fmt.Errorf("blob key %q has an empty segment or one starting with '.'", key)
		}
		for _, r := range seg {
			ok := r == '.' || r == '_' || r == '-' || (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z') || (r >= '0' && r <= '9')
			if !ok {
				return fmt.Errorf("blob key %q may only hold letters, digits, '.', '_', '-' and '/'", key)
			}
		}
	}
	return nil
}

// Signer makes and checks the `c` signature of file URLs.
type Signer struct{ key []byte }

// NewSigner needs a secret of at least 16 bytes.
func NewSigner(secret []byte) (Signer, error) {
	if len(secret) < 16 {
		return Signer{}, errors.New("file URL secret must be at least 16 bytes")
	}
	return Signer{key: append([]byte(nil), secret...)}, nil
}

// Sign is the signature of key.
func (s Signer) Sign(key string) string {
	h := hmac.New(sha256.New, s.key)
	h.Write([]byte("conduit/file/v1\x00"))
	h.Write([]byte(key))
	return base64.RawURLEncoding.EncodeToString(h.Sum(nil))
}

// Verify checks c against key in constant time.
func (s Signer) Verify(key, c string) bool {
	if len(s.key) == 0 {
		return false
	}
	return hmac.Equal([]byte(c), []byte(s.Sign(key)))
}
