package workflows

import (
	"context"
	"encoding/json"
	"errors"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"conduit/activities"
)

type updateResult struct {
	accepted ZKAggregateAccepted
	err      error
}

func (u *updateResult) Accept()                   {}
func (u *updateResult) Reject(err error)          { u.err = err }
func (u *updateResult) Complete(v any, err error) { u.accepted, u.err = v.(ZKAggregateAccepted), err }

// One batch per run: statements are placed in order (a job enqueued twice
// keeps its first place), the batch closes on size, its members are told
// Aggregated then AggregationPublished, and the run continues as new with
// the next aggregation id, the statements that did not fit and the closed
// batch (to answer late retries).
func TestZKAggregationBatchesAndContinues(t *testing.T) {
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	agg := &activities.ZKAgg{}
	env.RegisterActivityWithOptions(agg.Record, activity.RegisterOptions{Name: ActZKRecordAggregation})
	env.RegisterActivityWithOptions(agg.Publish, activity.RegisterOptions{Name: ActZKPublishAggregation})
	var recorded activities.ZKBatch
	env.OnActivity(ActZKRecordAggregation, mock.Anything, mock.Anything).Return(func(_ context.Context, b activities.ZKBatch) (activities.ZKTree, error) {
		recorded = b
		return activities.ZKTree{Root: "0xroot", Proofs: [][]string{{"0x1"}, {"0x2"}, {"0x3"}}}, nil
	}).Once()
	env.OnActivity(ActZKPublishAggregation, mock.Anything, mock.Anything).Return(activities.ZKPublished{TxHash: "0xtx", BlockHash: "0xblock"}, nil).Once()
	var told []ZKAggregationNotice
	env.OnSignalExternalWorkflow(mock.Anything, mock.Anything, "", SignalZKAggregation, mock.Anything).Return(
		func(_, id, _, _ string, arg any) error {
			n := arg.(ZKAggregationNotice)
			if id != ZKJobWorkflowID(map[int]string{0: "a", 1: "b", 2: "c"}[n.LeafIndex]) {
				t.Errorf("notice for leaf %d sent to %s", n.LeafIndex, id)
			}
			told = append(told, n)
			return nil
		})
	st := func(c string) string { return "0x" + strings.Repeat(c, 64) }
	results := map[string]*updateResult{}
	send := func(key, job, stmt string) {
		r := &updateResult{}
		results[key] = r
		env.UpdateWorkflow(UpdateZKAggregate, key, r, ZKAggregateRequest{JobID: job, Statement: stmt})
	}
	env.RegisterDelayedCallback(func() {
		send("1", "a", st("a"))
		send("2", "b", st("b"))
		send("3", "a", st("a"))
		send("4", "bad", "0x12")
		send("5", "c", st("c"))
		send("6", "d", st("d"))
	}, time.Second)
	env.ExecuteWorkflow(ZKAggregation, ZKAggregationInput{DomainID: 9, AggregationID: 4, BatchSize: 3, BatchWait: time.Hour})

	var can *workflow.ContinueAsNewError
	if !errors.As(env.GetWorkflowError(), &can) {
		t.Fatalf("the run ended with %v, not continue-as-new", env.GetWorkflowError())
	}
	want := map[string]ZKAggregateAccepted{"1": {4, 0}, "2": {4, 1}, "3": {4, 0}, "5": {4, 2}, "6": {5, 0}}
	for k, w := range want {
		if r := results[k]; r.err != nil || r.accepted != w {
			t.Errorf("update %s: %+v %v, want %+v", k, r.accepted, r.err, w)
		}
	}
	if results["4"].err == nil {
		t.Error("a malformed statement was accepted")
	}
	if strings.Join(recorded.JobIDs, ",") != "a,b,c" || recorded.AggregationID != 4 || recorded.DomainID != 9 {
		t.Fatalf("recorded %+v", recorded)
	}
	// The test environment delivers signals to external workflows in no
	// fixed order: read them by status, then place.
	sort.SliceStable(told, func(i, j int) bool {
		if (told[i].Status == ZKAggregated) != (told[j].Status == ZKAggregated) {
			return told[i].Status == ZKAggregated
		}
		return told[i].LeafIndex < told[j].LeafIndex
	})
	if len(told) != 6 || told[0].Status != ZKAggregated || told[5].Status != ZKAggregationPublished || told[5].Receipt != "0xtx" ||
		told[0].Receipt != "" || told[1].MerkleProof[0] != "0x2" || told[2].NumberOfLeaves != 3 || told[2].Leaf != st("c") {
		t.Fatalf("notices %+v", told)
	}
	var next ZKAggregationInput
	if err := converter.GetDefaultDataConverter().FromPayloads(can.Input, &next); err != nil {
		t.Fatal(err)
	}
	if next.AggregationID != 5 || len(next.Pending) != 1 || next.Pending[0].JobID != "d" || len(next.Recent) != 3 || next.Recent[2] != (ZKAggregateMember{"c", 4, 2}) {
		t.Fatalf("continued with %+v", next)
	}
}

