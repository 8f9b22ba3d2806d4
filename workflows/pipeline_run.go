package workflows

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"conduit/activities"
	"conduit/internal/graph"
	"conduit/internal/money"
	"conduit/internal/redact"
	"conduit/internal/store"
)

// PipelineQueue carries pipeline runs.
const PipelineQueue = "pipelines"

// PipelineRunWorkflowID is the workflow id of a run without an
// Idempotency-Key: derived from the run id.
func PipelineRunWorkflowID(runID string) string { return "pipeline-run/" + runID }

// KeyedRunWorkflowID is the workflow id of a run asked for with an
// Idempotency-Key: derived from the account, the pipeline and (a hash of)
// the key, so every retry of the request reaches the same workflow while
// it is open. The key itself stays out of the id.
func KeyedRunWorkflowID(accountID, pipelineID, key string) string {
	sum := sha256.Sum256([]byte(key))
	return "pipeline-run/" + accountID + "/" + pipelineID + "/" + hex.EncodeToString(sum[:16])
}

// AdmitWithin is how late a run may still be admitted after it was asked
// for: a workflow whose first step comes later (its workers were down)
// ends without admitting, because its caller has long been told to retry.
const AdmitWithin = time.Minute

// AnswerWithin is how late a run without an Idempotency-Key may still be
// admitted. Its caller waits for the admission's answer (the API waits
// 30 s) and, when none comes, is told that nothing was charged and to try
// again, which starts a new run: without a key nothing ties the retry to
// this one. Admitted later, the run would be charged behind that 503, and
// with the retry the caller would pay twice (the kill campaign in
// app/chaos found this: a worker down for 32 s, an unkeyed request
// answered 503, its run admitted and charged once a worker was back). So
// an unkeyed run is written only within AnswerWithin of the request, and
// one whose admission is answered later than that (its worker died after
// writing it and the step ran again, or the database held it up) is ended
// at once, unrun, its hold released. The margin to the API's wait covers
// the admission's own workflow task and clock skew. A keyed run may be
// admitted later (AdmitWithin): a retry with the same key finds it.
const AnswerWithin = 15 * time.Second

// LateAdmissionError is the error of an unkeyed run whose admission
// completed after AnswerWithin: it was ended without running, uncharged.
const LateAdmissionError = "the run was admitted after its caller had stopped waiting and did not run; nothing was charged"

// StatusQuery answers a run's live state (RunState).
const StatusQuery = "status"

// Search attributes that make runs findable in the Temporal UI.
var (
	AttrPipelineID      = temporal.NewSearchAttributeKeyKeyword("PipelineId")
	AttrPipelineVersion = temporal.NewSearchAttributeKeyInt64("PipelineVersion")
	AttrAccountID       = temporal.NewSearchAttributeKeyKeyword("AccountId")
	AttrRunStatus       = temporal.NewSearchAttributeKeyKeyword("RunStatus")
	// Renders and top-ups: what was bought, by whom, on which network.
	AttrKind    = temporal.NewSearchAttributeKeyKeyword("Kind")
	AttrModel   = temporal.NewSearchAttributeKeyKeyword("Model")
	AttrPayer   = temporal.NewSearchAttributeKeyKeyword("Payer")
	AttrNetwork = temporal.NewSearchAttributeKeyKeyword("Network")
)

// SearchAttributes lists them with their types, for registration.
func SearchAttributes() map[string]enumspb.IndexedValueType {
	return map[string]enumspb.IndexedValueType{
		AttrPipelineID.GetName():         enumspb.INDEXED_VALUE_TYPE_KEYWORD,
		AttrPipelineVersion.GetName():    enumspb.INDEXED_VALUE_TYPE_INT,
		AttrAccountID.GetName():          enumspb.INDEXED_VALUE_TYPE_KEYWORD,
		AttrRunStatus.GetName():          enumspb.INDEXED_VALUE_TYPE_KEYWORD,
		AttrKind.GetName():               enumspb.INDEXED_VALUE_TYPE_KEYWORD,
		AttrModel.GetName():              enumspb.INDEXED_VALUE_TYPE_KEYWORD,
		AttrPayer.GetName():              enumspb.INDEXED_VALUE_TYPE_KEYWORD,
		AttrNetwork.GetName():            enumspb.INDEXED_VALUE_TYPE_KEYWORD,
		AttrEnclaveID.GetName():          enumspb.INDEXED_VALUE_TYPE_KEYWORD,
		AttrEnclaveStatus.GetName():      enumspb.INDEXED_VALUE_TYPE_KEYWORD,
		AttrAccount.GetName():            enumspb.INDEXED_VALUE_TYPE_KEYWORD,
		AttrEnclaveStatusSince.GetName(): enumspb.INDEXED_VALUE_TYPE_DATETIME,
	}
}

