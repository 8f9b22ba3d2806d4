// Package runs holds the rules of running a published pipeline: which
// snapshot serves, what inputs it takes, how much credit a run holds,
// admission (the run workflow started with its admission update, so the run
// row and its hold are the workflow's first step), the run record callers
// see, live per-node progress from the open workflow, run history pages and
// cost estimates. The invoke and chat endpoints and the tool server all
// start and read runs through it.
//
// Like frontend/, it uses workflows/ only for names, inputs and queries;
// nothing under workflows/ or activities/ imports it.
package runs

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	lru "github.com/hashicorp/golang-lru/v2"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"conduit/internal/config"
	"conduit/internal/errs"
	"conduit/internal/graph"
	"conduit/internal/library"
	"conduit/internal/logging"
	"conduit/internal/mediakind"
	"conduit/internal/models"
	"conduit/internal/money"
	"conduit/internal/paging"
	"conduit/internal/store"
	"conduit/internal/temporalx"
	"conduit/workflows"
)

// Service starts and reads pipeline runs.
type Service struct {
	Store    *store.Store
	Temporal client.Client
	Catalog  *models.Catalog
	Runs     config.Runs
	// Library prices, bounds and allows generation nodes (nil: media is
	// off, and runs of graphs with generation nodes are refused).
	Library *library.Service
	// BaseURL is the API's public address (status URLs); TopUpURL is where
	// a human buys credit (the 402 answer points there).
	BaseURL  string
	TopUpURL string
	// Deltas wakes streamed chat completions (stream.go).
	Deltas *store.DeltaHub

	snapshotsOnce sync.Once
	snapshots     *lru.Cache[snapshotKey, snapshot]
}

// A published version never changes (nothing updates pipeline_versions), so
// its row and parsed graph are kept and every call of a pipeline after the
// first skips a read and a parse. Looked up only after the caller's
// ownership of the pipeline has been checked.
type snapshotKey struct {
	pipeline string
	version  int
}

type snapshot struct {
	v store.PipelineVersion
	g *graph.Graph
}

// snapshotsKept bounds the cache: a snapshot is a few KB parsed.
const snapshotsKept = 1024

// CheckRunID refuses a run id without its '#' with a 404 that says how to
// send one: every run id has one, so such an id had its '#' sent raw, which
// starts the URL's fragment and cut the query there.
func CheckRunID(runID string) error {
	if strings.Contains(runID, "#") {
		return nil
	}
	return errs.NotFoundf("run %q not found: a runId has the form <timestamp>#<8 hex>, and its '#' must be "+
		"URL-encoded as %%23 (runId=%s%%23…); sent raw, everything from '#' on never reaches the server. Use statusUrl exactly as given", runID, url.QueryEscape(runID))
}

// NewRunID is `<ISO timestamp>#<8 hex>` (spec §2.2).
func NewRunID(now time.Time) string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return now.UTC().Format("2006-01-02T15:04:05.000Z") + "#" + hex.EncodeToString(b)
}

// StatusURL is the ready-made poll URL of a run (its '#' as %23).
func (s *Service) StatusURL(pipelineID, runID string) string {
	return s.BaseURL + "/api/pipelines/" + url.PathEscape(pipelineID) + "/invoke?runId=" + url.QueryEscape(runID)
}

// Target is a pipeline's serving snapshot, parsed.
type Target struct {
	Pipeline store.Pipeline
	Graph    *graph.Graph
	Version  store.PipelineVersion
}

// Serving returns the published snapshot that serves p, or the spec's
// Conflict when there is none.
func (s *Service) Serving(ctx context.Context, p store.Pipeline) (*Target, error) {
	if p.ServingVersion == nil {
		return nil, errs.Conflictf("pipeline %q is not published; publish a version first", p.ID)
	}
	s.snapshotsOnce.Do(func() { s.snapshots, _ = lru.New[snapshotKey, snapshot](snapshotsKept) })
	key := snapshotKey{p.ID, *p.ServingVersion}
	if snap, ok := s.snapshots.Get(key); ok {
		return &Target{Pipeline: p, Graph: snap.g, Version: snap.v}, nil
	}
	v, err := s.Store.Version(ctx, p.ID, *p.ServingVersion)
	if err != nil {
		return nil, err
	}
	g, err := graph.Parse(v.Graph)
	if err != nil {
		return nil, err
	}
	s.snapshots.Add(key, snapshot{v, g})
	return &Target{Pipeline: p, Graph: g, Version: v}, nil
}

