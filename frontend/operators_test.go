package frontend_test

import (
	"context"
	"net/http"
	"slices"
	"testing"

	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/api/enums/v1"

	"conduit/frontend"
	"conduit/internal/codec"
	"conduit/internal/money"
	"conduit/workflows"
)

// What an operator reads in the Temporal UI: each activity and timer of a
// run and a render says what it is for, and a render's result names how
// it ended.
func TestTemporalUIShowsWhatEachStepIsFor(t *testing.T) {
	c, err := codec.Parse(env.Config.Temporal.CodecKeys)
	if err != nil {
		t.Fatal(err)
	}
	dc := c.DataConverter()
	summaries := func(t *testing.T, workflowID string) (got []string, result *commonpb.Payloads) {
		t.Helper()
		it := env.Platform.Temporal.GetWorkflowHistory(context.Background(), workflowID, "", false, enums.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
		for it.HasNext() {
			ev, err := it.Next()
			if err != nil {
				t.Fatal(err)
			}
			if p := ev.GetUserMetadata().GetSummary(); p != nil {
				var s string
				if err := dc.FromPayload(p, &s); err != nil {
					t.Fatalf("summary of event %d: %v", ev.GetEventId(), err)
				}
				got = append(got, s)
			}
			if a := ev.GetWorkflowExecutionCompletedEventAttributes(); a != nil {
				result = a.GetResult()
			}
		}
		return got, result
	}

	_, key := env.NewAccount(t)
	id, _ := chatPipeline(t, key, "local-echo")
	inv := invoke(t, key, id, map[string]any{"question": "what is this step"})
	runID := inv["runId"].(string)
	waitRun(t, key, inv["statusUrl"].(string))
	got, _ := summaries(t, workflows.PipelineRunWorkflowID(runID))
	if !slices.ContainsFunc(got, func(s string) bool { return len(s) > 5 && s[:5] == "node " }) {
		t.Fatalf("the run's model call has no summary: %q", got)
	}

	w := newWallet(t, money.USD)
	rec := wantStatus(t, buy(t, frontend.SpeechPath, w, map[string]any{"text": "Name each step."}), http.StatusOK)
	got, result := summaries(t, workflows.RenderWorkflowID(rec["runId"].(string)))
	if !slices.Contains(got, "speech render") || !slices.Contains(got, "deadline") {
		t.Fatalf("the render's steps have no summaries: %q", got)
	}
	var out workflows.RenderOutcome
	if result == nil || dc.FromPayloads(result, &out) != nil || out.Status != "success" || out.RunID != rec["runId"] {
		t.Fatalf("render result %+v (%v)", out, result)
	}
}
