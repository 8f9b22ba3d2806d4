package runs

import (
	"context"
	"encoding/base64"
	"errors"
	"net/url"
	"strconv"
	"strings"

	"conduit/internal/paging"
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
	// After is a previous page's NextAfter (empty: the newest); Cursor is
	// its older name, still accepted.
	After, Cursor string
	Limit         int
}

// AccountPage is one page of the account's runs (the paging convention of
// internal/paging); NextCursor is NextAfter under its older name, null on
// the last page as it always was.
type AccountPage struct {
	Runs       []Summary `json:"runs"`
	NextAfter  string    `json:"nextAfter,omitempty"`
	NextURL    string    `json:"nextUrl,omitempty"`
	NextCursor *string   `json:"nextCursor"`
}

// AccountHistory reads a page of account's runs. Another account's run id
// as a cursor is refused like a malformed one.
func (s *Service) AccountHistory(ctx context.Context, account string, q AccountQuery) (AccountPage, error) {
	if err := CheckPageQuery(PageQuery{Status: q.Status, Limit: q.Limit}); err != nil {
		return AccountPage{}, err
	}
	tok, err := paging.From(q.After, q.Cursor)
	if err != nil {
		return AccountPage{}, err
	}
	after := ""
	if tok.Value != "" {
		// The token names a run; it is bound to the caller's account.
		b, err := base64.RawURLEncoding.DecodeString(tok.Value)
		id, ok := strings.CutPrefix(string(b), "run:")
		if err != nil || !ok || id == "" {
			return AccountPage{}, tok.Foreign()
		}
		r, err := s.Store.Run(ctx, id)
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			return AccountPage{}, err
		}
		if err != nil || r.AccountID != account {
			return AccountPage{}, tok.Foreign()
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
		page.NextAfter, page.NextCursor = c, &c
		page.NextURL = paging.NextURL(s.BaseURL, "/api/runs", url.Values{"pipelineId": {q.PipelineID}, "status": {q.Status}, "limit": {strconv.Itoa(q.Limit)}}, c)
	}
	page.Runs = make([]Summary, len(rows))
	for i, r := range rows {
		rec := s.Record(r)
		rec.Kind = r.Kind
		page.Runs[i] = Summary{Record: rec, PipelineID: r.PipelineID}
	}
	return page, nil
}
