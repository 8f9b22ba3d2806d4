package frontend

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/gin-gonic/gin"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"conduit/internal/logging"
	"conduit/internal/money"
	"conduit/internal/pipeline"
	"conduit/internal/store"
	"conduit/workflows"
)

// newRunID is `<ISO timestamp>#<8 hex>` (spec §2.2).
func newRunID(now time.Time) string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return now.UTC().Format("2006-01-02T15:04:05.000Z") + "#" + hex.EncodeToString(b)
}

// truncatedRunID is the 404 for a run id without its '#': every run id has
// one, so this is an id whose '#' was sent raw and cut the query there (a
// raw '#' starts the URL's fragment, which never reaches the server).
func truncatedRunID(runID string) error {
	if strings.Contains(runID, "#") {
		return nil
	}
	return errorf(http.StatusNotFound, "run %q not found: a runId has the form <timestamp>#<8 hex>, and its '#' must be "+
		"URL-encoded as %%23 (runId=%s%%23…); sent raw, everything from '#' on never reaches the server. Use statusUrl exactly as given", runID, url.QueryEscape(runID))
}

// runRequest is a run the caller asked for, before anything is written.
type runRequest struct {
	Kind           string
	Inputs         map[string]string
	IdempotencyKey string
	// StreamNode names the model node whose tokens are published live.
	StreamNode string
}

// servingGraph returns the published snapshot that serves the pipeline, or
// the spec's 409 when there is none or it cannot take calls.
func (s *Server) servingGraph(c *gin.Context, p store.Pipeline) (*pipeline.Graph, store.PipelineVersion, error) {
	if p.ServingVersion == nil {
		return nil, store.PipelineVersion{}, errorf(http.StatusConflict, "pipeline %q is not published; publish a version first", p.ID)
	}
	v, err := s.deps.Store.Version(c.Request.Context(), p.ID, *p.ServingVersion)
	if err != nil {
		return nil, v, err
	}
	g, err := pipeline.Parse(v.Graph)
	if err != nil {
		return nil, v, err
	}
	return g, v, nil
}

// holdFor is the most a run of g can cost: every model node at a full
// context window plus its maxTokens, and every generation node at its
// menu price (a speech template at the longest text it may render to).
// The run holds this much and is charged its actual cost.
func (s *Server) holdFor(g *pipeline.Graph) money.Micros {
	total, _ := s.deps.Library.Plan(g)
	for _, n := range g.Nodes {
		if n.Type != "model" {
			continue
		}
		if m, ok := s.deps.Catalog.Model(n.Model); ok {
			total += m.MaxCost(n.MaxTokens)
		}
	}
	return total
}

// inlineNodes are g's model nodes whose calls are short enough to run
// inside the workflow task (models.Model.Inline).
func (s *Server) inlineNodes(g *pipeline.Graph) []string {
	var ids []string
	for _, n := range g.Nodes {
		if m, ok := s.deps.Catalog.Model(n.Model); ok && n.Type == "model" && m.Inline(n.MaxTokens) {
			ids = append(ids, n.ID)
		}
	}
	return ids
}

// runRequestHash is what an Idempotency-Key is bound to: the kind of call and
// its inputs (canonical JSON: sorted keys).
func runRequestHash(kind string, inputs map[string]string) string {
	b, _ := json.Marshal(inputs)
	sum := sha256.Sum256(append([]byte(kind+"\n"), b...))
	return hex.EncodeToString(sum[:])
}

// admitWait is how long a caller waits for its run to be admitted; the
// workflow itself refuses to admit later than workflows.AdmitWithin.
const admitWait = 30 * time.Second