// Callable is Serving for the invoke API: the snapshot must also have an
// input and an output node to take calls.
func (s *Service) Callable(ctx context.Context, p store.Pipeline) (*Target, error) {
	t, err := s.Serving(ctx, p)
	if err != nil {
		return nil, err
	}
	if err := t.Graph.Servable(); err != nil {
		return nil, errs.Conflictf("version %d of pipeline %q cannot take API calls: %v", t.Version.Version, p.ID, err)
	}
	return t, nil
}

// CheckInputs reads a run's inputs object against g's contract:
// required keys must be there (all missing ones are named), unknown keys
// are ignored, non-strings become compact JSON.
func CheckInputs(g *graph.Graph, raw json.RawMessage) (map[string]string, error) {
	var obj map[string]any
	if len(raw) == 0 || json.Unmarshal(raw, &obj) != nil || obj == nil {
		return nil, errs.Invalidf("inputs is required and must be a JSON object")
	}
	inputs, err := graph.ValidateInputs(g.Contract(), obj)
	if err != nil {
		return nil, errs.Invalidf("%v", err)
	}
	return inputs, nil
}

// HoldFor is the most a run of g can cost: every model node at a full
// context window plus its maxTokens, every generation node at its menu
// price. The run holds this much and is charged its actual cost.
func (s *Service) HoldFor(g *graph.Graph) money.Micros {
	// Generation nodes at their menu price (a speech template at the
	// longest text it may render to).
	total, _ := s.Library.Plan(g)
	for _, n := range g.Nodes {
		if n.Type != "model" {
			continue
		}
		if m, ok := s.Catalog.Model(n.Model); ok {
			total += m.MaxCost(n.MaxTokens)
		}
	}
	return total
}

// inlineNodes are g's model nodes whose calls are short enough to run
// inside the workflow task (models.Model.Inline).
func (s *Service) inlineNodes(g *graph.Graph) []string {
	var ids []string
	for _, n := range g.Nodes {
		if m, ok := s.Catalog.Model(n.Model); ok && n.Type == "model" && m.Inline(n.MaxTokens) {
			ids = append(ids, n.ID)
		}
	}
	return ids
}

// Request is a run a caller asked for, before anything is written.
type Request struct {
	// Kind is the surface that asked: invoke, chat, tool.
	Kind           string
	Inputs         map[string]string
	IdempotencyKey string
	// StreamNode names the model node whose tokens are published live.
	StreamNode string
	// RunID and StartedAt, when set (NewRunID), name the new run before
	// it is admitted, so a streamed chat can read its tokens while its
	// admission is still being answered.
	RunID     string
	StartedAt time.Time
}

// requestHash is what an Idempotency-Key is bound to: the kind of call and
// its inputs (canonical JSON: sorted keys).
func requestHash(kind string, inputs map[string]string) string {
	b, _ := json.Marshal(inputs)
	sum := sha256.Sum256(append([]byte(kind+"\n"), b...))
	return hex.EncodeToString(sum[:])
}

// admitWait is how long a caller waits for its run to be admitted; the
// workflow itself refuses to admit later than workflows.AdmitWithin, and
// a run without an Idempotency-Key later than workflows.AnswerWithin,
// well inside this wait: such a caller's 503 says nothing was charged.
const admitWait = 30 * time.Second

