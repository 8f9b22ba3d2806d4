package runs

import (
	"context"
	"encoding/base64"
	"errors"
	"strings"

	"conduit/internal/errs"
	"conduit/internal/store"
)

// Summary is a run in the account-wide history: its record and the
// pipeline it ran.
type Summary struct {
	Record
	PipelineID string `json:"pipelineId"`
}

// AccountQuery asks for a page of the account's runs over every pipeline,
// newest first.
type AccountQuery struct {
	// PipelineID and Status filter when not empty.
	PipelineID, Status string
	// Cursor is a previous page's NextCursor (empty: the newest).
	Cursor string
	Limit  int
}

// AccountPage is one page of the account's runs; NextCursor asks for the
// next (nil on the last page).
type AccountPage struct {
	Runs       []Summary `json:"runs"`
	NextCursor *string   `json:"nextCursor"`
}

// AccountHistory reads a page of account's runs. Another account's run id
// as a cursor is refused like a malformed one.
func (s *Service) AccountHistory(ctx context.Context, account string, q AccountQuery) (AccountPage, error) {
	if err := CheckPageQuery(PageQuery{Status: q.Status, Limit: q.Limit}); err != nil {
		return AccountPage{}, err
	}
	after := ""
	if q.Cursor != "" {
		b, err := base64.RawURLEncoding.DecodeString(q.Cursor)
		id, ok := strings.CutPrefix(string(b), "run:")
		if err != nil || !ok || id == "" {
			return AccountPage{}, errs.Invalidf("cursor is not one this API gave out (use nextCursor of the previous page)")
		}
		r, err := s.Store.Run(ctx, id)
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			return AccountPage{}, err
		}
		if err != nil || r.AccountID != account {
			return AccountPage{}, errs.Invalidf("cursor is not one this API gave out (use nextCursor of the previous page)")
		}
		after = id
	}
	rows, err := s.Store.AccountRunPage(ctx, account, q.PipelineID, q.Status, after, q.Limit+1)
	if err != nil {
		return AccountPage{}, err
	}
	var page AccountPage
	if len(rows) > q.Limit {
		rows = rows[:q.Limit]
		c := base64.RawURLEncoding.EncodeToString([]byte("run:" + rows[len(rows)-1].RunID))
		page.NextCursor = &c
	}
	page.Runs = make([]Summary, len(rows))
	for i, r := range rows {
		rec := s.Record(r)
		rec.Kind = r.Kind
		page.Runs[i] = Summary{Record: rec, PipelineID: r.PipelineID}
	}
	return page, nil
}
