package paycall

import (
	"context"
	"errors"
	"io"
	"time"

	"conduit/internal/blob"
	"conduit/internal/errs"
)

// File is a stored file a signed link opens: a redirect to the blob
// store's own presigned URL, or the bytes.
type File struct {
	Redirect string
	Body     io.ReadCloser
	Object   blob.Object
	// purchase: a bought file (its download counts as a delivery), not a
	// media library file.
	purchase bool
	key      string
}

// OpenFile checks a file link — a purchase's signature (c) or a media
// library's expiring link (t) — and opens the file: 503 without the
// signing secret, 403 for a bad or expired link, 404 when it is gone. A
// purchase's file redirected to the blob store counts as delivered now.
func (s *Service) OpenFile(ctx context.Context, key, c, t string) (File, error) {
	if err := s.claims(); err != nil {
		return File{}, err
	}
	library := c == "" && t != ""
	switch {
	case blob.ValidKey(key) != nil:
		return File{}, errs.Forbiddenf("this file link is not valid")
	case library && !s.Media.Links.Verify(key, t):
		return File{}, errs.Forbiddenf("this file link is not valid or has expired; GET /api/media/{id} gives a fresh one")
	case !library && !s.Media.Files.Verify(key, c):
		return File{}, errs.Forbiddenf("this file link is not valid")
	}
	f := File{purchase: !library, key: key}
	if u, ok, err := s.Media.Blob.Presign(ctx, key, 15*time.Minute); err != nil {
		return File{}, err
	} else if ok {
		f.Redirect = u
		s.FileDelivered(ctx, f)
		return f, nil
	}
	rc, obj, err := s.Media.Blob.Get(ctx, key)
	if errors.Is(err, blob.ErrNotFound) {
		return File{}, errs.NotFoundf("file not found")
	}
	if err != nil {
		return File{}, err
	}
	f.Body, f.Object = rc, obj
	return f, nil
}

// FileDelivered records that a purchase's file reached its caller (a
// download served whole). Deliveries matter to purchases (alreadyPaid),
// not to library files.
func (s *Service) FileDelivered(ctx context.Context, f File) {
	if f.purchase {
		s.deliveries.record(context.WithoutCancel(ctx), delivery{fileKey: f.key})
	}
}