// Start starts the run's workflow and waits for its admission, its first
// step: the run recorded and its credit held, or why not
// (Update-with-Start). With an Idempotency-Key every retry reaches the same
// workflow, or the run it admitted; existing says so.
func (s *Service) Start(ctx context.Context, account string, t *Target, rr Request) (store.Run, bool, error) {
	p, v, g := t.Pipeline, t.Version, t.Graph
	if err := s.Library.Runnable(g); err != nil {
		return store.Run{}, false, err
	}
	_, bounds := s.Library.Plan(g)
	now := time.Now()
	runID := NewRunID(now)
	if rr.RunID != "" {
		now, runID = rr.StartedAt, rr.RunID
	}
	in := workflows.RunInput{
		RunID: runID, PipelineID: p.ID, Version: v.Version, AccountID: account,
		Graph: v.Graph, Inputs: rr.Inputs, Held: s.HoldFor(g), Generation: bounds,
		ModelTimeout: s.Runs.ModelTimeout, ModelAttempts: int32(s.Runs.ModelAttempts),
		StreamNode: rr.StreamNode, InlineNodes: s.inlineNodes(g),
		Kind: rr.Kind, StartedAt: now, IdempotencyKey: rr.IdempotencyKey, RequestHash: requestHash(rr.Kind, rr.Inputs),
	}
	in.WorkflowID = workflows.PipelineRunWorkflowID(in.RunID)
	if rr.IdempotencyKey != "" {
		in.WorkflowID = workflows.KeyedRunWorkflowID(account, p.ID, rr.IdempotencyKey)
	}
	log := logging.From(ctx).With("run_id", in.RunID, "workflow_id", in.WorkflowID, "pipeline_id", p.ID, "version", v.Version)
	tc := s.Temporal
	waitCtx, cancel := context.WithTimeout(ctx, admitWait)
	defer cancel()
	var adm workflows.RunAdmission
	var err error
	// A workflow that closes just as a retry arrives refuses its update;
	// the next attempt starts a new execution, which finds the run.
	for attempt := 0; attempt < 3; attempt++ {
		start := tc.NewWithStartWorkflowOperation(client.StartWorkflowOptions{
			ID: in.WorkflowID, TaskQueue: workflows.PipelineQueue,
			WorkflowIDReusePolicy:    enumspb.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE,
			WorkflowIDConflictPolicy: enumspb.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING,
			TypedSearchAttributes: temporal.NewSearchAttributes(
				workflows.AttrPipelineID.ValueSet(p.ID),
				workflows.AttrPipelineVersion.ValueSet(int64(v.Version)),
				workflows.AttrAccountID.ValueSet(account),
				workflows.AttrRunStatus.ValueSet(workflows.StatusRunning),
			),
		}, workflows.WfPipelineRun, in)
		adm, err = temporalx.Admit[workflows.RunAdmission](waitCtx, tc, start, client.UpdateWorkflowOptions{
			UpdateName: workflows.AdmissionUpdate, Args: []any{workflows.RunRequest{RunID: in.RunID, RequestHash: in.RequestHash}},
		})
		if err == nil || waitCtx.Err() != nil {
			break
		}
	}
	var run store.Run
	switch {
	case err != nil:
		log.Error("a run could not be admitted", "err", err)
		msg := "the run could not be started now; nothing was charged, try again"
		if rr.IdempotencyKey != "" {
			msg = "the run could not be admitted now; retry with the same Idempotency-Key: it is charged at most once"
		}
		return run, false, &errs.Error{Kind: errs.Unavailable, Msg: msg, RetryAfter: time.Second}
	case adm.Insufficient:
		return run, false, &errs.Error{
			Kind: errs.PaymentRequired, Code: "INSUFFICIENT_CREDITS",
			Msg:   "insufficient credits: this run may cost up to " + adm.Held.String() + " USD and the balance is " + adm.Balance.String() + " USD; top up to continue",
			Extra: map[string]any{"balanceUsd": adm.Balance, "requiredUsd": adm.Held, "topUpUrl": s.TopUpURL},
		}
	case adm.Conflict:
		return run, false, errs.Conflictf("Idempotency-Key %q was already used on this pipeline with a different request (run %s); send a new key for a new request", rr.IdempotencyKey, adm.RunID)
	case adm.Expired:
		return run, false, &errs.Error{Kind: errs.Unavailable, Msg: "the run could not be admitted in time; nothing was charged, try again", RetryAfter: time.Second}
	}
	run = store.Run{RunID: adm.RunID, PipelineID: p.ID, Version: adm.Version, AccountID: account, Kind: rr.Kind,
		Status: adm.Status, StartedAt: adm.StartedAt, WorkflowID: adm.WorkflowID}
	existing := adm.Existing || adm.RunID != in.RunID
	if !existing {
		log.Info("run started", "kind", rr.Kind, "held", in.Held)
	}
	return run, existing, nil
}

// ForAccount reads a run on behalf of account: NotFound when there is
// none or another account's (nobody learns which runs exist).
func (s *Service) ForAccount(ctx context.Context, account, runID string) (store.Run, error) {
	r, err := s.Store.Run(ctx, runID)
	if errors.Is(err, store.ErrNotFound) || (err == nil && r.AccountID != account) {
		return r, errs.NotFoundf("run %q not found", runID)
	}
	return r, err
}

// Owned reads a run of pipeline p: NotFound when there is none.
func (s *Service) Owned(ctx context.Context, p store.Pipeline, runID string) (store.Run, error) {
	r, err := s.Store.Run(ctx, runID)
	if errors.Is(err, store.ErrNotFound) || (err == nil && r.PipelineID != p.ID) {
		return r, errs.NotFoundf("run %q not found for pipeline %q", runID, p.ID)
	}
	return r, err
}