// A batch short of the size closes after the wait.
func TestZKAggregationClosesOnTime(t *testing.T) {
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	agg := &activities.ZKAgg{}
	env.RegisterActivityWithOptions(agg.Record, activity.RegisterOptions{Name: ActZKRecordAggregation})
	env.RegisterActivityWithOptions(agg.Publish, activity.RegisterOptions{Name: ActZKPublishAggregation})
	env.OnActivity(ActZKPublishAggregation, mock.Anything, mock.Anything).Return(activities.ZKPublished{TxHash: "0xtx"}, nil).Once()
	env.OnSignalExternalWorkflow(mock.Anything, mock.Anything, "", SignalZKAggregation, mock.Anything).Return(nil)
	var closedAt time.Time
	env.OnActivity(ActZKRecordAggregation, mock.Anything, mock.Anything).Return(func(context.Context, activities.ZKBatch) (activities.ZKTree, error) {
		closedAt = env.Now()
		return activities.ZKTree{Root: "0xr", Proofs: [][]string{{}}}, nil
	}).Once()
	r := &updateResult{}
	var sentAt time.Time
	env.RegisterDelayedCallback(func() {
		sentAt = env.Now()
		env.UpdateWorkflow(UpdateZKAggregate, "1", r, ZKAggregateRequest{JobID: "a", Statement: "0x" + strings.Repeat("0", 64)})
	}, time.Minute)
	env.ExecuteWorkflow(ZKAggregation, ZKAggregationInput{DomainID: 1, AggregationID: 1, BatchSize: 8, BatchWait: 10 * time.Second})
	var can *workflow.ContinueAsNewError
	if !errors.As(env.GetWorkflowError(), &can) || r.err != nil {
		t.Fatalf("%v %v", env.GetWorkflowError(), r.err)
	}
	if d := closedAt.Sub(sentAt); d < 10*time.Second {
		t.Fatalf("the batch closed %s after its first statement, before the wait", d)
	}
}

// The activity's mirror of the contract types has the same wire shape.
func TestZKEnqueueWireShape(t *testing.T) {
	in := ZKEnqueueInput{DomainID: 7, Request: ZKAggregateRequest{JobID: "j", Statement: "0xab"}}
	b, _ := json.Marshal(in)
	var mirror activities.ZKEnqueueInput
	if err := json.Unmarshal(b, &mirror); err != nil || mirror.DomainID != 7 || mirror.Request.JobID != "j" || mirror.Request.Statement != "0xab" {
		t.Fatalf("%+v %v", mirror, err)
	}
	back, _ := json.Marshal(mirror)
	if string(back) != string(b) {
		t.Fatalf("%s != %s", back, b)
	}
	out, _ := json.Marshal(activities.ZKEnqueued{AggregationID: 3, LeafIndex: 2})
	var acc ZKAggregateAccepted
	if err := json.Unmarshal(out, &acc); err != nil || acc != (ZKAggregateAccepted{3, 2}) {
		t.Fatalf("%s → %+v", out, acc)
	}
}
