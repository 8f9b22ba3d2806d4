package frontend_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"

	"conduit/app/apptest"
	"conduit/internal/money"
	"conduit/workflows"
)

// #14 item 6: a deploy drains renders instead of cancelling them. A worker
// stopped with a stop timeout (temporal.stop_timeout, 10m by default) stops
// taking tasks but lets the render it runs finish and report, so the render
// completes on its first attempt; the run ends once the next worker picks
// the workflow up, and the buyer pays once.
func TestDrainOnStopFinishesTheRunningRender(t *testing.T) {
	// The studio counts and releases jobs by prompt: one of its own per run.
	prompt := fmt.Sprintf("drain %d: a paper boat on a canal", time.Now().UnixNano())
	env.StopWorker()
	if err := env.StartDrainingWorker(2 * time.Minute); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			// Never leave a draining worker (or none) to the next test.
			env.Studio.Release(prompt)
			env.StopWorker()
			if err := env.StartWorker(); err != nil {
				t.Error(err)
			}
		}
	})

	w := newWallet(t, 2*money.USD)
	rec := wantStatus(t, buyVideo(t, w, map[string]any{"prompt": prompt, "model": "kine-3.0", "async": true}), http.StatusOK)
	runID := rec["runId"].(string)
	// The studio holds the job, so the render is running, and stays so,
	// when the worker is told to stop.
	if a := awaitRenderRunning(t, runID); a != 1 {
		t.Fatalf("the render runs attempt %d before any stop", a)
	}
	env.Studio.WaitSubmitted(t, prompt)
	stopped := make(chan time.Time, 1)
	go func() { env.StopWorker(); stopped <- time.Now() }()
	select {
	case <-stopped:
		t.Fatal("the worker stopped without waiting for the running render")
	case <-time.After(time.Second):
	}
	released := time.Now()
	env.Studio.Release(prompt)
	select {
	case at := <-stopped:
		t.Logf("the stopping worker drained the render %s after the studio released it", at.Sub(released).Round(time.Millisecond))
	case <-time.After(time.Minute):
		t.Fatal("the stopping worker still had not returned a minute after the render could finish")
	}

	// The stopped worker's render reported its result before the worker
	// returned: completed, on its first attempt, before any other worker.
	if ev := renderEvents(t, runID); ev.scheduled != 1 || ev.startedAttempt != 1 || !ev.completed || ev.unsuccessful != 0 {
		t.Fatalf("render activity after the drain: %+v; want one, completed on attempt 1", ev)
	}

	if err := env.StartWorker(); err != nil {
		t.Fatal(err)
	}
	rec = finished(t, rec["statusUrl"].(string))
	if rec["status"] != "success" {
		t.Fatalf("%v", rec)
	}
	wantClip(t, rec["video"].(string), 5, 1280, 720)
	// One order at the studio, one settlement, one charge.
	if n := env.Studio.Submits(prompt); n != 1 {
		t.Fatalf("the studio got %d orders for one run", n)
	}
	if w.tokens(t) != 1_110_000 || walletBalance(t, w) != 0 {
		t.Fatalf("tokens %d balance %s", w.tokens(t), walletBalance(t, w))
	}
}

// The contrast: with stop timeout 0 (the harness's crash-like stop) the
// running render is cancelled, and only a second attempt, on the next
// worker, finishes it.
func TestDrainStopTimeoutZeroCancelsTheRender(t *testing.T) {
	w := newWallet(t, 2*money.USD)
	prompt := fmt.Sprintf("no drain %d: a paper boat on a river", time.Now().UnixNano())
	rec := wantStatus(t, buyVideo(t, w, map[string]any{"prompt": prompt, "model": "kine-3.0", "async": true}), http.StatusOK)
	runID := rec["runId"].(string)
	awaitRenderRunning(t, runID)
	env.Studio.WaitSubmitted(t, prompt)
	env.StopWorker()
	env.Studio.Release(prompt)
	if err := env.StartWorker(); err != nil {
		t.Fatal(err)
	}
	rec = finished(t, rec["statusUrl"].(string))
	if rec["status"] != "success" {
		t.Fatalf("%v", rec)
	}
	if ev := renderEvents(t, runID); ev.scheduled != 1 || ev.startedAttempt < 2 || !ev.completed {
		t.Fatalf("render activity after a stop without drain: %+v; want it completed on a later attempt", ev)
	}
	if w.tokens(t) != 1_110_000 || walletBalance(t, w) != 0 {
		t.Fatalf("tokens %d balance %s", w.tokens(t), walletBalance(t, w))
	}
}

// awaitRenderRunning waits until a worker runs the run's render activity
// (on the renders-work queue) and returns the attempt it runs.
func awaitRenderRunning(t *testing.T, runID string) int32 {
	t.Helper()
	var attempt int32
	apptest.Eventually(t, time.Minute, "the render activity of "+runID+" to start", func() error {
		desc, err := env.Platform.Temporal.DescribeWorkflowExecution(context.Background(), workflows.RenderWorkflowID(runID), "")
		if err != nil {
			return err
		}
		for _, pa := range desc.GetPendingActivities() {
			if pa.GetActivityType().GetName() == workflows.ActRender && pa.GetState() == enumspb.PENDING_ACTIVITY_STATE_STARTED {
				attempt = pa.GetAttempt()
				return nil
			}
		}
		return fmt.Errorf("pending: %v", desc.GetPendingActivities())
	})
	return attempt
}

// renderActivity is what a run's history records of its render activity.
type renderActivity struct {
	scheduled      int   // render activities scheduled
	startedAttempt int32 // the attempt its ActivityTaskStarted names (the last one)
	completed      bool
	unsuccessful   int // failed, timed out or cancelled
}

func renderEvents(t *testing.T, runID string) renderActivity {
	t.Helper()
	it := env.Platform.Temporal.GetWorkflowHistory(context.Background(), workflows.RenderWorkflowID(runID), "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	var r renderActivity
	render := map[int64]bool{} // scheduled event ids of render activities
	for it.HasNext() {
		ev, err := it.Next()
		if err != nil {
			t.Fatal(err)
		}
		if a := ev.GetActivityTaskScheduledEventAttributes(); a != nil && a.GetActivityType().GetName() == workflows.ActRender {
			render[ev.GetEventId()] = true
			r.scheduled++
		}
		if a := ev.GetActivityTaskStartedEventAttributes(); a != nil && render[a.GetScheduledEventId()] {
			r.startedAttempt = a.GetAttempt()
		}
		if a := ev.GetActivityTaskCompletedEventAttributes(); a != nil && render[a.GetScheduledEventId()] {
			r.completed = true
		}
		if a := ev.GetActivityTaskFailedEventAttributes(); a != nil && render[a.GetScheduledEventId()] {
			r.unsuccessful++
		}
		if a := ev.GetActivityTaskTimedOutEventAttributes(); a != nil && render[a.GetScheduledEventId()] {
			r.unsuccessful++
		}
		if a := ev.GetActivityTaskCanceledEventAttributes(); a != nil && render[a.GetScheduledEventId()] {
			r.unsuccessful++
		}
	}
	return r
}
