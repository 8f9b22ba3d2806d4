package paycall

import (
	"context"
	"errors"
	"time"

	"conduit/internal/errs"
	"conduit/internal/runs"
	"conduit/internal/store"
	"conduit/internal/temporalx"
	"conduit/internal/x402"
	"conduit/workflows"
)

// Answer is a run to answer with: its record once read (nil until then).
type Answer struct {
	Kind      string
	RunID     string
	StatusURL string
	Finished  bool
	// Record is the run record of spec §2.3 (§2.4 for speech).
	Record map[string]any
	// deliver: the record carries a file that has not reached the caller.
	deliver bool
}

// pending is a run just started, its record not read yet.
func (s *Service) pending(k Kind, runID string) Answer {
	return Answer{Kind: k.Name, RunID: runID, StatusURL: s.statusURL(k, runID)}
}

// Look reads a run's record as it is now; an open run's record says where
// it is (stage), asking its workflow for at most a second.
func (s *Service) Look(ctx context.Context, kind, runID string) (Answer, error) {
	run, err := s.Store.MediaRun(ctx, runID)
	if err != nil {
		return Answer{}, err
	}
	a := s.answer(ctx, s.kind(kind), run)
	return a, nil
}

// Await returns once the run's workflow has closed or ctx ends.
func (s *Service) Await(ctx context.Context, runID string) {
	_ = s.Temporal.GetWorkflow(ctx, workflows.RenderWorkflowID(runID), "").Get(ctx, nil)
}

// Delivered records, once an answer was written whole, that the file it
// carried reached the caller (which ends its alreadyPaid offer).
func (s *Service) Delivered(ctx context.Context, a Answer) {
	if a.deliver {
		s.deliveries.record(context.WithoutCancel(ctx), delivery{runID: a.RunID})
	}
}

func (s *Service) answer(ctx context.Context, k Kind, run store.MediaRun) Answer {
	rec := s.record(k, run)
	if run.Status == "running" {
		var stage string
		if temporalx.AskOpen(ctx, s.Temporal, workflows.RenderWorkflowID(run.RunID), workflows.StageQuery, &stage) {
			rec["stage"] = stage
		}
	}
	return Answer{Kind: k.Name, RunID: run.RunID, StatusURL: s.statusURL(k, run.RunID), Finished: run.Finished(), Record: rec,
		deliver: run.Status == "success" && run.DeliveredAt == nil}
}

// record is the run record of spec §2.3 (§2.4 for speech).
func (s *Service) record(k Kind, r store.MediaRun) map[string]any {
	rec := map[string]any{
		"runId": r.RunID, "status": r.Status, "startedAt": r.StartedAt.UTC().Format(time.RFC3339Nano),
		"statusUrl": s.statusURL(k, r.RunID), "model": r.Request.Model,
		"network": r.Network, "payer": x402.DisplayAddress(r.Network, r.Payer), "paidUsd": r.Paid,
	}
	if r.Transaction != "" {
		rec["transaction"] = r.Transaction
	}
	if r.RetryOf != "" {
		rec["retryOf"] = r.RetryOf
	}
	k.Fields(rec, r.Request)
	if r.FinishedAt != nil {
		rec["finishedAt"] = r.FinishedAt.UTC().Format(time.RFC3339Nano)
		rec["durationMs"] = r.FinishedAt.Sub(r.StartedAt).Milliseconds()
	}
	switch {
	case r.Status == "success":
		u := s.fileURL(r.FileKey)
		rec[k.FileField] = u
		if k.Outputs {
			rec["outputs"] = map[string]any{k.FileField: u}
		}
	case r.Status == "running":
		rec["pollAfterMs"] = PollAfter.Milliseconds()
		rec["balanceUsd"] = r.Balance
		if r.Note != "" {
			rec["note"] = r.Note
		}
	case r.Failed():
		rec["reason"], rec["error"], rec["message"], rec["balanceUsd"] = r.Reason, r.Error, r.Message, r.Balance
		if k.FailedStep && r.FailedStep != "" {
			rec["failedStep"] = r.FailedStep
		}
		rec["retryable"] = r.RetriedBy == ""
		if r.RetriedBy == "" {
			rec["retryUrl"] = s.retryURL(k, r.RunID)
		} else {
			rec["retriedBy"] = map[string]any{"runId": r.RetriedBy, "statusUrl": s.statusURL(k, r.RetriedBy)}
			rec["retriedByRunId"] = r.RetriedBy
		}
	}
	return rec
}

// Claim opens the run a claim ticket names (GET <kind endpoint>?runId=&
// token=): 503 without the signing secret, 404 with how to encode '#' for
// a runId without one, 400 unless both runId and token are present, 403
// for a bad, expired or mismatched ticket, 404 for an unknown run (or one
// of another kind). Its record is read when answered (Look).
func (s *Service) Claim(ctx context.Context, kind, runID, token string) (Answer, error) {
	run, err := s.claimed(ctx, s.kind(kind), runID, token)
	if err != nil {
		return Answer{}, err
	}
	a := s.pending(s.kind(kind), run.RunID)
	a.Finished = run.Finished()
	return a, nil
}

func (s *Service) claimed(ctx context.Context, k Kind, runID, token string) (store.MediaRun, error) {
	if err := s.claims(); err != nil {
		return store.MediaRun{}, err
	}
	if runID != "" && runs.CheckRunID(runID) != nil {
		// Before the token: a raw '#' cut the token off with the id's tail.
		return store.MediaRun{}, runs.CheckRunID(runID)
	}
	if runID == "" || token == "" {
		return store.MediaRun{}, errs.Invalidf("runId and token are both required (statusUrl and retryUrl carry them)")
	}
	if err := s.Media.Tickets.Verify(k.Name, runID, token); err != nil {
		return store.MediaRun{}, errs.Forbiddenf("the claim token is invalid, expired or not for this run")
	}
	run, err := s.Store.MediaRun(ctx, runID)
	if err == nil && run.Kind != k.Name {
		err = store.ErrNotFound
	}
	if errors.Is(err, store.ErrNotFound) {
		return store.MediaRun{}, errs.NotFoundf("run %s not found", runID)
	}
	return run, err
}
