package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/google/jsonschema-go/jsonschema"

	"conduit/internal/errs"
	"conduit/internal/graph"
	"conduit/internal/money"
	"conduit/internal/pipelines"
	"conduit/internal/runs"
	"conduit/internal/store"
	"conduit/workflows"
)

// MaxWait is the longest run_pipeline waits for its run.
const MaxWait = 60 * time.Second

// pollEvery is how often a waiting run_pipeline looks at its run.
const pollEvery = 200 * time.Millisecond

// RunArgs are run_pipeline's arguments.
type RunArgs struct {
	PipelineID     string         `json:"pipelineId" jsonschema:"the pipeline's id"`
	Inputs         map[string]any `json:"inputs" jsonschema:"the run's inputs, keyed by the contract's input keys; every required key must be there"`
	WaitSeconds    int            `json:"waitSeconds,omitempty" jsonschema:"wait up to this many seconds (1 to 60) for the run to finish; 0 or absent answers at once"`
	IdempotencyKey string         `json:"idempotencyKey,omitempty" jsonschema:"a key of your choosing (at most 200 characters): the same key with the same inputs returns the same run instead of starting another"`
}

func refineRun(s *jsonschema.Schema) {
	s.Properties["waitSeconds"].Minimum = jsonschema.Ptr(0.0)
	s.Properties["waitSeconds"].Maximum = jsonschema.Ptr(MaxWait.Seconds())
	s.Properties["idempotencyKey"].MaxLength = jsonschema.Ptr(200)
}

// RunAnswer is a run's record with where to find it again.
type RunAnswer struct {
	runs.Record
	PipelineID string `json:"pipelineId"`
	// StatusURL is the REST poll URL of the run (spec §4.2).
	StatusURL string `json:"statusUrl" jsonschema:"the run's REST poll URL (GET with the same key)"`
	// Existing says an idempotencyKey returned a run started before.
	Existing bool `json:"existing,omitempty" jsonschema:"true when idempotencyKey returned a run started before"`
}

func (t *toolset) answer(ctx context.Context, r store.Run) RunAnswer {
	out := RunAnswer{Record: t.Runs.Detailed(ctx, r), PipelineID: r.PipelineID, StatusURL: t.Runs.StatusURL(r.PipelineID, r.RunID)}
	out.Kind = r.Kind
	return out
}

func (t *toolset) runPipeline(ctx context.Context, c *Call, in RunArgs) (RunAnswer, error) {
	account := c.Principal.AccountID
	if in.WaitSeconds < 0 || in.WaitSeconds > int(MaxWait.Seconds()) {
		return RunAnswer{}, errs.Invalidf("waitSeconds must be 0 to %d", int(MaxWait.Seconds()))
	}
	if len(in.IdempotencyKey) > 200 {
		return RunAnswer{}, errs.Invalidf("idempotencyKey must be at most 200 characters")
	}
	p, err := t.Pipelines.Owned(ctx, account, in.PipelineID)
	if err != nil {
		return RunAnswer{}, err
	}
	target, err := t.Runs.Callable(ctx, p)
	if err != nil {
		return RunAnswer{}, err
	}
	inputs, err := runs.CheckInputs(target.Graph, rawInputs(in.Inputs))
	if err != nil {
		return RunAnswer{}, err
	}
	// A run started here is an invoke run: the same request as POST
	// …/invoke with these inputs, the same idempotency, the same history.
	run, existing, err := t.Runs.Start(ctx, account, target, runs.Request{Kind: "invoke", Inputs: inputs, IdempotencyKey: strings.TrimSpace(in.IdempotencyKey)})
	if err != nil {
		return RunAnswer{}, err
	}
	if in.WaitSeconds > 0 {
		run = t.wait(ctx, c, run, time.Duration(in.WaitSeconds)*time.Second)
	}
	out := t.answer(ctx, run)
	out.Existing = existing
	return out, nil
}

// rawInputs is the inputs object as JSON (nil when absent).
func rawInputs(inputs map[string]any) json.RawMessage {
	if inputs == nil {
		return nil
	}
	b, _ := json.Marshal(inputs)
	return b
}

// wait follows run until it finishes or d has passed, reporting each
// change of its nodes as progress (nodes done of all nodes). It answers
// the run as it last saw it.
func (t *toolset) wait(ctx context.Context, c *Call, run store.Run, d time.Duration) store.Run {
	deadline := time.NewTimer(d)
	defer deadline.Stop()
	tick := time.NewTicker(pollEvery)
	defer tick.Stop()
	last := ""
	for {
		if r, err := t.Runs.ForAccount(ctx, run.AccountID, run.RunID); err == nil {
			run = r
		}
		if run.Status != workflows.StatusRunning {
			return run
		}
		if nodes, ok := t.Runs.Live(ctx, run.WorkflowID); ok {
			done, msg := progressOf(nodes)
			if msg != last {
				c.Progress(ctx, float64(done), float64(len(nodes)), msg)
				last = msg
			}
		}
		select {
		case <-ctx.Done():
			return run
		case <-deadline.C:
			return run
		case <-tick.C:
		}
	}
}

