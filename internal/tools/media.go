package tools

import (
	"context"

	"conduit/internal/library"
)

// The media library's tools call internal/library, as /api/media does; on
// a deployment without the library (a nil or failed service) they answer
// that it is unavailable.

func (t *toolset) listMedia(ctx context.Context, c *Call, in library.ListMediaArgs) (library.MediaList, error) {
	return t.Library.ListMedia(ctx, c.Principal.AccountID, in)
}

func (t *toolset) getMedia(ctx context.Context, c *Call, in library.MediaRef) (library.Item, error) {
	return t.Library.GetMedia(ctx, c.Principal.AccountID, in)
}

func (t *toolset) assembleMedia(ctx context.Context, c *Call, in library.AssembleMediaArgs) (library.Job, error) {
	return t.Library.AssembleMedia(ctx, c.Principal.AccountID, in)
}

func (t *toolset) editMedia(ctx context.Context, c *Call, in library.EditMediaArgs) (library.Job, error) {
	return t.Library.EditMedia(ctx, c.Principal.AccountID, in)
}

func (t *toolset) importMedia(ctx context.Context, c *Call, in library.ImportMediaArgs) (library.Job, error) {
	return t.Library.ImportMedia(ctx, c.Principal.AccountID, in)
}

func (t *toolset) getMediaJob(ctx context.Context, c *Call, in library.JobRef) (library.Job, error) {
	return t.Library.GetMediaJob(ctx, c.Principal.AccountID, in)
}
