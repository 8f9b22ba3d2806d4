package frontend_test

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	sdkworker "go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
	"google.golang.org/protobuf/encoding/protojson"

	"conduit/app/apptest"
	"conduit/internal/zkagg"
	"conduit/workflows"
)

// The proof job arrives with the other half of the proofs work; until then
// a stand-in plays its part of the contract (workflows/zktypes.go): it
// enqueues its statement through ActivityZKEnqueue and records the
// aggregation's signals.
const standInJob = "ZKAggTestJob"

type standInInput struct {
	DomainID  uint64 `json:"domainId"`
	JobID     string `json:"jobId"`
	Statement string `json:"statement"`
}

type standInResult struct {
	Accepted workflows.ZKAggregateAccepted   `json:"accepted"`
	Notices  []workflows.ZKAggregationNotice `json:"notices"`
}

func standInJobWorkflow(ctx workflow.Context, in standInInput) (standInResult, error) {
	var out standInResult
	actx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{TaskQueue: workflows.ZKAggregationQueue, StartToCloseTimeout: time.Minute})
	if err := workflow.ExecuteActivity(actx, workflows.ActivityZKEnqueue,
		workflows.ZKEnqueueInput{DomainID: in.DomainID, Request: workflows.ZKAggregateRequest{JobID: in.JobID, Statement: in.Statement}}).Get(ctx, &out.Accepted); err != nil {
		return out, err
	}
	ch := workflow.GetSignalChannel(ctx, workflows.SignalZKAggregation)
	for len(out.Notices) == 0 || out.Notices[len(out.Notices)-1].Status != workflows.ZKAggregationPublished {
		var n workflows.ZKAggregationNotice
		ch.Receive(ctx, &n)
		out.Notices = append(out.Notices, n)
	}
	return out, nil
}

var standInQueue = func() string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return "zkagg-test-jobs-" + hex.EncodeToString(b)
}()

func startStandIns(t *testing.T) {
	t.Helper()
	w := sdkworker.New(env.Platform.Temporal, standInQueue, sdkworker.Options{})
	w.RegisterWorkflowWithOptions(standInJobWorkflow, workflow.RegisterOptions{Name: standInJob})
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Stop)
}

func randomDomain() uint64 {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return 1000 + uint64(binary.BigEndian.Uint32(b[:]))
}

func randomStatement() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	return "0x" + hex.EncodeToString(b)
}

// runJobs starts one stand-in job per statement and waits for each to see
// its aggregation published.
func runJobs(t *testing.T, domain uint64, stmts []string) []standInResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	runs := make([]client.WorkflowRun, len(stmts))
	for i, s := range stmts {
		jobID := fmt.Sprintf("test-%d-%d-%s", domain, i, s[2:10])
		r, err := env.Platform.Temporal.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: workflows.ZKJobWorkflowID(jobID), TaskQueue: standInQueue},
			standInJob, standInInput{DomainID: domain, JobID: jobID, Statement: s})
		if err != nil {
			t.Fatal(err)
		}
		runs[i] = r
	}
	out := make([]standInResult, len(stmts))
	for i, r := range runs {
		if err := r.Get(ctx, &out[i]); err != nil {
			t.Fatalf("job %d: %v", i, err)
		}
	}
	return out
}

func hashes(t *testing.T, in []string) []zkagg.Hash {
	out := make([]zkagg.Hash, len(in))
	for i, h := range in {
		if len(h) != 66 {
			t.Fatalf("hash %q", h)
		}
		out[i] = common.HexToHash(h)
	}
	return out
}