// progressOf counts finished nodes and says which are running.
func progressOf(nodes []runs.Node) (int, string) {
	done := 0
	var running []string
	for _, n := range nodes {
		switch n.Status {
		case workflows.NodeSuccess, workflows.NodeError, workflows.NodeSkipped:
			done++
		case workflows.NodeRunning:
			running = append(running, n.ID)
		}
	}
	msg := fmt.Sprintf("%d of %d nodes done", done, len(nodes))
	if len(running) > 0 {
		msg += "; running: " + strings.Join(running, ", ")
	}
	return done, msg
}

// RunRef names a run.
type RunRef struct {
	RunID string `json:"runId" jsonschema:"the run's id, <timestamp>#<8 hex>, as run_pipeline or list_runs gave it"`
}

func (t *toolset) getRun(ctx context.Context, c *Call, in RunRef) (RunAnswer, error) {
	r, err := t.Runs.ForAccount(ctx, c.Principal.AccountID, in.RunID)
	if err != nil {
		return RunAnswer{}, err
	}
	return t.answer(ctx, r), nil
}

// ListRunsArgs are list_runs' arguments.
type ListRunsArgs struct {
	PipelineID string `json:"pipelineId" jsonschema:"the pipeline's id"`
	Status     string `json:"status,omitempty" jsonschema:"only runs with this status"`
	Limit      int    `json:"limit,omitempty" jsonschema:"runs per page, 1 to 100 (default 20)"`
	After      string `json:"after,omitempty" jsonschema:"continue after this run id: the nextAfter of the previous page"`
}

func refineListRuns(s *jsonschema.Schema) {
	for _, st := range runs.Statuses {
		s.Properties["status"].Enum = append(s.Properties["status"].Enum, st)
	}
	s.Properties["limit"].Minimum = jsonschema.Ptr(1.0)
	s.Properties["limit"].Maximum = jsonschema.Ptr(float64(runs.MaxPage))
}

// RunList answers list_runs.
type RunList struct {
	Runs      []runs.Record `json:"runs" jsonschema:"newest first"`
	NextAfter string        `json:"nextAfter,omitempty" jsonschema:"set when more runs follow: pass it as after"`
}

func (t *toolset) listRuns(ctx context.Context, c *Call, in ListRunsArgs) (RunList, error) {
	p, err := t.Pipelines.Owned(ctx, c.Principal.AccountID, in.PipelineID)
	if err != nil {
		return RunList{}, err
	}
	q := runs.PageQuery{Status: in.Status, After: in.After, Limit: in.Limit}
	if q.Limit == 0 {
		q.Limit = 20
	}
	page, err := t.Runs.History(ctx, p.ID, q)
	if err != nil {
		return RunList{}, err
	}
	return RunList{Runs: page.Runs, NextAfter: page.NextAfter}, nil
}

// EstimateArgs are estimate_run_cost's arguments.
type EstimateArgs struct {
	PipelineID string         `json:"pipelineId" jsonschema:"the pipeline's id"`
	Inputs     map[string]any `json:"inputs" jsonschema:"the inputs the run would get, keyed by the contract's input keys"`
	Draft      bool           `json:"draft,omitempty" jsonschema:"estimate the saved draft instead of the serving version"`
}

// CostEstimate answers estimate_run_cost.
type CostEstimate struct {
	runs.Estimate
	Version    *int         `json:"version,omitempty" jsonschema:"the serving version estimated (absent for the draft)"`
	BalanceUSD money.Micros `json:"balanceUsd" jsonschema:"the account's spendable credit, in USD"`
	Affordable bool         `json:"affordable" jsonschema:"true when the balance covers maxUsd, the hold a run takes"`
}

func (t *toolset) estimateRunCost(ctx context.Context, c *Call, in EstimateArgs) (CostEstimate, error) {
	p, err := t.Pipelines.Owned(ctx, c.Principal.AccountID, in.PipelineID)
	if err != nil {
		return CostEstimate{}, err
	}
	var g *graph.Graph
	var out CostEstimate
	if in.Draft {
		if g, err = pipelines.ParseGraph(p.Draft); err != nil {
			return out, err
		}
		if v := t.Pipelines.Validate(g); !v.Valid {
			return out, &errs.Error{Kind: errs.Invalid, Msg: "the draft is not valid, so it cannot run; fix it first", Extra: map[string]any{"problems": v.Problems}}
		}
	} else {
		target, err := t.Runs.Callable(ctx, p)
		if err != nil {
			return out, err
		}
		g, out.Version = target.Graph, &target.Version.Version
	}
	inputs, err := runs.CheckInputs(g, rawInputs(in.Inputs))
	if err != nil {
		return out, err
	}
	if out.Estimate, err = t.Runs.Estimate(g, inputs); err != nil {
		return out, err
	}
	if out.BalanceUSD, err = t.Store.Balance(ctx, c.Principal.AccountID); err != nil {
		return out, err
	}
	out.Affordable = out.BalanceUSD >= out.MaxUSD
	return out, nil
}
