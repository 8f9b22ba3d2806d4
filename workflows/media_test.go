package workflows

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"

	"conduit/activities"
	"conduit/internal/media"
	"conduit/internal/money"
	"conduit/internal/pricing"
	"conduit/internal/store"
)

const mediaGraph = `{
  "nodes": [
    {"id": "q", "type": "input", "key": "q"},
    {"id": "say", "type": "speech", "text": "Hello {{q}}"},
    {"id": "bed", "type": "music", "prompt": "calm {{q}}", "seconds": 15},
    {"id": "llm", "type": "model", "model": "m", "prompt": "{{q}}"},
    {"id": "outSay", "type": "output", "key": "say", "from": "say"},
    {"id": "outBed", "type": "output", "key": "bed", "from": "bed"},
    {"id": "outLLM", "type": "output", "key": "llm", "from": "llm"}
  ],
  "edges": [{"from": "q", "to": "say"}, {"from": "q", "to": "bed"}, {"from": "q", "to": "llm"},
    {"from": "say", "to": "outSay"}, {"from": "bed", "to": "outBed"}, {"from": "llm", "to": "outLLM"}]
}`

func runMediaGraph(t *testing.T, gen func(context.Context, activities.GenerateMediaInput) (activities.GeneratedMedia, error)) (RunState, store.RunResult) {
	t.Helper()
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	env.RegisterActivityWithOptions((&activities.Models{}).Generate, activity.RegisterOptions{Name: ActGenerate})
	env.RegisterActivityWithOptions((&activities.Library{}).GenerateMedia, activity.RegisterOptions{Name: ActGenerateMedia})
	env.RegisterActivityWithOptions((&activities.Runs{}).Finish, activity.RegisterOptions{Name: ActFinishRun})
	env.RegisterActivityWithOptions((&activities.Runs{}).Open, activity.RegisterOptions{Name: ActOpenRun})
	env.OnActivity(ActOpenRun, mock.Anything, mock.Anything).Return(activities.OpenedRun{RunID: "r1", Status: StatusRunning}, nil)
	env.OnActivity(ActGenerate, mock.Anything, mock.Anything).Return(activities.GenerateOutput{Text: "text", Cost: 7}, nil)
	env.OnActivity(ActGenerateMedia, mock.Anything, mock.Anything).Return(gen)
	var finished store.RunResult
	env.OnActivity(ActFinishRun, mock.Anything, mock.Anything).Return(func(_ context.Context, in store.RunResult) error {
		finished = in
		return nil
	})
	t0 := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	env.SetStartTime(t0)
	env.ExecuteWorkflow(PipelineRun, RunInput{
		RunID: "r1", Graph: json.RawMessage(mediaGraph), Inputs: map[string]string{"q": "x"},
		Held: 1_000_000, ModelTimeout: time.Minute, ModelAttempts: 2, StartedAt: t0,
		Generation: GenerationBounds{Timeouts: map[string]time.Duration{"say": time.Minute, "bed": time.Minute}, Heartbeat: 10 * time.Second},
	})
	if !env.IsWorkflowCompleted() || env.GetWorkflowError() != nil {
		t.Fatalf("workflow: %v", env.GetWorkflowError())
	}
	var st RunState
	if err := env.GetWorkflowResult(&st); err != nil {
		t.Fatal(err)
	}
	return st, finished
}

func generated(_ context.Context, in activities.GenerateMediaInput) (activities.GeneratedMedia, error) {
	price := map[string]int64{"speech": 20_000, "music": 60_000}[in.Request.Kind]
	return activities.GeneratedMedia{URL: "https://files.example/" + in.ItemID, Cost: money.Micros(price),
		Item: store.MediaItem{ID: in.ItemID, NodeID: in.NodeID, Kind: "audio", Operation: in.Request.Kind}}, nil
}

// A generation node's value is its file's URL; a successful run pays its
// files and its model calls, and hands its items to the finish.
func TestGenerationNodesSucceed(t *testing.T) {
	var mu sync.Mutex
	asked := map[string]activities.GenerateMediaInput{}
	st, fin := runMediaGraph(t, func(ctx context.Context, in activities.GenerateMediaInput) (activities.GeneratedMedia, error) {
		mu.Lock()
		asked[in.NodeID] = in
		mu.Unlock()
		return generated(ctx, in)
	})
	say := store.GeneratedItemID("r1", "say")
	if st.Status != StatusSuccess || st.Outputs["say"] != "https://files.example/"+say || fin.Cost != 20_000+60_000+7 {
		t.Fatalf("%+v %+v", st, fin)
	}
	// The two renders run at once: their items come in the order they finish.
	ids := map[string]bool{}
	for _, it := range fin.Media {
		ids[it.ID] = true
	}
	if len(fin.Media) != 2 || !ids[say] || !ids[store.GeneratedItemID("r1", "bed")] {
		t.Fatalf("items %+v", fin.Media)
	}
	if len(asked) != 2 || asked["say"].Request.Text != "Hello x" || asked["bed"].Request.Seconds != 15 || asked["bed"].Request.Text != "calm x" {
		t.Fatalf("asked %+v", asked)
	}
	for _, n := range st.Nodes {
		if n.ID == "say" && (n.ItemID != say || n.CostMicros != 20_000) {
			t.Fatalf("node %+v", n)
		}
	}
}