// Run statuses.
const (
	StatusRunning = "running"
	StatusSuccess = "success"
	StatusError   = "error"
	StatusPartial = "partial"
	// StatusRefused: a render or top-up whose payment (or retry) was
	// refused, or a pipeline run that was not admitted, so nothing ran.
	StatusRefused = "refused"
	// StatusDuplicate: a pipeline-run workflow that found its
	// Idempotency-Key's run already admitted and answered with it.
	StatusDuplicate = "duplicate"
)

// Node statuses.
const (
	NodePending = "pending"
	NodeRunning = "running"
	NodeSuccess = "success"
	NodeError   = "error"
	NodeSkipped = "skipped"
)

// RunInput is everything a run needs; the graph is the published snapshot,
// carried in the input so the run never sees a later edit.
type RunInput struct {
	RunID      string
	PipelineID string
	Version    int
	AccountID  string
	Graph      json.RawMessage
	Inputs     map[string]string
	// Held is the credit reserved for the run: the most it can be charged.
	Held money.Micros
	// ModelTimeout and ModelAttempts bound each model call.
	ModelTimeout  time.Duration
	ModelAttempts int32
	// StreamNode, when set, names the model node whose tokens are
	// published as they arrive (chat completions).
	StreamNode string
	// InlineNodes are model nodes whose calls are short enough to run as
	// local activities (in-process models with a small worst case): no
	// round trip through the server.
	InlineNodes []string

	// Generation bounds the renders of generation nodes.
	Generation GenerationBounds `json:",omitzero"`

	// Admission (runs started since admission moved into the workflow):
	// the run's kind, when it was asked for, its Idempotency-Key and the
	// hash of the request that key is bound to, and this workflow's id.
	Kind           string
	StartedAt      time.Time
	IdempotencyKey string
	RequestHash    string
	WorkflowID     string
}

// GenerationBounds are the render limits of a run's generation nodes,
// fixed when the run is admitted (from the media menus' deadlines) so a
// configuration change cannot alter a replay.
type GenerationBounds struct {
	// Timeouts bound each node's render across attempts, by node id.
	Timeouts map[string]time.Duration `json:",omitempty"`
	// Heartbeat is how long a render may go silent before another worker
	// takes it over.
	Heartbeat time.Duration `json:",omitempty"`
}

// Fallbacks when a run carries no bounds for a generation node.
const (
	defaultGenerationTimeout   = 30 * time.Minute
	defaultGenerationHeartbeat = 30 * time.Second
)

// RunRequest is what each caller's admission update carries: the run id
// it proposed and the hash of its request.
type RunRequest struct {
	RunID       string
	RequestHash string
}

// RunAdmission answers the admission update: the admission step's
// outcome (activities.OpenedRun), whether the run is open, and what a
// refusal needs to say.
type RunAdmission struct {
	activities.OpenedRun
	// Accepted: RunID is open (or, with Existing, was admitted before
	// under the same Idempotency-Key).
	Accepted bool
	// Held is the hold the run asked for (what Balance could not cover).
	Held money.Micros
}

// expiredAdmission: too late to admit (AdmitWithin, AnswerWithin).
func expiredAdmission() RunAdmission {
	return RunAdmission{OpenedRun: activities.OpenedRun{Expired: true}}
}

// NodeState is one node's progress.
type NodeState struct {
	ID               string     `json:"id"`
	Type             string     `json:"type"`
	Status           string     `json:"status"`
	Error            string     `json:"error,omitempty"`
	StartedAt        *time.Time `json:"startedAt,omitempty"`
	FinishedAt       *time.Time `json:"finishedAt,omitempty"`
	PromptTokens     int        `json:"promptTokens,omitempty"`
	CompletionTokens int        `json:"completionTokens,omitempty"`
	CostMicros       int64      `json:"costMicros,omitempty"`
	// ItemID is the library item a generation node made.
	ItemID string `json:"itemId,omitempty"`
}

