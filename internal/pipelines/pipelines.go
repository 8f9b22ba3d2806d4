// Package pipelines holds the rules of authoring pipelines: ownership,
// drafts (saved even when invalid), validation against the model catalog,
// publishing a valid draft as the next version, rollback, and the records
// the API and the tool server show for them. Storage is the store's job;
// HTTP and MCP are the callers'.
package pipelines

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"time"
	"unicode/utf8"

	"conduit/internal/errs"
	"conduit/internal/graph"
	"conduit/internal/library"
	"conduit/internal/models"
	"conduit/internal/quota"
	"conduit/internal/store"
)

// Service applies the rules on top of the store.
type Service struct {
	Store   *store.Store
	Catalog *models.Catalog
	// Library judges generation nodes against the media menus (nil: media
	// is off, and every generation node is a problem).
	Library *library.Service
	// Limit bounds the pipelines an account holds (quota.pipelines; 0:
	// no limit).
	Limit int64
}

// EmptyGraph is the draft of a pipeline created without one.
var EmptyGraph = json.RawMessage(`{"nodes":[],"edges":[]}`)

// MaxVersion is the largest pipeline version number (a 32-bit integer).
const MaxVersion = math.MaxInt32

// MaxNameChars bounds a pipeline's name.
const MaxNameChars = 200

// Problem is one thing wrong with a draft, naming its node and field.
type Problem struct {
	Node    string `json:"node,omitempty" jsonschema:"the node's id, when the problem is in one node"`
	Field   string `json:"field,omitempty" jsonschema:"the node's field at fault"`
	Message string `json:"message" jsonschema:"what is wrong"`
}

// Validation is a draft's check against the graph rules and the catalog.
type Validation struct {
	Valid    bool      `json:"valid" jsonschema:"true when the draft can be published"`
	Problems []Problem `json:"problems" jsonschema:"every problem at once; empty when valid"`
}

// InputSpec is one input key of a contract.
type InputSpec struct {
	Key         string `json:"key"`
	Required    bool   `json:"required"`
	Description string `json:"description,omitempty"`
}

// Contract is what a pipeline takes and gives: input keys (from its input
// nodes) and output keys (from its output nodes).
type Contract struct {
	Inputs  []InputSpec `json:"inputs" jsonschema:"the keys of the inputs object a run takes"`
	Outputs []string    `json:"outputs" jsonschema:"the keys of the outputs object a finished run gives"`
}

// Version is a published snapshot.
type Version struct {
	Version   int             `json:"version"`
	CreatedAt time.Time       `json:"createdAt"`
	Serving   bool            `json:"serving" jsonschema:"true for the version that serves calls"`
	Graph     json.RawMessage `json:"graph,omitempty"`
	Contract  *Contract       `json:"contract,omitempty"`
	Note      string          `json:"note,omitempty" jsonschema:"what its publisher said of the version"`
}

// Row is a pipeline as it is stored: what Owned loads and the changes
// return, and what runs are started from.
type Row = store.Pipeline

// Pipeline is a pipeline's record. Lists carry the summary fields only;
// the full record adds the draft with its validation, the serving
// version's contract and the published versions, newest first.
type Pipeline struct {
	ID              string          `json:"id"`
	Name            string          `json:"name"`
	ServingVersion  *int            `json:"servingVersion" jsonschema:"the published version that serves calls; null until the first publish"`
	CreatedAt       time.Time       `json:"createdAt"`
	UpdatedAt       time.Time       `json:"updatedAt"`
	Draft           json.RawMessage `json:"draft,omitempty" jsonschema:"the editable graph; never served"`
	DraftValidation *Validation     `json:"draftValidation,omitempty"`
	Contract        *Contract       `json:"contract,omitempty" jsonschema:"the serving version's contract"`
	Versions        []Version       `json:"versions,omitempty"`
}

// Summary is the list form of a pipeline.
func Summary(p store.Pipeline) Pipeline {
	return Pipeline{ID: p.ID, Name: p.Name, ServingVersion: p.ServingVersion, CreatedAt: p.CreatedAt, UpdatedAt: p.UpdatedAt}
}