// A failed generation node is charged nothing; a file another node made
// stays in the library and is charged even though the run is partial,
// while the model calls of a partial run stay free.
func TestFailedGenerationNodeChargesNothing(t *testing.T) {
	st, fin := runMediaGraph(t, func(ctx context.Context, in activities.GenerateMediaInput) (activities.GeneratedMedia, error) {
		if in.NodeID == "bed" {
			return activities.GeneratedMedia{}, temporal.NewNonRetryableApplicationError("the model's content filter declined this prompt", activities.ErrTypeGeneration, nil)
		}
		return generated(ctx, in)
	})
	if st.Status != StatusPartial || st.Error != `node "bed" failed: the model's content filter declined this prompt` {
		t.Fatalf("%+v", st)
	}
	if fin.Cost != 20_000 || len(fin.Media) != 1 || fin.Media[0].NodeID != "say" {
		t.Fatalf("finish %+v", fin)
	}
}

func runJob(t *testing.T, work func(context.Context, activities.MediaJobWork) (store.MediaItem, error), finishFails bool) (JobAdmission, []activities.FinishJobInput) {
	t.Helper()
	return runJobWith(t, work, finishFails, nil)
}

// runJobWith is runJob with its input changed by edit first.
func runJobWith(t *testing.T, work func(context.Context, activities.MediaJobWork) (store.MediaItem, error), finishFails bool, edit func(*MediaJobInput)) (JobAdmission, []activities.FinishJobInput) {
	t.Helper()
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	lib := &activities.Library{}
	env.RegisterActivityWithOptions(lib.OpenMediaJob, activity.RegisterOptions{Name: ActOpenMediaJob})
	env.RegisterActivityWithOptions(lib.RunMediaJob, activity.RegisterOptions{Name: ActRunMediaJob})
	env.RegisterActivityWithOptions(lib.FinishMediaJob, activity.RegisterOptions{Name: ActFinishMediaJob})
	env.OnActivity(ActOpenMediaJob, mock.Anything, mock.Anything).Return(activities.OpenedJob{Job: store.MediaJob{ID: "job_1", Status: "running"}}, nil)
	env.OnActivity(ActRunMediaJob, mock.Anything, mock.Anything).Return(work)
	var finishes []activities.FinishJobInput
	env.OnActivity(ActFinishMediaJob, mock.Anything, mock.Anything).Return(func(_ context.Context, in activities.FinishJobInput) error {
		finishes = append(finishes, in)
		if finishFails && in.Result.Item != nil {
			return temporal.NewNonRetryableApplicationError("cannot write", activities.ErrPermanent, nil)
		}
		return nil
	})
	var adm JobAdmission
	env.RegisterDelayedCallback(func() {
		env.UpdateWorkflow(AdmissionUpdate, "u1", &testsuite.TestUpdateCallback{
			OnAccept: func() {}, OnReject: func(err error) { t.Errorf("update rejected: %v", err) },
			OnComplete: func(v any, err error) {
				if err != nil {
					t.Errorf("update: %v", err)
					return
				}
				adm = v.(JobAdmission)
			},
		}, JobRequest{})
	}, 0)
	t0 := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	env.SetStartTime(t0)
	in := MediaJobInput{
		Job:    MediaJob{ID: "job_1", AccountID: "acct_1", Kind: "assemble", Operation: media.OpConcat, SourceItems: []string{"med_a", "med_b"}, CreatedAt: t0},
		ItemID: "med_out", Spec: media.EditSpec{Op: media.OpConcat}, Timeout: time.Minute, HeartbeatTimeout: 10 * time.Second,
	}
	if edit != nil {
		edit(&in)
	}
	env.ExecuteWorkflow(MediaEdit, in)
	if !env.IsWorkflowCompleted() || env.GetWorkflowError() != nil {
		t.Fatalf("workflow: %v", env.GetWorkflowError())
	}
	return adm, finishes
}

func TestMediaEditRecordsItsItem(t *testing.T) {
	adm, fin := runJob(t, func(_ context.Context, w activities.MediaJobWork) (store.MediaItem, error) {
		if w.ItemID != "med_out" || len(w.Sources) != 2 || w.Spec.Op != media.OpConcat {
			t.Errorf("work %+v", w)
		}
		return store.MediaItem{ID: w.ItemID, BlobKey: "library/med_out.mp3"}, nil
	}, false)
	if !adm.Accepted || adm.Job.ID != "job_1" {
		t.Fatalf("admission %+v", adm)
	}
	if len(fin) != 1 || fin[0].Result.Item == nil || fin[0].Result.Item.ID != "med_out" || fin[0].Result.Error != "" {
		t.Fatalf("finish %+v", fin)
	}
}