// The records' fields are in alphabetical order: the answers' bytes are
// the same as when the endpoints wrote maps.

// Usage is a finished run's token counts and cost.
type Usage struct {
	Completion int          `json:"completion"`
	CostUSD    money.Micros `json:"costUsd" jsonschema:"what the run was charged, in USD; 0 unless it succeeded"`
	Prompt     int          `json:"prompt"`
	Total      int          `json:"total"`
}

// Node is one node's progress or trace.
type Node struct {
	CompletionTokens int           `json:"completionTokens,omitempty"`
	CostUSD          *money.Micros `json:"costUsd,omitempty" jsonschema:"what the node's model call or render cost, in USD"`
	Error            string        `json:"error,omitempty"`
	FinishedAt       *time.Time    `json:"finishedAt,omitempty"`
	ID               string        `json:"id"`
	PromptTokens     int           `json:"promptTokens,omitempty"`
	StartedAt        *time.Time    `json:"startedAt,omitempty"`
	Status           string        `json:"status" jsonschema:"pending, running, success, error or skipped"`
	Type             string        `json:"type"`
}

// Record is the run record of spec §2.2: running runs carry runId,
// status, version and startedAt (and live nodes when asked for); finished
// ones add finishedAt, durationMs, usage and outputs (long texts
// truncated, listed in truncatedOutputs), and error when a node failed.
type Record struct {
	DurationMs       *int64            `json:"durationMs,omitempty"`
	Error            string            `json:"error,omitempty" jsonschema:"the failing node and its error"`
	FinishedAt       string            `json:"finishedAt,omitempty"`
	Kind             string            `json:"kind,omitempty" jsonschema:"how the run was started: invoke (REST or run_pipeline) or chat"`
	Nodes            []Node            `json:"nodes,omitempty" jsonschema:"per-node progress (running) or trace (finished)"`
	Outputs          map[string]string `json:"outputs,omitzero" jsonschema:"keyed by output key, once finished"`
	RunID            string            `json:"runId"`
	StartedAt        string            `json:"startedAt"`
	Status           string            `json:"status" jsonschema:"running, success, error or partial"`
	TruncatedOutputs []string          `json:"truncatedOutputs,omitempty" jsonschema:"output keys whose text was cut"`
	Usage            *Usage            `json:"usage,omitempty"`
	Version          int               `json:"version" jsonschema:"the published version that served the run"`
}

// Record is r's record as callers see it.
func (s *Service) Record(r store.Run) Record {
	out := Record{RunID: r.RunID, Status: r.Status, Version: r.Version, StartedAt: r.StartedAt.UTC().Format(time.RFC3339Nano)}
	if r.Status == workflows.StatusRunning {
		return out
	}
	if r.FinishedAt != nil {
		out.FinishedAt = r.FinishedAt.UTC().Format(time.RFC3339Nano)
	}
	out.DurationMs = r.DurationMs
	out.Usage = &Usage{Prompt: r.PromptTokens, Completion: r.CompletionTokens, Total: r.PromptTokens + r.CompletionTokens, CostUSD: r.Cost}
	out.Outputs = map[string]string{}
	for k, v := range r.Outputs {
		if t, cut := truncateText(v, s.Runs.TruncateOutputChars); cut {
			out.Outputs[k] = t
			out.TruncatedOutputs = append(out.TruncatedOutputs, k)
		} else {
			out.Outputs[k] = v
		}
	}
	slices.Sort(out.TruncatedOutputs)
	out.Error = r.Error
	return out
}

// truncateText cuts long text at limit characters; media URLs are returned
// verbatim whatever their length.
func truncateText(v string, limit int) (string, bool) {
	if isURL(v) || utf8.RuneCountInString(v) <= limit {
		return v, false
	}
	return string([]rune(v)[:limit]), true
}

func isURL(v string) bool {
	if !strings.HasPrefix(v, "https://") && !strings.HasPrefix(v, "http://") {
		return false
	}
	return !strings.ContainsAny(v, " \n\t")
}

// Live asks an open run's workflow which nodes are done, running or
// waiting (its status query). A closed run is answered from PostgreSQL
// alone (its history may be archived), and a run whose workflow does not
// answer within a second is too: nothing waits on Temporal.
func (s *Service) Live(ctx context.Context, workflowID string) ([]Node, bool) {
	var st workflows.RunState
	if !temporalx.AskOpen(ctx, s.Temporal, workflowID, workflows.StatusQuery, &st) {
		return nil, false
	}
	nodes := make([]Node, 0, len(st.Nodes))
	for _, n := range st.Nodes {
		// The times let a caller show how long each node has been running.
		nodes = append(nodes, Node{ID: n.ID, Type: n.Type, Status: n.Status, Error: n.Error, StartedAt: n.StartedAt, FinishedAt: n.FinishedAt})
	}
	return nodes, true
}