// startRun starts the run's workflow and waits for its admission, its
// first step: the run recorded and its credit held, or why not
// (Update-with-Start). With an Idempotency-Key every retry reaches the
// same workflow, or the run it admitted; existing says so.
func (s *Server) startRun(c *gin.Context, p store.Pipeline, g *pipeline.Graph, v store.PipelineVersion, rr runRequest) (store.Run, bool, error) {
	ctx := c.Request.Context()
	account := principal(c).AccountID
	if err := s.deps.Library.Runnable(g); err != nil {
		return store.Run{}, false, err
	}
	_, bounds := s.deps.Library.Plan(g)
	now := time.Now()
	in := workflows.RunInput{
		RunID: newRunID(now), PipelineID: p.ID, Version: v.Version, AccountID: account,
		Graph: v.Graph, Inputs: rr.Inputs, Held: s.holdFor(g), Generation: bounds,
		ModelTimeout: s.deps.Config.Runs.ModelTimeout, ModelAttempts: int32(s.deps.Config.Runs.ModelAttempts),
		StreamNode: rr.StreamNode, InlineNodes: s.inlineNodes(g),
		Kind: rr.Kind, StartedAt: now, IdempotencyKey: rr.IdempotencyKey, RequestHash: runRequestHash(rr.Kind, rr.Inputs),
	}
	in.WorkflowID = workflows.PipelineRunWorkflowID(in.RunID)
	if rr.IdempotencyKey != "" {
		in.WorkflowID = workflows.KeyedRunWorkflowID(account, p.ID, rr.IdempotencyKey)
	}
	log := logging.From(ctx).With("run_id", in.RunID, "workflow_id", in.WorkflowID, "pipeline_id", p.ID, "version", v.Version)
	tc := s.deps.Temporal
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
		var h client.WorkflowUpdateHandle
		h, err = tc.UpdateWithStartWorkflow(waitCtx, client.UpdateWithStartWorkflowOptions{
			StartWorkflowOperation: start,
			UpdateOptions: client.UpdateWorkflowOptions{
				UpdateName: workflows.AdmissionUpdate, WaitForStage: client.WorkflowUpdateStageCompleted,
				Args: []any{workflows.RunRequest{RunID: in.RunID, RequestHash: in.RequestHash}},
			},
		})
		if err == nil {
			err = h.Get(waitCtx, &adm)
		}
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
		return run, false, &APIError{Status: http.StatusServiceUnavailable, Message: msg, RetryAfter: time.Second}
	case adm.Insufficient:
		return run, false, &APIError{
			Status: http.StatusPaymentRequired, Code: "INSUFFICIENT_CREDITS",
			Message: "insufficient credits: this run may cost up to " + adm.Held.String() + " USD and the balance is " + adm.Balance.String() + " USD; top up to continue",
			Extra:   map[string]any{"balanceUsd": adm.Balance, "topUpUrl": s.topUpURL()},
		}
	case adm.Conflict:
		return run, false, errorf(http.StatusConflict, "Idempotency-Key %q was already used on this pipeline with a different request (run %s); send a new key for a new request", rr.IdempotencyKey, adm.RunID)
	case adm.Expired:
		return run, false, &APIError{Status: http.StatusServiceUnavailable, Message: "the run could not be admitted in time; nothing was charged, try again", RetryAfter: time.Second}
	}
	run = store.Run{RunID: adm.RunID, PipelineID: p.ID, Version: adm.Version, AccountID: account, Kind: rr.Kind,
		Status: adm.Status, StartedAt: adm.StartedAt, WorkflowID: adm.WorkflowID}
	existing := adm.Existing || adm.RunID != in.RunID
	if !existing {
		log.Info("run started", "kind", rr.Kind, "held", in.Held)
	}
	return run, existing, nil
}

// invoke: POST /api/pipelines/{id}/invoke {inputs}.
func (s *Server) invoke(c *gin.Context) {
	p := currentPipeline(c)
	g, v, err := s.servingGraph(c, p)
	if err != nil {
		fail(c, err)
		return
	}
	if err := g.Servable(); err != nil {
		fail(c, errorf(http.StatusConflict, "version %d of pipeline %q cannot take API calls: %v", v.Version, p.ID, err))
		return
	}
	var body struct {
		Inputs json.RawMessage `json:"inputs"`
	}
	if err := decodeJSON(c, &body); err != nil {
		fail(c, err)
		return
	}
	var raw map[string]any
	if len(body.Inputs) == 0 || json.Unmarshal(body.Inputs, &raw) != nil || raw == nil {
		fail(c, errorf(http.StatusBadRequest, "inputs is required and must be a JSON object"))
		return
	}
	inputs, err := pipeline.ValidateInputs(g.Contract(), raw)
	if err != nil {
		fail(c, errorf(http.StatusBadRequest, "%v", err))
		return
	}
	key := strings.TrimSpace(c.GetHeader("Idempotency-Key"))
	if len(key) > 200 {
		fail(c, errorf(http.StatusBadRequest, "Idempotency-Key must be at most 200 characters"))
		return
	}
	if err := storable("the Idempotency-Key header", key); err != nil {
		fail(c, err)
		return
	}
	run, existing, err := s.startRun(c, p, g, v, runRequest{Kind: "invoke", Inputs: inputs, IdempotencyKey: key})
	if err != nil {
		fail(c, err)
		return
	}
	if existing {
		c.Header("Idempotent-Replayed", "true")
	}
	c.JSON(http.StatusAccepted, gin.H{
		"runId": run.RunID, "status": run.Status, "version": run.Version, "statusUrl": s.statusURL(p.ID, run.RunID),
	})
}

func (s *Server) statusURL(pipelineID, runID string) string {
	return s.url("/api/pipelines/" + url.PathEscape(pipelineID) + "/invoke?runId=" + url.QueryEscape(runID))
}