func TestMediaEditFailureRecordsTheError(t *testing.T) {
	_, fin := runJob(t, func(context.Context, activities.MediaJobWork) (store.MediaItem, error) {
		return store.MediaItem{}, temporal.NewNonRetryableApplicationError("the items to join must all be videos or all be audio", activities.ErrTypeMediaJob, nil)
	}, false)
	if len(fin) != 1 || fin[0].Result.Item != nil || fin[0].Result.Error != "the items to join must all be videos or all be audio" {
		t.Fatalf("finish %+v", fin)
	}
}

// A success that cannot be recorded becomes a recorded failure (releasing
// the hold) and its file is removed: nothing is half-written.
func TestMediaEditUnrecordableSuccessIsUndone(t *testing.T) {
	_, fin := runJob(t, func(_ context.Context, w activities.MediaJobWork) (store.MediaItem, error) {
		return store.MediaItem{ID: w.ItemID, BlobKey: "library/med_out.mp3"}, nil
	}, true)
	if len(fin) != 2 || fin[1].Result.Item != nil || fin[1].Discard != "library/med_out.mp3" || fin[1].Result.Error == "" {
		t.Fatalf("finish %+v", fin)
	}
}

// meteredJob is a job priced at 0.0002 USD a second (at least 0.01),
// holding the price of 600 s.
func meteredJob(in *MediaJobInput) {
	in.Rate = pricing.JobRate{PerSecond: 200, Minimum: 10_000}
	in.Job.Price = in.Rate.Charge(600)
}

// A metered job is charged the seconds of media it made, on the library's
// own work queue.
func TestMeteredJobIsChargedItsOutputsSeconds(t *testing.T) {
	var queue string
	_, fin := runJobWith(t, func(ctx context.Context, w activities.MediaJobWork) (store.MediaItem, error) {
		queue = activity.GetInfo(ctx).TaskQueue
		d := 90 * time.Second
		return store.MediaItem{ID: w.ItemID, BlobKey: "library/med_out.mp3", Duration: &d}, nil
	}, false, meteredJob)
	if queue != LibraryWorkQueue {
		t.Errorf("the work ran on %q", queue)
	}
	if len(fin) != 1 || fin[0].Result.Charge == nil || *fin[0].Result.Charge != 18_000 {
		t.Fatalf("finish %+v", fin)
	}
}

// A job that reaches its timeout is charged what its heartbeats said it
// encoded (across attempts), not released free; a lost worker's
// heartbeat timeout and a failure are not charged.
func TestTimedOutJobIsChargedTheWorkDone(t *testing.T) {
	_, fin := runJobWith(t, func(context.Context, activities.MediaJobWork) (store.MediaItem, error) {
		return store.MediaItem{}, temporal.NewTimeoutError(enumspb.TIMEOUT_TYPE_SCHEDULE_TO_CLOSE, nil, activities.JobProgress{Stage: "editing", Encoded: 240, Earlier: 60})
	}, false, meteredJob)
	if len(fin) != 1 || fin[0].Result.Item != nil || fin[0].Result.Charge == nil || *fin[0].Result.Charge != 60_000 ||
		!strings.Contains(fin[0].Result.Error, "300.0 s of media encoded") {
		t.Fatalf("finish %+v", fin)
	}
	// Without a heartbeat: the minimum.
	_, fin = runJobWith(t, func(context.Context, activities.MediaJobWork) (store.MediaItem, error) {
		return store.MediaItem{}, temporal.NewTimeoutError(enumspb.TIMEOUT_TYPE_START_TO_CLOSE, nil)
	}, false, meteredJob)
	if len(fin) != 1 || fin[0].Result.Charge == nil || *fin[0].Result.Charge != 10_000 {
		t.Fatalf("finish %+v", fin)
	}
	// Never more than the hold.
	_, fin = runJobWith(t, func(context.Context, activities.MediaJobWork) (store.MediaItem, error) {
		return store.MediaItem{}, temporal.NewTimeoutError(enumspb.TIMEOUT_TYPE_SCHEDULE_TO_CLOSE, nil, activities.JobProgress{Encoded: 5000})
	}, false, meteredJob)
	if len(fin) != 1 || fin[0].Result.Charge == nil || *fin[0].Result.Charge != 120_000 {
		t.Fatalf("finish %+v", fin)
	}
	for _, err := range []error{
		temporal.NewTimeoutError(enumspb.TIMEOUT_TYPE_HEARTBEAT, nil, activities.JobProgress{Encoded: 240}),
		temporal.NewNonRetryableApplicationError("the items to join must all be videos or all be audio", activities.ErrTypeMediaJob, nil),
	} {
		_, fin = runJobWith(t, func(context.Context, activities.MediaJobWork) (store.MediaItem, error) { return store.MediaItem{}, err }, false, meteredJob)
		if len(fin) != 1 || fin[0].Result.Charge != nil {
			t.Fatalf("%v: finish %+v", err, fin)
		}
	}
}
