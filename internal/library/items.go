package library

import (
	"context"
	"net/url"
	"regexp"
	"strconv"

	"conduit/internal/errs"
	"conduit/internal/paging"
	"conduit/internal/store"
)

// ListMediaArgs are list_media's arguments (GET /api/media's query).
type ListMediaArgs struct {
	Kind   string `json:"kind,omitempty" jsonschema:"only items of this kind: video, audio or image"`
	Origin string `json:"origin,omitempty" jsonschema:"only items of this origin: generated, imported, assembled or edited"`
	Limit  int    `json:"limit,omitempty" jsonschema:"at most this many items, 1 to 100 (default 20)"`
	After  string `json:"after,omitempty" jsonschema:"continue after this item id: the previous page's nextAfter"`
}

// MediaList is a page of the library, newest first (the paging convention
// of internal/paging).
type MediaList struct {
	Items []Item `json:"items"`
	// NextAfter continues the listing (as after); NextURL is the same as
	// the HTTP API's next page.
	NextAfter string `json:"nextAfter,omitempty" jsonschema:"pass as after for the next page; absent on the last page"`
	NextURL   string `json:"nextUrl,omitempty"`
}

// MediaRef names an item.
type MediaRef struct {
	ID string `json:"id" jsonschema:"the item's id (med_…), as list_media shows it"`
}

// Kinds of library items.
var kinds = []string{"video", "audio", "image"}

var itemIDRE = regexp.MustCompile(`^med_[0-9a-f]{16}$`)

// checkItemID refuses what cannot be an item id (a 404: no such item).
func checkItemID(id string) error {
	if !itemIDRE.MatchString(id) {
		return notFound("item", strconv.Quote(id))
	}
	return nil
}

// ListMedia lists the account's items, newest first, a page at a time.
func (s *Service) ListMedia(ctx context.Context, account string, in ListMediaArgs) (MediaList, error) {
	if err := s.ready(); err != nil {
		return MediaList{}, err
	}
	switch in.Kind {
	case "", "video", "audio", "image":
	default:
		return MediaList{}, invalid("kind", "kind must be video, audio or image, not %q", in.Kind)
	}
	switch in.Origin {
	case "", store.OriginGenerated, store.OriginImported, store.OriginAssembled, store.OriginEdited:
	default:
		return MediaList{}, invalid("origin", "origin must be generated, imported, assembled or edited, not %q", in.Origin)
	}
	limit := in.Limit
	switch {
	case limit == 0:
		limit = 20
	case limit < 1 || limit > 100:
		return MediaList{}, invalid("limit", "limit must be 1 to 100")
	}
	if in.After != "" && !itemIDRE.MatchString(in.After) {
		return MediaList{}, invalid("after", "after must be an item id (med_…) from the previous page")
	}
	rows, err := s.Store.MediaItemPage(ctx, account, in.Kind, in.Origin, in.After, limit+1)
	if err != nil {
		return MediaList{}, err
	}
	out := MediaList{Items: []Item{}}
	if len(rows) > limit {
		rows = rows[:limit]
		out.NextAfter = rows[limit-1].ID
		out.NextURL = paging.NextURL(s.BaseURL, "/api/media", url.Values{"kind": {in.Kind}, "origin": {in.Origin}, "limit": {strconv.Itoa(limit)}}, out.NextAfter)
	}
	for _, r := range rows {
		out.Items = append(out.Items, s.record(r))
	}
	return out, nil
}

// GetMedia answers one of the account's items with a fresh URL; another
// account's item is not found.
func (s *Service) GetMedia(ctx context.Context, account string, in MediaRef) (Item, error) {
	if err := s.ready(); err != nil {
		return Item{}, err
	}
	if err := checkItemID(in.ID); err != nil {
		return Item{}, err
	}
	it, err := s.Store.MediaItem(ctx, account, in.ID)
	if isNotFound(err) {
		return Item{}, notFound("item", in.ID)
	}
	if err != nil {
		return Item{}, err
	}
	return s.record(it), nil
}

// DeleteMedia removes one of the account's items and its file. Items made
// from it keep naming it in their provenance; its URLs stop working.
func (s *Service) DeleteMedia(ctx context.Context, account string, in MediaRef) error {
	if err := s.ready(); err != nil {
		return err
	}
	if err := checkItemID(in.ID); err != nil {
		return err
	}
	_, err := s.Store.DeleteMediaItem(ctx, account, in.ID, func(key string) error { return s.Blob.Delete(ctx, key) })
	if isNotFound(err) {
		return notFound("item", in.ID)
	}
	return err
}

// itemsOf reads the account's items named in field (items[i]) for a job,
// in order: one missing or another account's is a 404 naming it.
func (s *Service) itemsOf(ctx context.Context, account, field string, ids []string) ([]store.MediaItem, error) {
	out := make([]store.MediaItem, 0, len(ids))
	for i, id := range ids {
		f := field
		if len(ids) > 1 || field == "items" {
			f = field + "[" + strconv.Itoa(i) + "]"
		}
		if !itemIDRE.MatchString(id) {
			return nil, invalid(f, "%q is not an item id (med_…)", id)
		}
		it, err := s.Store.MediaItem(ctx, account, id)
		if isNotFound(err) {
			e := errs.NotFoundf("%s: item %s not found", f, id)
			e.Extra = map[string]any{"field": f}
			return nil, e
		}
		if err != nil {
			return nil, err
		}
		out = append(out, it)
	}
	return out, nil
}