// RunState is the run's live state, answered by StatusQuery and returned
// when the run ends.
type RunState struct {
	RunID            string            `json:"runId"`
	Status           string            `json:"status"`
	Nodes            []NodeState       `json:"nodes"`
	Outputs          map[string]string `json:"outputs"`
	PromptTokens     int               `json:"promptTokens"`
	CompletionTokens int               `json:"completionTokens"`
	Cost             money.Micros      `json:"cost"`
	Error            string            `json:"error,omitempty"`
}

// PipelineRun admits a run and executes its published snapshot. Its
// first step writes the run and holds its credit; callers learn the
// outcome from the admission update they start it with (Update-with-Start),
// so no run exists without its workflow and no workflow holds credit
// without its run. Each node starts as soon as its inputs are ready
// (independent branches run in parallel), each model call an activity
// with its own retry policy.
// Whatever happens, the run ends by recording its result and settling its
// hold in one transaction: charged on success, released otherwise.
func PipelineRun(ctx workflow.Context, in RunInput) (RunState, error) {
	r := &runner{in: in, state: RunState{RunID: in.RunID, Status: StatusRunning, Outputs: map[string]string{}}, values: map[string]string{}}
	if err := workflow.SetQueryHandler(ctx, StatusQuery, func() (RunState, error) { return r.state, nil }); err != nil {
		return RunState{}, err
	}
	var admission *RunAdmission
	var admitErr error
	if err := workflow.SetUpdateHandler(ctx, AdmissionUpdate, func(ctx workflow.Context, req RunRequest) (RunAdmission, error) {
		if err := workflow.Await(ctx, func() bool { return admission != nil || admitErr != nil }); err != nil {
			return RunAdmission{}, err
		}
		if admitErr != nil {
			return RunAdmission{}, admitErr
		}
		if req.RequestHash != in.RequestHash {
			return RunAdmission{OpenedRun: activities.OpenedRun{Conflict: true, RunID: admission.RunID}}, nil
		}
		return *admission, nil
	}); err != nil {
		return RunState{}, err
	}
	// Runs started before admission moved here were admitted by the
	// frontend: they run as they always did. Version 2 holds runs without
	// an Idempotency-Key to AnswerWithin.
	v := workflow.GetVersion(ctx, ChangeAdmissionInWorkflow, workflow.DefaultVersion, 2)
	if v == workflow.DefaultVersion {
		r.execute(ctx)
		return r.finish(ctx)
	}
	r.local, r.version = true, v
	// Let every admission update read its answer before the workflow ends.
	defer func() { _ = workflow.Await(ctx, func() bool { return workflow.AllHandlersFinished(ctx) }) }()

	adm, err := r.admit(ctx)
	if err != nil {
		admitErr = err
		return RunState{}, err
	}
	if v >= 2 && in.IdempotencyKey == "" && adm.Accepted && !adm.Existing && r.since(ctx) > AnswerWithin {
		// Written, but too late for its caller (see AnswerWithin): end it
		// unrun and uncharged, and answer a caller still waiting that it
		// was not admitted.
		st, err := r.withdraw(ctx)
		if err != nil {
			admitErr = err
			return st, err
		}
		exp := expiredAdmission()
		admission = &exp
		return st, nil
	}
	if adm.Existing && adm.RunID == in.RunID && r.recorded != nil {
		// This request's own run, already finished: by this execution in
		// a workflow task whose worker died before completing it (the
		// admission step ran again and found the run finished), or by an
		// earlier execution that the API's retry of the same request
		// replaced. It is the caller's run, not another request's: answer
		// it so, and end with its recorded outcome, so that whoever awaits
		// this workflow's result (chat completions) gets the run and not
		// an empty duplicate. (Which of the two happened cannot be told
		// here, so the execution is labelled a duplicate.)
		st := r.recordedState(adm.Status)
		adm.Existing = false
		if st.Error == LateAdmissionError {
			adm = expiredAdmission() // withdrawn: see AnswerWithin
		}
		admission = &adm
		_ = workflow.UpsertTypedSearchAttributes(ctx, AttrRunStatus.ValueSet(StatusDuplicate))
		return st, nil
	}
	admission = &adm
	if !adm.Accepted || adm.Existing {
		status := StatusRefused
		if adm.Existing {
			status = StatusDuplicate
		}
		_ = workflow.UpsertTypedSearchAttributes(ctx, AttrRunStatus.ValueSet(status))
		return RunState{RunID: adm.RunID, Status: status}, nil
	}
	r.execute(ctx)
	return r.finish(ctx)
}