// ContractOf is g's contract in its record form.
func ContractOf(g *graph.Graph) *Contract {
	c := g.Contract()
	out := &Contract{Inputs: []InputSpec{}, Outputs: c.Outputs}
	if out.Outputs == nil {
		out.Outputs = []string{}
	}
	for _, in := range c.Inputs {
		out.Inputs = append(out.Inputs, InputSpec{Key: in.Key, Required: in.Required, Description: in.Description})
	}
	return out
}

// Owned reads the pipeline id on behalf of account: NotFound when it does
// not exist, Forbidden when another account owns it (spec §5).
func (s *Service) Owned(ctx context.Context, account, id string) (store.Pipeline, error) {
	p, err := s.Store.Pipeline(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return p, errs.NotFoundf("pipeline %q not found", id)
	}
	if err != nil {
		return p, err
	}
	if p.AccountID != account {
		return p, errs.Forbiddenf("this API key's account does not own pipeline %q", p.ID)
	}
	return p, nil
}

// List is the account's pipelines, oldest first, in summary form.
func (s *Service) List(ctx context.Context, account string) ([]Pipeline, error) {
	ps, err := s.Store.Pipelines(ctx, account)
	if err != nil {
		return nil, err
	}
	out := make([]Pipeline, len(ps))
	for i, p := range ps {
		out[i] = Summary(p)
	}
	return out, nil
}

// Validate checks a graph against the graph rules and the model catalog.
func (s *Service) Validate(g *graph.Graph) *Validation {
	v := &Validation{Valid: true, Problems: []Problem{}}
	err := g.Validate(s.Catalog.Known, s.Library.CheckNode)
	if err == nil {
		return v
	}
	v.Valid = false
	var ve *graph.ValidationError
	if errors.As(err, &ve) {
		for _, p := range ve.Problems {
			v.Problems = append(v.Problems, Problem{Node: p.NodeID, Field: p.Field, Message: p.Message})
		}
	} else {
		v.Problems = append(v.Problems, Problem{Message: err.Error()})
	}
	return v
}

// ParseGraph reads a draft, as an Invalid error when it is not a graph.
func ParseGraph(raw json.RawMessage) (*graph.Graph, error) {
	g, err := graph.Parse(raw)
	if err != nil {
		return nil, errs.Invalidf("draft is not a pipeline graph: %v", err)
	}
	return g, nil
}

// absent says a JSON value was not sent.
func absent(raw json.RawMessage) bool { return len(raw) == 0 || string(raw) == "null" }

// CheckName refuses an empty or overlong pipeline name.
func CheckName(name string) (string, error) {
	if name == "" {
		return "", errs.Invalidf("name is required")
	}
	if utf8.RuneCountInString(name) > MaxNameChars {
		return "", errs.Invalidf("name must be at most %d characters", MaxNameChars)
	}
	return name, nil
}

// CheckVersion refuses a version number that cannot exist.
func CheckVersion(n int) error {
	if n < 1 || n > MaxVersion {
		return errs.Invalidf("version must be a published version number (1 to %d)", MaxVersion)
	}
	return nil
}

// Create stores a new, unpublished pipeline; without a draft it starts
// empty. A draft must parse as a graph but need not be valid yet.
func (s *Service) Create(ctx context.Context, account, name string, draft json.RawMessage) (store.Pipeline, error) {
	name, err := CheckName(name)
	if err != nil {
		return store.Pipeline{}, err
	}
	if absent(draft) {
		draft = EmptyGraph
	} else if _, err := ParseGraph(draft); err != nil {
		return store.Pipeline{}, err
	}
	slot, err := s.Store.TakeSlot(ctx, account, quota.Pipelines, s.Limit)
	if err != nil {
		return store.Pipeline{}, err
	}
	defer slot.Release(ctx)
	return slot.CreatePipeline(ctx, account, name, draft)
}

