package tools

import (
	"context"
	"encoding/json"

	"conduit/internal/graph"
	"conduit/internal/pipelines"
)

// NoArgs is the argument object of a tool that takes none.
type NoArgs struct{}

// PipelineRef names a pipeline.
type PipelineRef struct {
	PipelineID string `json:"pipelineId" jsonschema:"the pipeline's id (pl_…), as list_pipelines shows it"`
}

// PipelineList answers list_pipelines.
type PipelineList struct {
	Pipelines []pipelines.Pipeline `json:"pipelines"`
}

func (t *toolset) listPipelines(ctx context.Context, c *Call, _ NoArgs) (PipelineList, error) {
	ps, err := t.Pipelines.List(ctx, c.Principal.AccountID)
	return PipelineList{Pipelines: ps}, err
}

func (t *toolset) getPipeline(ctx context.Context, c *Call, in PipelineRef) (pipelines.Pipeline, error) {
	p, err := t.Pipelines.Owned(ctx, c.Principal.AccountID, in.PipelineID)
	if err != nil {
		return pipelines.Pipeline{}, err
	}
	return t.Pipelines.Detail(ctx, p)
}

// CreatePipelineArgs are create_pipeline's arguments.
type CreatePipelineArgs struct {
	Name  string          `json:"name" jsonschema:"the pipeline's name, 1 to 200 characters"`
	Draft json.RawMessage `json:"draft,omitempty"`
}

func (t *toolset) createPipeline(ctx context.Context, c *Call, in CreatePipelineArgs) (pipelines.Pipeline, error) {
	p, err := t.Pipelines.Create(ctx, c.Principal.AccountID, in.Name, in.Draft)
	if err != nil {
		return pipelines.Pipeline{}, err
	}
	return t.Pipelines.Detail(ctx, p)
}

// UpdateDraftArgs are update_draft's arguments.
type UpdateDraftArgs struct {
	PipelineID string          `json:"pipelineId" jsonschema:"the pipeline's id"`
	Draft      json.RawMessage `json:"draft"`
	Name       string          `json:"name,omitempty" jsonschema:"a new name; omit to keep the name"`
}

func (t *toolset) updateDraft(ctx context.Context, c *Call, in UpdateDraftArgs) (pipelines.Pipeline, error) {
	p, err := t.Pipelines.Owned(ctx, c.Principal.AccountID, in.PipelineID)
	if err != nil {
		return pipelines.Pipeline{}, err
	}
	if p, err = t.Pipelines.SaveDraft(ctx, p, in.Name, in.Draft); err != nil {
		return pipelines.Pipeline{}, err
	}
	return t.Pipelines.Detail(ctx, p)
}

// ValidateDraftArgs are validate_draft's arguments.
type ValidateDraftArgs struct {
	PipelineID string          `json:"pipelineId" jsonschema:"the pipeline's id"`
	Draft      json.RawMessage `json:"draft,omitempty"`
}

// DraftCheck answers validate_draft.
type DraftCheck struct {
	pipelines.Validation
	Contract *pipelines.Contract `json:"contract,omitempty" jsonschema:"the contract the draft would have once published"`
}

func (t *toolset) validateDraft(ctx context.Context, c *Call, in ValidateDraftArgs) (DraftCheck, error) {
	p, err := t.Pipelines.Owned(ctx, c.Principal.AccountID, in.PipelineID)
	if err != nil {
		return DraftCheck{}, err
	}
	draft := p.Draft
	if len(in.Draft) > 0 {
		draft = in.Draft
	}
	g, err := graph.Parse(draft)
	if err != nil {
		// A draft that is not a graph at all is this tool's answer, not
		// a failure of the call.
		return DraftCheck{Validation: pipelines.Validation{Problems: []pipelines.Problem{{Message: "draft is not a pipeline graph: " + err.Error()}}}}, nil
	}
	return DraftCheck{Validation: *t.Pipelines.Validate(g), Contract: pipelines.ContractOf(g)}, nil
}

func (t *toolset) publishPipeline(ctx context.Context, c *Call, in PipelineRef) (pipelines.Pipeline, error) {
	p, err := t.Pipelines.Owned(ctx, c.Principal.AccountID, in.PipelineID)
	if err != nil {
		return pipelines.Pipeline{}, err
	}
	if p, err = t.Pipelines.Publish(ctx, p, ""); err != nil {
		return pipelines.Pipeline{}, err
	}
	return t.Pipelines.Detail(ctx, p)
}

// RollbackArgs are rollback_pipeline's arguments.
type RollbackArgs struct {
	PipelineID string `json:"pipelineId" jsonschema:"the pipeline's id"`
	Version    int    `json:"version" jsonschema:"the published version that should serve"`
}

func (t *toolset) rollbackPipeline(ctx context.Context, c *Call, in RollbackArgs) (pipelines.Pipeline, error) {
	p, err := t.Pipelines.Owned(ctx, c.Principal.AccountID, in.PipelineID)
	if err != nil {
		return pipelines.Pipeline{}, err
	}
	if p, err = t.Pipelines.Rollback(ctx, p, &in.Version); err != nil {
		return pipelines.Pipeline{}, err
	}
	return t.Pipelines.Detail(ctx, p)
}
