package pipelines

import (
	"context"

	"conduit/internal/errs"
)

// Model is a published pipeline as OpenAI's models API lists it: chat
// tools call GET {base}/models before anything else, with the base URL
// they were given (a pipeline's chat base).
type Model struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Created int64  `json:"created"`
	OwnedBy string `json:"owned_by"`
	// Name is the pipeline's name (an addition to OpenAI's fields).
	Name string `json:"name"`
}

// Models lists the account's published pipelines, oldest first: a chat
// completion at any of their base URLs answers from that pipeline, so the
// ids are what a client may pick.
func (s *Service) Models(ctx context.Context, account string) ([]Model, error) {
	ps, err := s.Store.Pipelines(ctx, account)
	if err != nil {
		return nil, err
	}
	out := []Model{}
	for _, p := range ps {
		if p.ServingVersion != nil {
			out = append(out, Model{ID: p.ID, Object: "model", Created: p.CreatedAt.Unix(), OwnedBy: account, Name: p.Name})
		}
	}
	return out, nil
}

// Model is one published pipeline of the account, by id.
func (s *Service) Model(ctx context.Context, account, id string) (Model, error) {
	ms, err := s.Models(ctx, account)
	if err != nil {
		return Model{}, err
	}
	for _, m := range ms {
		if m.ID == id {
			return m, nil
		}
	}
	return Model{}, &errs.Error{Kind: errs.NotFound, Code: "model_not_found", Msg: "The model '" + id + "' does not exist: it is not a published pipeline of this account"}
}