// Detail is p's full record.
func (s *Service) Detail(ctx context.Context, p store.Pipeline) (Pipeline, error) {
	out := Pipeline{ID: p.ID, Name: p.Name, ServingVersion: p.ServingVersion, CreatedAt: p.CreatedAt, UpdatedAt: p.UpdatedAt, Draft: p.Draft}
	if g, err := graph.Parse(p.Draft); err == nil {
		out.DraftValidation = s.Validate(g)
	}
	versions, err := s.Store.Versions(ctx, p.ID)
	if err != nil {
		return out, err
	}
	out.Versions = []Version{}
	for _, v := range versions {
		out.Versions = append(out.Versions, Version{Version: v.Version, CreatedAt: v.CreatedAt, Serving: p.ServingVersion != nil && *p.ServingVersion == v.Version, Note: v.Note})
	}
	if p.ServingVersion != nil {
		v, err := s.Store.Version(ctx, p.ID, *p.ServingVersion)
		if err != nil {
			return out, err
		}
		if g, err := graph.Parse(v.Graph); err == nil {
			out.Contract = ContractOf(g)
		}
	}
	return out, nil
}

// SaveDraft replaces p's draft (and its name, when name is not empty). A
// draft that parses is saved even when invalid (its validation says what
// to fix); what serves never changes.
func (s *Service) SaveDraft(ctx context.Context, p store.Pipeline, name string, draft json.RawMessage) (store.Pipeline, error) {
	if absent(draft) {
		return p, errs.Invalidf("draft is required")
	}
	if name != "" {
		if _, err := CheckName(name); err != nil {
			return p, err
		}
	}
	if _, err := ParseGraph(draft); err != nil {
		return p, err
	}
	return s.Store.SaveDraft(ctx, p.ID, name, draft)
}

// Publish snapshots p's draft as version N+1, which then serves. An
// invalid draft publishes nothing: the Invalid error lists its problems.
func (s *Service) Publish(ctx context.Context, p store.Pipeline, note string) (store.Pipeline, error) {
	if n := utf8.RuneCountInString(note); n > MaxNoteChars {
		return p, &errs.Error{Kind: errs.Invalid, Msg: fmt.Sprintf("note must be at most %d characters, got %d; nothing was published", MaxNoteChars, n), Extra: map[string]any{"field": "note"}}
	}
	g, err := ParseGraph(p.Draft)
	if err != nil {
		return p, err
	}
	if v := s.Validate(g); !v.Valid {
		return p, &errs.Error{Kind: errs.Invalid, Msg: "the draft is not valid; nothing was published", Extra: map[string]any{"problems": v.Problems}}
	}
	if _, err := s.Store.Publish(ctx, p.ID, p.Draft, note); err != nil {
		return p, err
	}
	return s.Store.Pipeline(ctx, p.ID)
}

// MaxNoteChars bounds a version's note.
const MaxNoteChars = 500

// Rollback makes an earlier published version of p serve again.
func (s *Service) Rollback(ctx context.Context, p store.Pipeline, version *int) (store.Pipeline, error) {
	if version == nil {
		return p, errs.Invalidf("version is required and must be a published version number")
	}
	if err := CheckVersion(*version); err != nil {
		return p, err
	}
	if err := s.Store.Rollback(ctx, p.ID, *version); errors.Is(err, store.ErrNotFound) {
		return p, errs.NotFoundf("pipeline %q has no version %d", p.ID, *version)
	} else if err != nil {
		return p, err
	}
	return s.Store.Pipeline(ctx, p.ID)
}

// Version is one published snapshot of p with its graph and contract.
func (s *Service) Version(ctx context.Context, p store.Pipeline, n int) (Version, error) {
	if err := CheckVersion(n); err != nil {
		return Version{}, err
	}
	v, err := s.Store.Version(ctx, p.ID, n)
	if errors.Is(err, store.ErrNotFound) {
		return Version{}, errs.NotFoundf("pipeline %q has no version %d", p.ID, n)
	}
	if err != nil {
		return Version{}, err
	}
	out := Version{Version: v.Version, CreatedAt: v.CreatedAt, Serving: p.ServingVersion != nil && *p.ServingVersion == v.Version, Graph: v.Graph, Note: v.Note}
	if g, err := graph.Parse(v.Graph); err == nil {
		out.Contract = ContractOf(g)
	}
	return out, nil
}