// admit writes the run and its hold (or finds the run its
// Idempotency-Key already names).
func (r *runner) admit(ctx workflow.Context) (RunAdmission, error) {
	in := r.in
	n := store.NewRun{
		RunID: in.RunID, PipelineID: in.PipelineID, Version: in.Version, AccountID: in.AccountID, Kind: in.Kind,
		IdempotencyKey: in.IdempotencyKey, RequestHash: in.RequestHash, WorkflowID: in.WorkflowID,
		Inputs: in.Inputs, StartedAt: in.StartedAt, Hold: in.Held,
	}
	if r.version < 2 {
		if r.since(ctx) > AdmitWithin {
			return expiredAdmission(), nil
		}
	} else {
		// The step itself refuses to write a run too late, by the
		// database's clock, and still answers a run an earlier attempt of
		// it wrote. Judged before the step, a step that ran again after
		// its worker died past the deadline would skip the run it had
		// written, leaving it running with its credit held.
		n.AdmitBy = in.StartedAt.Add(AdmitWithin)
		if in.IdempotencyKey == "" {
			n.AdmitBy = in.StartedAt.Add(AnswerWithin)
		}
	}
	var opened activities.OpenedRun
	if err := workflow.ExecuteLocalActivity(r.shortCtx(ctx), ActOpenRun, activities.OpenRunInput{Run: n}).Get(ctx, &opened); err != nil {
		return RunAdmission{}, err
	}
	r.recorded, opened.Recorded = opened.Recorded, nil // kept for the workflow, not sent to callers
	return RunAdmission{OpenedRun: opened, Accepted: !opened.Insufficient && !opened.Conflict && !opened.Expired, Held: in.Held}, nil
}

// since is how long ago the run was asked for, in workflow time: the start
// of the current workflow task, so after a local activity it is at most
// that task's age behind (the SDK starts a new task for a long one).
func (r *runner) since(ctx workflow.Context) time.Duration {
	return workflow.Now(ctx).Sub(r.in.StartedAt)
}

// recordedState is the state of a run that had already finished when its
// admission step ran (r.recorded), as it was recorded.
func (r *runner) recordedState(status string) RunState {
	rec := r.recorded
	st := RunState{RunID: r.in.RunID, Status: status, Outputs: rec.Outputs, PromptTokens: rec.PromptTokens,
		CompletionTokens: rec.CompletionTokens, Cost: rec.Cost, Error: rec.Error}
	_ = json.Unmarshal(rec.Nodes, &st.Nodes)
	if st.Outputs == nil {
		st.Outputs = map[string]string{}
	}
	return st
}

// withdraw ends a run admitted too late for its caller before it runs:
// an error with LateAdmissionError, its hold released (FailRun).
func (r *runner) withdraw(ctx workflow.Context) (RunState, error) {
	r.state.Status, r.state.Error = StatusError, LateAdmissionError
	if err := r.run(r.shortCtx(ctx), ActFailRun, activities.FailInput{
		RunID: r.in.RunID, Error: LateAdmissionError, FinishedAt: workflow.Now(ctx),
	}).Get(ctx, nil); err != nil {
		return r.state, err
	}
	_ = workflow.UpsertTypedSearchAttributes(ctx, AttrRunStatus.ValueSet(StatusError))
	return r.state, nil
}

// shortCtx runs a short database step: a local activity (in the workflow
// task, no round trip through the server) for runs admitted here, an
// activity for runs from before.
func (r *runner) shortCtx(ctx workflow.Context) workflow.Context {
	if r.local {
		return workflow.WithLocalActivityOptions(ctx, workflow.LocalActivityOptions{StartToCloseTimeout: 30 * time.Second, RetryPolicy: ShortRetry})
	}
	return workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: 30 * time.Second, RetryPolicy: ShortRetry})
}