// A full batch (zkagg.batch_size, 8) closes on size: every member is told
// Aggregated with its root and path, then AggregationPublished with the
// publishing transaction; the paths verify with zkVerify's rule and on
// chain (verifyProofAggregation), a wrong path does not; the endpoint
// answers the same aggregation by job and by statement.
func TestZKAggregationEndToEnd(t *testing.T) {
	startStandIns(t)
	ctx := context.Background()
	domain := randomDomain()
	size := env.Config.ZKAgg.BatchSize
	stmts := make([]string, size)
	for i := range stmts {
		stmts[i] = randomStatement()
	}
	results := runJobs(t, domain, stmts)

	seen := map[int]bool{}
	var root, receipt string
	for i, r := range results {
		if r.Accepted.AggregationID != 1 || seen[r.Accepted.LeafIndex] {
			t.Fatalf("job %d accepted at %+v", i, r.Accepted)
		}
		seen[r.Accepted.LeafIndex] = true
		if len(r.Notices) != 2 || r.Notices[0].Status != workflows.ZKAggregated || r.Notices[1].Status != workflows.ZKAggregationPublished {
			t.Fatalf("job %d notices: %+v", i, r.Notices)
		}
		agg, pub := r.Notices[0], r.Notices[1]
		if agg.Receipt != "" || pub.Receipt == "" || pub.ReceiptBlockHash == "" || agg.Root != pub.Root {
			t.Fatalf("job %d: aggregated %+v published %+v", i, agg, pub)
		}
		if agg.Leaf != stmts[i] || agg.LeafIndex != r.Accepted.LeafIndex || agg.NumberOfLeaves != size || agg.DomainID != domain || agg.AggregationID != 1 {
			t.Fatalf("job %d: %+v", i, agg)
		}
		if root == "" {
			root, receipt = agg.Root, pub.Receipt
		} else if root != agg.Root || receipt != pub.Receipt {
			t.Fatal("members of one batch were told different roots or receipts")
		}
		r := common.HexToHash(root)
		stmt := common.HexToHash(stmts[i])
		path := hashes(t, agg.MerkleProof)
		if !zkagg.Verify(r, zkagg.FromStatements([]zkagg.Hash{stmt}).Leaf(0), path, size, agg.LeafIndex) {
			t.Fatalf("job %d: its path does not verify", i)
		}
		ok, err := env.Platform.ZKContract.VerifyInclusion(ctx, domain, 1, stmt, path, size, agg.LeafIndex)
		if err != nil || !ok {
			t.Fatalf("job %d: on-chain inclusion check: %v %v", i, ok, err)
		}
		bad := append([]zkagg.Hash(nil), path...)
		bad[0][5] ^= 0x40
		if ok, err := env.Platform.ZKContract.VerifyInclusion(ctx, domain, 1, stmt, bad, size, agg.LeafIndex); err != nil || ok {
			t.Fatalf("job %d: a wrong path passed on chain: %v %v", i, ok, err)
		}
		if ok, _ := env.Platform.ZKContract.VerifyInclusion(ctx, domain, 1, stmt, path, size, (agg.LeafIndex+1)%size); ok {
			t.Fatalf("job %d: a wrong index passed on chain", i)
		}
	}
	// The receipt is a real transaction on the embedded network, in the
	// block named, and the contract holds the root.
	rcpt, err := env.Platform.Payments.Chain.Receipt(ctx, common.HexToHash(receipt))
	if err != nil || rcpt.BlockHash != common.HexToHash(results[0].Notices[1].ReceiptBlockHash) {
		t.Fatalf("the publishing transaction: %v %v", rcpt, err)
	}
	if got, err := env.Platform.ZKContract.PublishedRoot(ctx, domain, 1); err != nil || got != common.HexToHash(root) {
		t.Fatalf("contract root %x %v, want %s", got, err, root)
	}

	_, key := env.NewAccount(t)
	dom := strconv.FormatUint(domain, 10)
	byJob := env.Do(t, "GET", "/api/zkverify/aggregation/1?domainId="+dom+"&jobId="+url.QueryEscape(fmt.Sprintf("test-%d-%d-%s", domain, 3, stmts[3][2:10])), nil, apptest.Bearer(key)...)
	if byJob.Status != 200 {
		t.Fatalf("by job: %d %s", byJob.Status, byJob.Body)
	}
	got := byJob.JSON(t)
	want := results[3].Notices[1]
	if got["root"] != root || got["receipt"] != receipt || got["receiptBlockHash"] != want.ReceiptBlockHash || got["leaf"] != stmts[3] ||
		got["leafIndex"] != float64(want.LeafIndex) || got["numberOfLeaves"] != float64(size) || got["domainId"] != float64(domain) ||
		got["status"] != workflows.ZKAggregationPublished || fmt.Sprint(got["merkleProof"]) != fmt.Sprint(want.MerkleProof) {
		t.Fatalf("by job: %s\nwant %+v", byJob.Body, want)
	}
	byStmt := env.Do(t, "GET", "/api/zkverify/aggregation/1?domainId="+dom+"&statement="+stmts[3], nil, apptest.Bearer(key)...)
	if byStmt.Status != 200 || fmt.Sprint(byStmt.JSON(t)["merkleProof"]) != fmt.Sprint(want.MerkleProof) {
		t.Fatalf("by statement: %d %s", byStmt.Status, byStmt.Body)
	}
	summary := env.Do(t, "GET", "/api/zkverify/aggregation/1?domainId="+dom, nil, apptest.Bearer(key)...)
	if s := summary.JSON(t); summary.Status != 200 || s["root"] != root || s["merkleProof"] != nil || s["leafIndex"] != nil {
		t.Fatalf("summary: %d %s", summary.Status, summary.Body)
	}
	captureAggregationHistory(t, domain)
}

