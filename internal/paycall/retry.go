package paycall

import (
	"context"
	"time"

	"conduit/internal/errs"
	"conduit/internal/payments"
	"conduit/internal/runs"
	"conduit/internal/store"
	"conduit/workflows"
)

// RetryArgs is POST <kind endpoint>/retry?runId=&token=.
type RetryArgs struct {
	Kind, RunID, Token string
	// Decode reads the optional body (nil: there is none).
	Decode func(any) error
}

// retryRequest is the optional body of a retry: a new prompt or text
// (whichever the kind renders from) and async.
type retryRequest struct {
	Prompt *string `json:"prompt"`
	Text   *string `json:"text"`
	Async  *bool   `json:"async"`
}

// Retry renders a failed run again, as sold but for an optional new
// prompt or text (repriced when the kind's price follows its text), on
// the paying wallet's balance. Each failed run is retried once; the
// refusals are RetryRefused's.
func (s *Service) Retry(ctx context.Context, in RetryArgs) (Sold, error) {
	if err := s.selling(); err != nil {
		return Sold{}, err
	}
	k := s.kind(in.Kind)
	var body retryRequest
	if in.Decode != nil {
		if err := in.Decode(&body); err != nil {
			return Sold{}, err
		}
	}
	text, other, otherField := body.Prompt, body.Text, "text"
	if k.TextField == "text" {
		text, other, otherField = body.Text, body.Prompt, "prompt"
	}
	if other != nil {
		return Sold{}, errs.Invalidf("this retry takes %s, not %s", k.TextField, otherField)
	}
	gen := s.Media.Generation()
	if _, err := checkText(k.TextField, text, false, gen.MaxText(k.Name)); err != nil {
		return Sold{}, err
	}
	old, err := s.claimed(ctx, k, in.RunID, in.Token)
	if err != nil {
		return Sold{}, err
	}
	if why := store.RetryBlocked(old); why != "" {
		return Sold{}, s.retryRefused(k, &store.RetryRefusal{Why: why, RetriedBy: old.RetriedBy})
	}
	req, price := old.Request, old.Price
	if text != nil {
		k.SetText(&req, *text)
		if p, ok := gen.Reprice(k.Name, req); ok {
			price = p // a retry with a new text costs what that text costs
		}
	}
	runID := runs.NewRunID(time.Now())
	adm, err := s.start(ctx, k, workflows.RenderInput{
		Run: workflows.RenderRun{
			RunID: runID, Kind: k.Name, Request: req, RequestHash: requestHash(k.Name, req),
			Price: price, StartedAt: time.Now().UTC(),
		},
		RetryOf: old.RunID,
	})
	if err != nil {
		return Sold{}, err
	}
	if !adm.Accepted {
		return Sold{}, s.retryRefused(k, adm.Retry)
	}
	return Sold{Answer: s.pending(k, runID), Wait: s.wait(k, req), Async: body.Async != nil && *body.Async}, nil
}

// retryRefused is the caller's refusal for why a run cannot be retried:
// 402 with what the balance lacks, 409 with the run that retried it, or
// 409 saying what the run is doing.
func (s *Service) retryRefused(k Kind, r *store.RetryRefusal) error {
	switch r.Why {
	case store.RetryInsufficient:
		return &errs.Error{Kind: errs.PaymentRequired, Msg: "the wallet's balance no longer covers this retry; top up and try again",
			Extra: map[string]any{"balanceUsd": r.Balance, "requiredUsd": r.Price, "priceUsd": r.Price, "payUrl": s.BaseURL + payments.TopUpPath}}
	case store.RetryRetried:
		return &errs.Error{Kind: errs.Conflict, Msg: "this run was already retried; each failed run can be retried once",
			Extra: map[string]any{"retriedBy": map[string]any{"runId": r.RetriedBy, "statusUrl": s.statusURL(k, r.RetriedBy)}}}
	case store.RetrySucceeded:
		return errs.Conflictf("this run succeeded; there is nothing to retry")
	case store.RetryCollecting:
		return errs.Conflictf("this run outlasted its deadline and is still being collected; retry is not possible meanwhile")
	}
	return errs.Conflictf("this run is still rendering; poll statusUrl")
}