// run executes a short step the way shortCtx chose.
func (r *runner) run(ctx workflow.Context, name string, arg any) workflow.Future {
	if r.local {
		return workflow.ExecuteLocalActivity(ctx, name, arg)
	}
	return workflow.ExecuteActivity(ctx, name, arg)
}

type runner struct {
	in     RunInput
	graph  *graph.Graph
	state  RunState
	values map[string]string
	index  map[string]int // node id → position in state.Nodes
	// bytes is the size of every value so far (graph.MaxRunBytes).
	bytes int
	// local: short steps and inline model calls run as local activities.
	local bool
	// media are the library items generation nodes made, and mediaCost
	// what they cost: charged whatever the run's outcome, since the items
	// stay in the library (recorded with the run's result).
	media     []store.MediaItem
	mediaCost money.Micros
	// recorded is the outcome of a run that had already finished when its
	// admission step ran.
	recorded *activities.RecordedRun
	// version is the workflow's version of admission-in-workflow: 1 judges
	// a late admission before its step, 2 in it (store.NewRun.AdmitBy) and
	// holds runs without an Idempotency-Key to AnswerWithin.
	version workflow.Version
}

func (r *runner) execute(ctx workflow.Context) {
	g, err := graph.Parse(r.in.Graph)
	if err == nil {
		err = g.Servable()
	}
	if err == nil {
		// Checked before the walk, so a graph that cannot be ordered
		// ends with no node states.
		_, err = g.Levels()
	}
	if err != nil {
		r.state.Error = "the published pipeline cannot run: " + err.Error()
		return
	}
	r.graph = g
	r.index = map[string]int{}
	for i, n := range g.Nodes {
		r.index[n.ID] = i
		r.state.Nodes = append(r.state.Nodes, NodeState{ID: n.ID, Type: n.Type, Status: NodePending})
	}
	// Since ChangeDataflow each node starts the moment its inputs are
	// ready; before it, the graph ran layer by layer, which old histories
	// still replay.
	if workflow.GetVersion(ctx, ChangeDataflow, workflow.DefaultVersion, 1) == 1 {
		r.flow(ctx)
		return
	}
	// A layer's calls are started together and then waited for.
	var pending []modelCall
	_ = g.Walk(func(n *graph.Node) {
		if call, ok := r.startNode(ctx, n); ok {
			pending = append(pending, call)
		}
	}, func() {
		for _, call := range pending {
			r.collect(ctx, call)
		}
		pending = nil
	})
}

// flow runs the graph as a dataflow: every node whose upstream nodes have
// all finished is started (in graph order, so replays issue the same
// commands), and whenever a call completes the nodes it unblocks start at
// once. A slow branch holds back only the nodes that depend on it.
func (r *runner) flow(ctx workflow.Context) {
	started := make(map[string]bool, len(r.graph.Nodes))
	sel := workflow.NewSelector(ctx)
	pending := 0
	for {
		// Pure nodes finish as they start, so repeat until nothing more
		// became ready.
		for more := true; more; {
			more = false
			for i := range r.graph.Nodes {
				n := &r.graph.Nodes[i]
				if started[n.ID] || !r.inputsReady(n.ID) {
					continue
				}
				started[n.ID], more = true, true
				if call, ok := r.startNode(ctx, n); ok {
					pending++
					sel.AddFuture(call.future, func(workflow.Future) {
						pending--
						r.collect(ctx, call)
					})
				}
			}
		}
		if pending == 0 {
			return
		}
		sel.Select(ctx)
	}
}

// inputsReady: every upstream node of id has finished, well or not.
func (r *runner) inputsReady(id string) bool {
	for _, dep := range r.graph.Deps(id) {
		if st := r.node(dep).Status; st == NodePending || st == NodeRunning {
			return false
		}
	}
	return true
}

type modelCall struct {
	id     string
	future workflow.Future
	// media: a generation node's render (activities.GeneratedMedia).
	media bool
}

