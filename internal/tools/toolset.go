package tools

import (
	"context"

	"conduit/internal/accounts"
	"conduit/internal/apikey"
	"conduit/internal/library"
	"conduit/internal/payments"
	"conduit/internal/pipelines"
	"conduit/internal/runs"
	"conduit/internal/store"
)

// Deps are the domain services the tools call.
type Deps struct {
	Pipelines *pipelines.Service
	Runs      *runs.Service
	Accounts  *accounts.Service
	Payments  *payments.Service
	Library   *library.Service // nil: the media tools answer unavailable
	Store     *store.Store
	// BaseURL and TopUpURL are the API's public addresses.
	BaseURL, TopUpURL string
	// Internal is told about failures that are not the caller's; the
	// caller hears only that something went wrong on our side.
	Internal func(ctx context.Context, tool string, err error)
}

// toolset is the receiver of the tool functions: their dependencies.
type toolset struct{ Deps }

// New registers every tool. Names are stable: docs/mcp.md documents each
// with its arguments, result, scope and annotations.
func New(d Deps) *Registry {
	r := &Registry{internal: d.Internal}
	t := &toolset{d}

	Add(r, Meta{Name: "list_pipelines", Title: "List pipelines", Scope: apikey.PipelinesRead, ReadOnly: true, Idempotent: true,
		Description: "Lists the account's pipelines, oldest first: id, name, servingVersion (the published version that serves runs; null if never published), createdAt, updatedAt. Use get_pipeline for a pipeline's draft, contract and versions."},
		t.listPipelines)
	Add(r, Meta{Name: "get_pipeline", Title: "Get a pipeline", Scope: apikey.PipelinesRead, ReadOnly: true, Idempotent: true,
		Description: "Reads one pipeline in full: its editable draft graph with draftValidation (valid, and every problem naming node and field), the contract of the serving version (input keys with required flags, output keys: what run_pipeline takes and gives) and its published versions, newest first."},
		t.getPipeline)
	Add(r, Meta{Name: "create_pipeline", Title: "Create a pipeline", Scope: apikey.PipelinesWrite,
		Description: "Creates a pipeline with a name and, optionally, a draft graph {nodes, edges} (docs/pipelines.md: node types input, prompt, model, guardrail, output, and the generation nodes speech, music and video (docs/media.md); templates use {{nodeId}} and need an edge from that node). The draft must be a graph but need not be valid yet; nothing serves until publish_pipeline. Answers the full pipeline with draftValidation."},
		t.createPipeline)
	Add(r, Meta{Name: "update_draft", Title: "Replace a pipeline's draft", Scope: apikey.PipelinesWrite, Destructive: true, Idempotent: true,
		Description: "Replaces a pipeline's draft graph (and its name, when given). A draft that parses is saved even when invalid; draftValidation in the answer lists what to fix. What serves runs does not change until publish_pipeline."},
		t.updateDraft)
	Add(r, Meta{Name: "validate_draft", Title: "Validate a draft", Scope: apikey.PipelinesWrite, ReadOnly: true, Idempotent: true,
		Description: "Checks a pipeline's saved draft, or the graph given as draft without saving it, against the graph rules and the model catalog. Answers valid, every problem (node, field, message) and the contract the draft would have. Saves nothing."},
		t.validateDraft)
	Add(r, Meta{Name: "publish_pipeline", Title: "Publish the draft", Scope: apikey.PipelinesWrite,
		Description: "Publishes the pipeline's saved draft as the next version, which then serves every run. An invalid draft publishes nothing and the error lists its problems. Answers the pipeline with its new servingVersion."},
		t.publishPipeline)
	Add(r, Meta{Name: "rollback_pipeline", Title: "Roll back to a version", Scope: apikey.PipelinesWrite, Destructive: true, Idempotent: true,
		Description: "Makes an earlier published version serve runs again (any published version number; get_pipeline lists them). The draft is not touched. Answers the pipeline with its servingVersion."},
		t.rollbackPipeline)
	Add(r, Meta{Name: "run_pipeline", Title: "Run a pipeline", Scope: apikey.PipelinesRun, OpenWorld: true,
		Description: "Starts a run of the pipeline's serving version with inputs keyed by its contract's input keys (get_pipeline shows them). The run holds its most possible cost from the account's credit and is charged its actual cost only if it succeeds. With waitSeconds (1 to 60) the tool waits for the run to finish, sending progress notifications per node, and answers the finished run with outputs, usage and cost; otherwise (or if it is still running then) it answers status running: call get_run later. An idempotencyKey makes retries return the same run instead of starting another.",
		Refine:      refineRun},
		t.runPipeline)
	Add(r, Meta{Name: "get_run", Title: "Get a run", Scope: apikey.PipelinesRead, ReadOnly: true, Idempotent: true,
		Description: "Reads one run by its runId: status (running, success, error, partial), the version that served it, per-node trace (status, timing, tokens, cost; live progress while it runs), usage (prompt, completion, total tokens, costUsd) and outputs once finished. Long text outputs are cut (listed in truncatedOutputs)."},
		t.getRun)
	Add(r, Meta{Name: "list_runs", Title: "List a pipeline's runs", Scope: apikey.PipelinesRead, ReadOnly: true, Idempotent: true,
		Description: "Lists a pipeline's run history, newest first, optionally only runs of one status. Pages hold limit runs (1 to 100, default 20); when nextAfter is set, call again with after = nextAfter for the next page.",
		Refine:      refineListRuns},
		t.listRuns)
	Add(r, Meta{Name: "estimate_run_cost", Title: "Estimate a run's cost", Scope: apikey.PipelinesRead, ReadOnly: true, Idempotent: true,
		Description: "Prices a run before starting it, from the model catalog and the real token counts of the prompts rendered with these inputs: minUsd is the least a successful run costs (prompt tokens only), maxUsd the most, which is also the credit the run holds while it runs. Failed runs are never charged. Says whether the balance covers the hold. Estimates the serving version, or the saved draft with draft: true."},
		t.estimateRunCost)
	Add(r, Meta{Name: "get_credit_balance", Title: "Get the credit balance", ReadOnly: true, Idempotent: true,
		Description: "Reads the account's spendable prepaid credit in USD (credit held by running work is not in it), the page where a human buys more, and, where enabled, how an agent tops up with an x402 payment."},
		t.getCreditBalance)
	Add(r, Meta{Name: "create_api_key", Title: "Create an API key", Scope: apikey.KeysManage,
		Description: "Mints an API key for the connected account, for programs that call the REST API or this server with Authorization: Bearer <key>. permissions are scopes (pipelines:read, pipelines:write, pipelines:run, keys:manage, …; default pipelines:read and pipelines:run) and can be at most the ones this connection holds. The secret is in key and is shown only this once: hand it to the user to store."},
		t.createAPIKey)

	Add(r, Meta{Name: "list_media", Title: "List the media library", Scope: apikey.MediaRead, ReadOnly: true, Idempotent: true,
		Description: "Lists the account's media library, newest first: files its pipelines generated (speech, music and video nodes), files it imported, and files it assembled or edited, each with kind, content type, size, duration, a fresh expiring file URL and its origin (which run and node, which URL, or which items and operation). Pages hold limit items (1 to 100, default 20); when nextAfter is set, call again with after = nextAfter."},
		t.listMedia)
	Add(r, Meta{Name: "get_media", Title: "Get a media item", Scope: apikey.MediaRead, ReadOnly: true, Idempotent: true,
		Description: "Reads one library item by id (med_…): kind, content type, size, duration, its origin, and a fresh file URL that expires (get it again for a new one)."},
		t.getMedia)
	Add(r, Meta{Name: "assemble_media", Title: "Assemble media", Scope: apikey.MediaWrite, OpenWorld: true,
		Description: "Combines library items into a new item as a durable job: concat (one after another), crossfade, music_under (lay the second item's sound under the first) or narrate (a voice over the first item, whose sound is lowered). The items stay as they are. Costs the job price (docs/media.md), held while it runs and charged only if it succeeds. With waitSeconds the tool answers the finished job with its new item; otherwise call get_media_job later."},
		t.assembleMedia)
	Add(r, Meta{Name: "edit_media", Title: "Edit a media item", Scope: apikey.MediaWrite, OpenWorld: true,
		Description: "Makes a new library item from one: trim (start..end seconds), volume (scale by gain), transcode (another format) or extract_audio (a video's sound track). The original stays. Costs the job price, charged only if it succeeds. With waitSeconds the tool answers the finished job with its new item; otherwise call get_media_job later."},
		t.editMedia)
	Add(r, Meta{Name: "import_media", Title: "Import media from a URL", Scope: apikey.MediaWrite, OpenWorld: true,
		Description: "Fetches a public https URL of a video, audio file or image into the library (judged by its content; private and internal addresses are refused). Costs the job price, charged only if it succeeds. With waitSeconds the tool answers the finished job with its new item."},
		t.importMedia)
	Add(r, Meta{Name: "get_media_job", Title: "Get a media job", Scope: apikey.MediaRead, ReadOnly: true, Idempotent: true,
		Description: "Reads an import, assembly or edit job by id (job_…): running, or finished with its new item, or its error."},
		t.getMediaJob)
	return r
}