// Trace is a finished run's per-node record: status, timing, tokens and
// cost of every node, as its workflow left them.
func Trace(r store.Run) []Node {
	var states []workflows.NodeState
	if len(r.Nodes) == 0 || json.Unmarshal(r.Nodes, &states) != nil {
		return nil
	}
	nodes := make([]Node, 0, len(states))
	for _, n := range states {
		node := Node{ID: n.ID, Type: n.Type, Status: n.Status, Error: n.Error, StartedAt: n.StartedAt, FinishedAt: n.FinishedAt,
			PromptTokens: n.PromptTokens, CompletionTokens: n.CompletionTokens}
		// A node that costs is a model call or a generation node's render;
		// each carries what it was charged, so the nodes add up to the run.
		if n.Status == workflows.NodeSuccess && (n.Type == graph.KindModel || mediakind.Is(n.Type)) {
			c := money.Micros(n.CostMicros)
			node.CostUSD = &c
		}
		nodes = append(nodes, node)
	}
	return nodes
}

// Detailed is r's record with its per-node trace: live progress while it
// runs, the recorded trace once it has finished.
func (s *Service) Detailed(ctx context.Context, r store.Run) Record {
	out := s.Record(r)
	if r.Status == workflows.StatusRunning {
		out.Nodes, _ = s.Live(ctx, r.WorkflowID)
	} else {
		out.Nodes = Trace(r)
	}
	return out
}

// Statuses a run history can be filtered by.
var Statuses = []string{workflows.StatusRunning, workflows.StatusSuccess, workflows.StatusError, workflows.StatusPartial}

// MaxPage bounds a page of run history.
const MaxPage = 100

// PageQuery asks for a page of a pipeline's run history, newest first.
type PageQuery struct {
	// Status filters when not empty.
	Status string
	// After continues from a previous page's last run id (NextAfter);
	// Cursor is the same under the name other lists used.
	After, Cursor string
	Limit         int
}

// CheckPageQuery refuses a filter or a page size that cannot be answered.
func CheckPageQuery(q PageQuery) error {
	if q.Status != "" && !slices.Contains(Statuses, q.Status) {
		return errs.Invalidf("status must be one of running, success, error, partial")
	}
	if q.Limit < 1 || q.Limit > MaxPage {
		return errs.Invalidf("limit must be 1 to %d", MaxPage)
	}
	return nil
}

// Page is one page of run history (the paging convention of
// internal/paging); More says another page follows: NextAfter (the last
// run's id) asks for it, NextURL is its address.
type Page struct {
	Runs      []Record `json:"runs"`
	More      bool     `json:"-"`
	NextAfter string   `json:"nextAfter,omitempty"`
	NextURL   string   `json:"nextUrl,omitempty"`
}

// History reads a page of pipelineID's runs, each with its kind.
func (s *Service) History(ctx context.Context, pipelineID string, q PageQuery) (Page, error) {
	if err := CheckPageQuery(q); err != nil {
		return Page{}, err
	}
	tok, err := paging.From(q.After, q.Cursor)
	if err != nil {
		return Page{}, err
	}
	if tok.Value != "" {
		// A run id is bound to its pipeline: another pipeline's run is
		// refused (a missing one still just marks a place, as it did).
		r, err := s.Store.Run(ctx, tok.Value)
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			return Page{}, err
		}
		if err == nil && r.PipelineID != pipelineID {
			return Page{}, tok.Foreign()
		}
	}
	runs, err := s.Store.RunPage(ctx, pipelineID, q.Status, tok.Value, q.Limit+1)
	if err != nil {
		return Page{}, err
	}
	var page Page
	if len(runs) > q.Limit {
		runs, page.More = runs[:q.Limit], true
		page.NextAfter = runs[len(runs)-1].RunID
		page.NextURL = paging.NextURL(s.BaseURL, "/api/pipelines/"+url.PathEscape(pipelineID)+"/runs",
			url.Values{"status": {q.Status}, "limit": {strconv.Itoa(q.Limit)}}, page.NextAfter)
	}
	page.Runs = make([]Record, len(runs))
	for i, r := range runs {
		page.Runs[i] = s.Record(r)
		page.Runs[i].Kind = r.Kind
	}
	return page, nil
}