// startNode computes a pure node at once or starts a model call; it
// returns the call to wait for.
func (r *runner) startNode(ctx workflow.Context, n *graph.Node) (modelCall, bool) {
	id := n.ID
	for _, dep := range r.graph.Deps(id) {
		if st := r.node(dep).Status; st != NodeSuccess {
			r.node(id).Status = NodeSkipped
			r.node(id).Error = fmt.Sprintf("skipped: upstream node %q did not succeed", dep)
			return modelCall{}, false
		}
	}
	now := workflow.Now(ctx)
	ns := r.node(id)
	ns.Status, ns.StartedAt = NodeRunning, &now

	var opts graph.EvalOptions
	if n.Type == graph.KindGuardrail && n.HasRule("pii") {
		// asked only where a pii rule runs: other runs' histories are unchanged
		opts.LegacyPII = workflow.GetVersion(ctx, ChangeRedactGuardrail, workflow.DefaultVersion, 1) == workflow.DefaultVersion
		if !opts.LegacyPII && workflow.GetVersion(ctx, ChangeRedactNames, workflow.DefaultVersion, 1) == workflow.DefaultVersion {
			opts.PIIRules = redact.Rules1
		}
	}
	step := n.EvaluateWith(r.in.Inputs, r.values, opts)
	switch {
	case step.Model != nil:
		retry := &temporal.RetryPolicy{
			InitialInterval:        time.Second,
			BackoffCoefficient:     2,
			MaximumInterval:        30 * time.Second,
			MaximumAttempts:        r.in.ModelAttempts,
			NonRetryableErrorTypes: []string{activities.ErrTypeModelRequest},
		}
		gen := activities.GenerateInput{RunID: r.in.RunID, NodeID: id, Request: *step.Model, Stream: id == r.in.StreamNode}
		// What the call is for, on its row in the Temporal UI.
		summary := fmt.Sprintf("node %s: model %s", id, step.Model.Model)
		if r.local && slices.Contains(r.in.InlineNodes, id) {
			lctx := workflow.WithLocalActivityOptions(ctx, workflow.LocalActivityOptions{StartToCloseTimeout: r.in.ModelTimeout, RetryPolicy: retry, Summary: summary})
			return modelCall{id: id, future: workflow.ExecuteLocalActivity(lctx, ActGenerate, gen)}, true
		}
		actx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
			StartToCloseTimeout: r.in.ModelTimeout,
			HeartbeatTimeout:    10 * time.Second,
			RetryPolicy:         retry,
			Summary:             summary,
		})
		return modelCall{id: id, future: workflow.ExecuteActivity(actx, ActGenerate, gen)}, true
	case step.Generation != nil:
		// New node kinds issue their commands only when a graph uses
		// them: runs of existing graphs replay unchanged.
		return modelCall{id: id, media: true, future: r.generate(ctx, id, *step.Generation)}, true
	case n.Type == graph.KindOutput:
		r.state.Outputs[n.Key] = step.Value
	}
	r.done(ctx, id, step.Value, step.Err)
	return modelCall{}, false
}

// generate renders a generation node's file on the bounded render work
// queue, like a pay-per-call render: heartbeats, a few attempts (a
// refused or impossible request is not retried), and a bound on the whole.
func (r *runner) generate(ctx workflow.Context, id string, req graph.GenerationRequest) workflow.Future {
	timeout := r.in.Generation.Timeouts[id]
	if timeout <= 0 {
		timeout = defaultGenerationTimeout
	}
	beat := r.in.Generation.Heartbeat
	if beat <= 0 {
		beat = defaultGenerationHeartbeat
	}
	actx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		TaskQueue:              RenderWorkQueue,
		ScheduleToCloseTimeout: timeout,
		StartToCloseTimeout:    timeout,
		HeartbeatTimeout:       beat,
		RetryPolicy: &temporal.RetryPolicy{InitialInterval: time.Second, MaximumInterval: 10 * time.Second, MaximumAttempts: 3,
			NonRetryableErrorTypes: []string{activities.ErrTypeGeneration}},
		Summary: fmt.Sprintf("node %s: %s render", id, req.Kind),
	})
	return workflow.ExecuteActivity(actx, ActGenerateMedia, activities.GenerateMediaInput{
		RunID: r.in.RunID, NodeID: id, ItemID: store.GeneratedItemID(r.in.RunID, id), Request: req,
	})
}