// A batch short of the size closes on time; its odd last leaf is promoted
// and its path still verifies on chain; the next statement opens the next
// aggregation of the domain.
func TestZKAggregationClosesOnTime(t *testing.T) {
	startStandIns(t)
	ctx := context.Background()
	domain := randomDomain()
	stmts := []string{randomStatement(), randomStatement(), randomStatement()}
	results := runJobs(t, domain, stmts)
	for i, r := range results {
		agg := r.Notices[0]
		if agg.NumberOfLeaves != 3 || agg.AggregationID != 1 {
			t.Fatalf("job %d: %+v", i, agg)
		}
		ok, err := env.Platform.ZKContract.VerifyInclusion(ctx, domain, 1, common.HexToHash(stmts[i]), hashes(t, agg.MerkleProof), 3, agg.LeafIndex)
		if err != nil || !ok {
			t.Fatalf("job %d on chain: %v %v", i, ok, err)
		}
	}
	// The jobs run at once, so any of them may hold the last (odd) place.
	promoted := 0
	for _, r := range results {
		if p := r.Notices[0]; p.LeafIndex == 2 {
			promoted++
			if len(p.MerkleProof) != 1 {
				t.Fatalf("the promoted leaf's path: %+v", p)
			}
		}
	}
	if promoted != 1 {
		t.Fatalf("%d jobs hold leaf 2", promoted)
	}
	next := runJobs(t, domain, []string{randomStatement()})
	if a := next[0].Notices[1]; a.AggregationID != 2 || a.NumberOfLeaves != 1 || a.LeafIndex != 0 || len(a.MerkleProof) != 0 {
		t.Fatalf("the next aggregation: %+v", a)
	}
	if ok, _ := env.Platform.ZKContract.VerifyInclusion(ctx, domain, 2, common.HexToHash(stmts[0]), nil, 1, 0); ok {
		t.Fatal("a statement of aggregation 1 verified in aggregation 2")
	}
}

// The endpoint's refusals.
func TestZKAggregationEndpointErrors(t *testing.T) {
	_, key := env.NewAccount(t)
	for _, c := range []struct {
		path   string
		status int
	}{
		{"/api/zkverify/aggregation/x", 400},
		{"/api/zkverify/aggregation/-1", 400},
		{"/api/zkverify/aggregation/1?domainId=z", 400},
		{"/api/zkverify/aggregation/1?jobId=a&statement=" + randomStatement(), 400},
		{"/api/zkverify/aggregation/1?statement=0x12", 400},
		{"/api/zkverify/aggregation/987654321", 404},
	} {
		r := env.Do(t, "GET", c.path, nil, apptest.Bearer(key)...)
		if r.Status != c.status || r.JSON(t)["error"] == nil {
			t.Errorf("%s: %d %s", c.path, r.Status, r.Body)
		}
	}
	if r := env.Do(t, "GET", "/api/zkverify/aggregation/1", nil); r.Status != 401 {
		t.Errorf("no key: %d", r.Status)
	}
}

// captureAggregationHistory writes the domain's first (continued-as-new)
// run for the replay suite when histories are being captured: the
// harness captures completed workflows only, and an aggregation never
// completes.
func captureAggregationHistory(t *testing.T, domain uint64) {
	dir := os.Getenv(apptest.CaptureEnv)
	if dir == "" {
		return
	}
	ctx := context.Background()
	var runID string
	apptest.Eventually(t, 30*time.Second, "the first aggregation run in visibility", func() error {
		resp, err := env.Platform.Temporal.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{
			Query: fmt.Sprintf("WorkflowId = '%s' AND ExecutionStatus = 'ContinuedAsNew'", workflows.ZKAggregationWorkflowID(domain))})
		if err != nil {
			return err
		}
		if len(resp.Executions) == 0 {
			return errors.New("not listed yet")
		}
		runID = resp.Executions[0].GetExecution().GetRunId()
		return nil
	})
	it := env.Platform.Temporal.GetWorkflowHistory(ctx, workflows.ZKAggregationWorkflowID(domain), runID, false, enums.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	h := &historypb.History{}
	for it.HasNext() {
		ev, err := it.Next()
		if err != nil {
			t.Fatal(err)
		}
		h.Events = append(h.Events, ev)
	}
	b, err := protojson.MarshalOptions{Indent: " "}.Marshal(h)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "zkaggregation-continued-sealed-batch.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
}