// pollRun: GET /api/pipelines/{id}/invoke?runId=… (spec §4.2), answered
// from the run history projection.
func (s *Server) pollRun(c *gin.Context) {
	p := currentPipeline(c)
	runID := c.Query("runId")
	if runID == "" {
		fail(c, errorf(http.StatusBadRequest, "query parameter runId is required (URL-encode its # as %%23)"))
		return
	}
	if err := truncatedRunID(runID); err != nil {
		fail(c, err)
		return
	}
	r, err := s.deps.Store.Run(c.Request.Context(), runID)
	if errors.Is(err, store.ErrNotFound) || (err == nil && r.PipelineID != p.ID) {
		fail(c, errorf(http.StatusNotFound, "run %q not found for pipeline %q", runID, p.ID))
		return
	}
	if err != nil {
		fail(c, err)
		return
	}
	out := s.runJSON(r)
	if r.Status == workflows.StatusRunning {
		if nodes, ok := s.liveNodes(c.Request.Context(), r.WorkflowID); ok {
			out["nodes"] = nodes
		}
	}
	c.JSON(http.StatusOK, out)
}

// liveNodes asks an open run's workflow which nodes are done, running or
// waiting (its status query). A closed run is answered from PostgreSQL
// alone (its history may be archived), and a run whose workflow does not
// answer within a second is too: polling never waits on Temporal.
func (s *Server) liveNodes(ctx context.Context, workflowID string) ([]gin.H, bool) {
	var st workflows.RunState
	if !s.askOpen(ctx, workflowID, workflows.StatusQuery, &st) {
		return nil, false
	}
	nodes := make([]gin.H, 0, len(st.Nodes))
	for _, n := range st.Nodes {
		node := gin.H{"id": n.ID, "type": n.Type, "status": n.Status}
		if n.Error != "" {
			node["error"] = n.Error
		}
		nodes = append(nodes, node)
	}
	return nodes, true
}

// runJSON is the run record of spec §2.2: running runs carry runId, status,
// version and startedAt; finished ones add finishedAt, durationMs, usage
// and outputs (long texts truncated, listed in truncatedOutputs).
func (s *Server) runJSON(r store.Run) gin.H {
	out := gin.H{"runId": r.RunID, "status": r.Status, "version": r.Version, "startedAt": r.StartedAt.UTC().Format(time.RFC3339Nano)}
	if r.Status == workflows.StatusRunning {
		return out
	}
	if r.FinishedAt != nil {
		out["finishedAt"] = r.FinishedAt.UTC().Format(time.RFC3339Nano)
	}
	if r.DurationMs != nil {
		out["durationMs"] = *r.DurationMs
	}
	out["usage"] = gin.H{
		"prompt": r.PromptTokens, "completion": r.CompletionTokens, "total": r.PromptTokens + r.CompletionTokens,
		"costUsd": r.Cost,
	}
	outputs := map[string]string{}
	var truncated []string
	for k, v := range r.Outputs {
		if t, cut := truncateText(v, s.deps.Config.Runs.TruncateOutputChars); cut {
			outputs[k] = t
			truncated = append(truncated, k)
		} else {
			outputs[k] = v
		}
	}
	out["outputs"] = outputs
	if len(truncated) > 0 {
		slices.Sort(truncated)
		out["truncatedOutputs"] = truncated
	}
	if r.Error != "" {
		out["error"] = r.Error
	}
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

// listRuns: GET /api/pipelines/{id}/runs?status=&limit=&after= — run
// history, newest first.
func (s *Server) listRuns(c *gin.Context) {
	p := currentPipeline(c)
	status := c.Query("status")
	switch status {
	case "", workflows.StatusRunning, workflows.StatusSuccess, workflows.StatusError, workflows.StatusPartial:
	default:
		fail(c, errorf(http.StatusBadRequest, "status must be one of running, success, error, partial"))
		return
	}
	limit := 20
	if l := c.Query("limit"); l != "" {
		n, err := strconv.Atoi(l)
		if err != nil || n < 1 || n > 100 {
			fail(c, errorf(http.StatusBadRequest, "limit must be 1 to 100"))
			return
		}
		limit = n
	}
	runs, err := s.deps.Store.RunPage(c.Request.Context(), p.ID, status, c.Query("after"), limit+1)
	if err != nil {
		fail(c, err)
		return
	}
	out := gin.H{}
	if len(runs) > limit {
		runs = runs[:limit]
		out["nextUrl"] = s.url("/api/pipelines/" + url.PathEscape(p.ID) + "/runs?" + url.Values{"status": {status}, "limit": {strconv.Itoa(limit)}, "after": {runs[limit-1].RunID}}.Encode())
	}
	list := make([]gin.H, len(runs))
	for i, r := range runs {
		list[i] = s.runJSON(r)
		list[i]["kind"] = r.Kind
	}
	out["runs"] = list
	c.JSON(http.StatusOK, out)
}