func (r *runner) collect(ctx workflow.Context, call modelCall) {
	if call.media {
		r.collectMedia(ctx, call)
		return
	}
	var out activities.GenerateOutput
	err := call.future.Get(ctx, &out)
	ns := r.node(call.id)
	if err == nil {
		ns.PromptTokens, ns.CompletionTokens, ns.CostMicros = out.PromptTokens, out.CompletionTokens, int64(out.Cost)
		r.state.PromptTokens += out.PromptTokens
		r.state.CompletionTokens += out.CompletionTokens
		r.state.Cost += out.Cost
	}
	r.done(ctx, call.id, out.Text, err)
}

// collectMedia waits for a generation node's file: its URL is the node's
// value, its item and price are kept for the run's finish.
func (r *runner) collectMedia(ctx workflow.Context, call modelCall) {
	var out activities.GeneratedMedia
	err := call.future.Get(ctx, &out)
	var timeout *temporal.TimeoutError
	if errors.As(err, &timeout) {
		err = errors.New("the render did not finish in time")
	}
	if err == nil {
		ns := r.node(call.id)
		ns.CostMicros, ns.ItemID = int64(out.Cost), out.Item.ID
		r.state.Cost += out.Cost
		r.mediaCost += out.Cost
		r.media = append(r.media, out.Item)
	}
	r.done(ctx, call.id, out.URL, err)
}

func (r *runner) done(ctx workflow.Context, id, value string, err error) {
	now := workflow.Now(ctx)
	ns := r.node(id)
	ns.FinishedAt = &now
	switch {
	case err != nil:
	case len(value) > graph.MaxNodeBytes:
		err, value = fmt.Errorf("its value would be %d KiB, %w", len(value)>>10, graph.ErrTooLarge), ""
	case r.bytes+len(value) > graph.MaxRunBytes:
		err, value = fmt.Errorf("the run's values would pass the %d KiB limit per run", graph.MaxRunBytes>>10), ""
	}
	r.bytes += len(value)
	if err != nil {
		ns.Status, ns.Error = NodeError, nodeError(err)
		if r.state.Error == "" {
			r.state.Error = fmt.Sprintf("node %q failed: %s", id, ns.Error)
		}
		return
	}
	ns.Status = NodeSuccess
	r.values[id] = value
}

// finish decides the status and records it with the credit settlement.
func (r *runner) finish(ctx workflow.Context) (RunState, error) {
	failed := r.state.Error != ""
	switch {
	case !failed:
		r.state.Status = StatusSuccess
	case len(r.state.Outputs) > 0:
		r.state.Status = StatusPartial
	default:
		r.state.Status = StatusError
	}
	// A successful run pays its cost; any other pays only for the files
	// its generation nodes made (they stay in the library), none of the
	// model calls. The hold is the run's upper bound: never more.
	charge := r.mediaCost
	if r.state.Status == StatusSuccess {
		charge = r.state.Cost
	}
	charge = min(charge, r.in.Held)
	nodes, _ := json.Marshal(r.state.Nodes)
	actx := r.shortCtx(ctx)
	err := r.run(actx, ActFinishRun, store.RunResult{
		RunID: r.in.RunID, Status: r.state.Status, Outputs: r.state.Outputs, Nodes: nodes,
		PromptTokens: r.state.PromptTokens, CompletionTokens: r.state.CompletionTokens,
		Cost: charge, Error: r.state.Error, FinishedAt: workflow.Now(ctx), Media: r.media,
	}).Get(ctx, nil)
	if err != nil {
		// The result cannot be recorded (a permanent failure, or retries
		// ran out): end the run as an error with only the reason, which
		// releases its hold, so nothing stays held and nothing is charged.
		r.state.Status, r.state.Outputs, charge = StatusError, map[string]string{}, 0
		r.state.Error = "the run's result could not be recorded: " + nodeError(err)
		if err := r.run(actx, ActFailRun, activities.FailInput{
			RunID: r.in.RunID, Error: r.state.Error, FinishedAt: workflow.Now(ctx),
		}).Get(ctx, nil); err != nil {
			return r.state, err
		}
	}
	r.state.Cost = charge
	_ = workflow.UpsertTypedSearchAttributes(ctx, AttrRunStatus.ValueSet(r.state.Status))
	return r.state, nil
}

func (r *runner) node(id string) *NodeState { return &r.state.Nodes[r.index[id]] }

// nodeError is the failure in the provider's or rule's own words, without
// Temporal's wrapping.
func nodeError(err error) string { return failureText(err, "the model did not answer in time") }
