package frontend_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/big"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/crypto"

	"conduit/app/apptest"
	"conduit/internal/apikey"
	"conduit/internal/quota"
	"conduit/internal/zkstatement"
	"conduit/workflows"
)

// fixture reads one of the snarkjs fixtures (internal/groth16/testdata,
// made by its gen.sh with circom2 and snarkjs).
func fixture(t *testing.T, name string) json.RawMessage {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "internal", "groth16", "testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// fakeAggregation stands in for the aggregation's side of the contract
// (workflows/zktypes.go) until it is merged: it registers
// ActivityZKEnqueue on the real worker, records what jobs enqueue and
// answers each with a new aggregation id. The test then sends the
// notices an aggregation sends.
type fakeAggregation struct {
	mu   sync.Mutex
	next uint64
	got  map[string]workflows.ZKEnqueueInput
}

func (f *fakeAggregation) enqueue(_ context.Context, in workflows.ZKEnqueueInput) (workflows.ZKAggregateAccepted, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.next++
	f.got[in.Request.JobID] = in
	return workflows.ZKAggregateAccepted{AggregationID: 1000 + f.next, LeafIndex: 0}, nil
}

// withFakeAggregation restarts the worker with the fake registered, and
// without it when the test ends.
func withFakeAggregation(t *testing.T) *fakeAggregation {
	t.Helper()
	if env.Platform.ZKEnqueue != nil {
		t.Fatal("an aggregation activity is wired already: this test's fake would shadow it")
	}
	f := &fakeAggregation{got: map[string]workflows.ZKEnqueueInput{}}
	env.StopWorker()
	env.Platform.ZKEnqueue = f.enqueue
	if err := env.StartWorker(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		env.StopWorker()
		env.Platform.ZKEnqueue = nil
		if err := env.StartWorker(); err != nil {
			t.Error(err)
		}
	})
	return f
}

type jobStatus struct {
	JobID              string  `json:"jobId"`
	Status             string  `json:"status"`
	StatusID           int     `json:"statusId"`
	ProofType          string  `json:"proofType"`
	ChainID            *int64  `json:"chainId"`
	CreatedAt          string  `json:"createdAt"`
	UpdatedAt          string  `json:"updatedAt"`
	TxHash             string  `json:"txHash"`
	BlockHash          string  `json:"blockHash"`
	AggregationID      *uint64 `json:"aggregationId"`
	Statement          string  `json:"statement"`
	VKHash             string  `json:"vkHash"`
	VerifiedBy         string  `json:"verifiedBy"`
	VerifyOnly         bool    `json:"verifyOnly"`
	FailureReason      string  `json:"failureReason"`
	AggregationDetails *struct {
		Receipt          string   `json:"receipt"`
		ReceiptBlockHash string   `json:"receiptBlockHash"`
		Root             string   `json:"root"`
		Leaf             string   `json:"leaf"`
		LeafIndex        int      `json:"leafIndex"`
		NumberOfLeaves   int      `json:"numberOfLeaves"`
		MerkleProof      []string `json:"merkleProof"`
		DomainID         uint64   `json:"domainId"`
	} `json:"aggregationDetails"`
	Transitions []struct {
		Status string    `json:"status"`
		At     time.Time `json:"at"`
	} `json:"transitions"`
}

func (j jobStatus) path() []string {
	var out []string
	for _, tr := range j.Transitions {
		out = append(out, tr.Status)
	}
	return out
}

func readJob(t *testing.T, key, id string) jobStatus {
	t.Helper()
	r := env.Do(t, "GET", "/api/zkverify/job-status/"+id, nil, "Authorization", "Bearer "+key)
	if r.Status != http.StatusOK {
		t.Fatalf("job-status: %d %s", r.Status, r.Body)
	}
	var j jobStatus
	if err := json.Unmarshal(r.Body, &j); err != nil {
		t.Fatal(err)
	}
	return j
}

// awaitStatus polls the job until it reaches status.
func awaitStatus(t *testing.T, key, id, status string) jobStatus {
	t.Helper()
	var j jobStatus
	apptest.Eventually(t, 30*time.Second, "job "+id+" "+status, func() error {
		j = readJob(t, key, id)
		if j.Status == workflows.ZKFailed && status != workflows.ZKFailed {
			t.Fatalf("the job failed: %s", j.FailureReason)
		}
		if j.Status != status {
			return fmt.Errorf("status %s", j.Status)
		}
		return nil
	})
	return j
}

func registerVK(t *testing.T, key string, vk json.RawMessage) (string, bool) {
	t.Helper()
	r := env.Do(t, "POST", "/api/zkverify/register-vk", map[string]any{"proofType": "groth16", "vk": vk}, "Authorization", "Bearer "+key)
	if r.Status != http.StatusOK {
		t.Fatalf("register-vk: %d %s", r.Status, r.Body)
	}
	var out struct {
		VKHash            string `json:"vkHash"`
		AlreadyRegistered bool   `json:"alreadyRegistered"`
		Meta              struct {
			VKHash string `json:"vkHash"`
		} `json:"meta"`
	}
	_ = json.Unmarshal(r.Body, &out)
	if out.Meta.VKHash != out.VKHash {
		t.Fatalf("meta.vkHash %s differs from vkHash %s", out.Meta.VKHash, out.VKHash)
	}
	return out.VKHash, out.AlreadyRegistered
}

type submitted struct {
	JobID            string `json:"jobId"`
	OptimisticVerify string `json:"optimisticVerify"`
	Reason           string `json:"reason"`
}

func submit(t *testing.T, key string, body map[string]any) submitted {
	t.Helper()
	r := env.Do(t, "POST", "/api/zkverify/submit-proof", body, "Authorization", "Bearer "+key)
	if r.Status != http.StatusOK {
		t.Fatalf("submit-proof: %d %s", r.Status, r.Body)
	}
	var s submitted
	_ = json.Unmarshal(r.Body, &s)
	if s.JobID == "" {
		t.Fatalf("no jobId: %s", r.Body)
	}
	return s
}

// checkOnChain reads the job's transaction back from the embedded chain:
// its receipt is in the block the job names, and the registry holds the
// job's statement.
func checkOnChain(t *testing.T, j jobStatus) {
	t.Helper()
	reg := env.Platform.Proofs.Registry
	ctx := context.Background()
	rc, err := reg.Chain.Receipt(ctx, common.HexToHash(j.TxHash))
	if err != nil {
		t.Fatal(err)
	}
	if rc.BlockHash.Hex() != j.BlockHash || rc.Status != 1 {
		t.Fatalf("the receipt's block %s (status %d) is not the job's %s", rc.BlockHash.Hex(), rc.Status, j.BlockHash)
	}
	if ok, err := reg.IsRecorded(ctx, j.JobID, common.HexToHash(j.Statement)); err != nil || !ok {
		t.Fatalf("the registry does not hold the job's statement: %v %v", ok, err)
	}
}

// statementOf is zkVerify's statement for the fixture's signals under
// vkHash, computed here from the contract's rule.
func statementOf(t *testing.T, vkHash string, signals ...int64) string {
	t.Helper()
	h, err := hexutil.Decode(vkHash)
	if err != nil || len(h) != 32 {
		t.Fatalf("vkHash %q", vkHash)
	}
	var pub []*big.Int
	for _, s := range signals {
		pub = append(pub, big.NewInt(s))
	}
	st := zkstatement.Statement("groth16", zkstatement.Hash(h), pub)
	return hexutil.Encode(st[:])
}

// A real Groth16 proof goes register → submit → every job state through
// AggregationPublished: verified here, recorded on the embedded chain
// (real transaction and block), enqueued in its domain's aggregation and
// moved on by the aggregation's notices.
func TestZKVerifyGroth16JobThroughAggregation(t *testing.T) {
	agg := withFakeAggregation(t)
	_, key := env.NewAccount(t, apikey.ProofsWrite, apikey.ProofsRead)
	vkHash, again := registerVK(t, key, fixture(t, "vk.json"))
	if again {
		t.Log("the fixture's key was registered by an earlier test")
	}
	// Registering again answers the same hash.
	if h, already := registerVK(t, key, fixture(t, "vk.json")); h != vkHash || !already {
		t.Fatalf("registering again answered %s (already %v), want %s", h, already, vkHash)
	}
	s := submit(t, key, map[string]any{"proof": fixture(t, "proof.json"), "publicSignals": fixture(t, "public.json"), "vk": vkHash})
	if s.OptimisticVerify != "success" {
		t.Fatalf("optimisticVerify %q (%s)", s.OptimisticVerify, s.Reason)
	}
	j := awaitStatus(t, key, s.JobID, workflows.ZKAggregationPending)
	if j.ChainID == nil || *j.ChainID != 11155111 || j.ProofType != "groth16" || j.VerifiedBy != "conduit" || j.VerifyOnly {
		t.Fatalf("job %+v", j)
	}
	want := []string{"Queued", "Valid", "Submitted", "IncludedInBlock", "Finalized", "AggregationPending"}
	if !slices.Equal(j.path(), want) || j.StatusID != 5 {
		t.Fatalf("transitions %v (statusId %d), want %v", j.path(), j.StatusID, want)
	}
	for i := 1; i < len(j.Transitions); i++ {
		if j.Transitions[i].At.Before(j.Transitions[i-1].At) {
			t.Fatalf("transition times go back: %+v", j.Transitions)
		}
	}
	if j.Statement != statementOf(t, vkHash, 33, 11) {
		t.Fatalf("statement %s, want zkVerify's rule's %s", j.Statement, statementOf(t, vkHash, 33, 11))
	}
	checkOnChain(t, j)
	in, ok := agg.got[s.JobID]
	if !ok || in.Request.Statement != j.Statement || in.DomainID != env.Config.Proofs.AggregationDomain || j.AggregationID == nil {
		t.Fatalf("enqueued %+v (%v), job aggregation %v", in, ok, j.AggregationID)
	}

	// The aggregation's notices: Aggregated (root and path), then
	// published (its receipt: here a real transaction recording the root).
	stmt := common.HexToHash(j.Statement)
	leaf := zkstatement.Leaf(stmt)
	sibling := crypto.Keccak256Hash([]byte("another job's leaf"))
	root := crypto.Keccak256Hash(leaf[:], sibling[:])
	notice := workflows.ZKAggregationNotice{AggregationID: *j.AggregationID, DomainID: in.DomainID, Status: workflows.ZKAggregated,
		Root: root.Hex(), Leaf: hexutil.Encode(leaf[:]), LeafIndex: 0, NumberOfLeaves: 2, MerkleProof: []string{sibling.Hex()}, At: time.Now()}
	ctx := context.Background()
	// A notice of another aggregation is not this job's.
	other := notice
	other.AggregationID++
	if err := env.Platform.Temporal.SignalWorkflow(ctx, workflows.ZKJobWorkflowID(s.JobID), "", workflows.SignalZKAggregation, other); err != nil {
		t.Fatal(err)
	}
	if err := env.Platform.Temporal.SignalWorkflow(ctx, workflows.ZKJobWorkflowID(s.JobID), "", workflows.SignalZKAggregation, notice); err != nil {
		t.Fatal(err)
	}
	j = awaitStatus(t, key, s.JobID, workflows.ZKAggregated)
	if d := j.AggregationDetails; d == nil || d.Root != root.Hex() || d.NumberOfLeaves != 2 || len(d.MerkleProof) != 1 || d.Receipt != "" {
		t.Fatalf("aggregation details %+v", j.AggregationDetails)
	}
	reg := env.Platform.Proofs.Registry
	tx, err := reg.Record(ctx, fmt.Sprintf("aggregation/%d", *j.AggregationID), root)
	if err != nil {
		t.Fatal(err)
	}
	rc, err := reg.Inclusion(ctx, fmt.Sprintf("aggregation/%d", *j.AggregationID), tx)
	if err != nil {
		t.Fatal(err)
	}
	notice.Status, notice.Receipt, notice.ReceiptBlockHash = workflows.ZKAggregationPublished, rc.TxHash.Hex(), rc.BlockHash.Hex()
	if err := env.Platform.Temporal.SignalWorkflow(ctx, workflows.ZKJobWorkflowID(s.JobID), "", workflows.SignalZKAggregation, notice); err != nil {
		t.Fatal(err)
	}
	j = awaitStatus(t, key, s.JobID, workflows.ZKAggregationPublished)
	if d := j.AggregationDetails; d == nil || d.Receipt != rc.TxHash.Hex() || d.ReceiptBlockHash != rc.BlockHash.Hex() || d.Leaf != hexutil.Encode(leaf[:]) {
		t.Fatalf("aggregation details %+v", j.AggregationDetails)
	}
	if got := j.path(); !slices.Equal(got, append(want, "Aggregated", "AggregationPublished")) || j.StatusID != 7 {
		t.Fatalf("transitions %v statusId %d", got, j.StatusID)
	}
	// Once the job ends its status is its row's, the same.
	apptest.Eventually(t, 20*time.Second, "the job's row closed", func() error {
		row, err := env.Platform.Store.ZKJob(ctx, s.JobID)
		if err != nil || !row.Closed || row.Status != workflows.ZKAggregationPublished {
			return fmt.Errorf("row %+v %v", row, err)
		}
		return nil
	})
	if after := readJob(t, key, s.JobID); after.Status != j.Status || after.TxHash != j.TxHash || len(after.Transitions) != len(j.Transitions) {
		t.Fatalf("after close %+v, before %+v", after, j)
	}
}

// verifyOnly: true asks for no aggregation: the job ends at Finalized,
// with no chainId; the key may come inline (registered on the way).
func TestZKVerifyVerifyOnlyEndsAtFinalized(t *testing.T) {
	_, key := env.NewAccount(t, apikey.ProofsWrite, apikey.ProofsRead)
	s := submit(t, key, map[string]any{"verifyOnly": true, "proofData": map[string]any{
		"proof": fixture(t, "proof2.json"), "publicSignals": fixture(t, "public2.json"), "vk": fixture(t, "vk.json")}})
	if s.OptimisticVerify != "success" {
		t.Fatalf("optimisticVerify %q (%s)", s.OptimisticVerify, s.Reason)
	}
	j := awaitStatus(t, key, s.JobID, workflows.ZKFinalized)
	if j.ChainID != nil || !j.VerifyOnly || j.AggregationID != nil {
		t.Fatalf("job %+v", j)
	}
	if !slices.Equal(j.path(), []string{"Queued", "Valid", "Submitted", "IncludedInBlock", "Finalized"}) || j.StatusID != 4 {
		t.Fatalf("transitions %v", j.path())
	}
	checkOnChain(t, j)
	apptest.Eventually(t, 20*time.Second, "the job's row closed", func() error {
		row, err := env.Platform.Store.ZKJob(context.Background(), s.JobID)
		if err != nil || !row.Closed || row.Status != workflows.ZKFinalized {
			return fmt.Errorf("row %+v %v", row, err)
		}
		return nil
	})
}

// A tampered proof, a wrong public signal, a signal not below the scalar
// field modulus and a wrong key each fail the job at Valid: nothing is
// recorded on the chain.
func TestZKVerifyBadProofsFailAtValid(t *testing.T) {
	_, key := env.NewAccount(t, apikey.ProofsWrite, apikey.ProofsRead)
	vkHash, _ := registerVK(t, key, fixture(t, "vk.json"))
	var proof map[string]any
	_ = json.Unmarshal(fixture(t, "proof.json"), &proof)
	tampered := map[string]any{}
	for k, v := range proof {
		tampered[k] = v
	}
	tampered["pi_a"], tampered["pi_c"] = proof["pi_c"], proof["pi_a"] // both still on the curve
	// A key of another circuit: the fixture's with its input points swapped.
	var vk map[string]any
	_ = json.Unmarshal(fixture(t, "vk.json"), &vk)
	ic := vk["IC"].([]any)
	ic[1], ic[2] = ic[2], ic[1]
	wrongVK, _ := json.Marshal(vk)
	wrongHash, _ := registerVK(t, key, wrongVK)
	r := "21888242871839275222246405745257275088548364400416034343698204186575808495617" // the scalar field modulus r
	over := new(big.Int)
	over.SetString(r, 10)
	over.Add(over, big.NewInt(11)) // ≡ 11, the true signal, if it were reduced
	cases := map[string]map[string]any{
		"tampered proof":      {"proof": tampered, "publicSignals": fixture(t, "public.json"), "vk": vkHash},
		"wrong public signal": {"proof": fixture(t, "proof.json"), "publicSignals": []string{"33", "12"}, "vk": vkHash},
		"signal ≥ modulus":    {"proof": fixture(t, "proof.json"), "publicSignals": []string{"33", over.String()}, "vk": vkHash},
		"wrong vk":            {"proof": fixture(t, "proof.json"), "publicSignals": fixture(t, "public.json"), "vk": wrongHash},
	}
	reasons := map[string]string{
		"tampered proof": "does not verify", "wrong public signal": "does not verify",
		"signal ≥ modulus": "scalar field modulus", "wrong vk": "does not verify",
	}
	for name, body := range cases {
		t.Run(name, func(t *testing.T) {
			s := submit(t, key, body)
			if s.OptimisticVerify != "failed" || !strings.Contains(s.Reason, reasons[name]) {
				t.Fatalf("answer %+v", s)
			}
			j := awaitStatus(t, key, s.JobID, workflows.ZKFailed)
			if !slices.Equal(j.path(), []string{"Queued", "Failed"}) || !strings.HasPrefix(j.FailureReason, "Valid: ") ||
				!strings.Contains(j.FailureReason, reasons[name]) || j.TxHash != "" || j.StatusID != 8 {
				t.Fatalf("job %+v", j)
			}
		})
	}
}

// Malformed submissions are refused with a 400 naming the field, and no
// job exists for them.
func TestZKVerifyMalformedSubmissionsCreateNothing(t *testing.T) {
	acct, key := env.NewAccount(t, apikey.ProofsWrite, apikey.ProofsRead)
	vkHash, _ := registerVK(t, key, fixture(t, "vk.json"))
	proof, pub := fixture(t, "proof.json"), fixture(t, "public.json")
	unknown := "0x" + strings.Repeat("ab", 32)
	cases := []struct {
		name  string
		body  any
		field string
	}{
		{"no proof", map[string]any{"publicSignals": pub, "vk": vkHash}, "proof"},
		{"no vk", map[string]any{"proof": proof, "publicSignals": pub}, "vk"},
		{"unregistered vkHash", map[string]any{"proof": proof, "publicSignals": pub, "vk": unknown}, "vk"},
		{"signals not an array", map[string]any{"proof": proof, "publicSignals": "33", "vk": vkHash}, "publicSignals"},
		{"signal not decimal", map[string]any{"proof": proof, "publicSignals": []string{"0x21", "11"}, "vk": vkHash}, "publicSignals[0]"},
		{"no signals", map[string]any{"proof": proof, "vk": vkHash}, "publicSignals"},
		{"pi_a short", map[string]any{"proof": map[string]any{"pi_a": []string{"1"}, "pi_b": []any{}, "pi_c": []any{}}, "publicSignals": pub, "vk": vkHash}, "proof.pi_a"},
		{"unknown proof type", map[string]any{"proofType": "stark", "proof": proof, "publicSignals": pub, "vk": vkHash}, "proofType"},
		{"chain id zero", map[string]any{"chainId": 0, "proof": proof, "publicSignals": pub, "vk": vkHash}, "chainId"},
		{"verify-only with a chain", map[string]any{"verifyOnly": true, "chainId": 1, "proof": proof, "publicSignals": pub, "vk": vkHash}, "verifyOnly"},
		{"both shapes", map[string]any{"proof": proof, "proofData": map[string]any{"proof": proof}}, "proofData"},
		{"unknown field", map[string]any{"proof": proof, "publicSignals": pub, "vk": vkHash, "circuit": "x"}, "circuit"},
		{"relayed type, no relayer", map[string]any{"proofType": "risc0", "proof": "0x00", "vk": unknown}, "proofs.relayer_url"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := env.Do(t, "POST", "/api/zkverify/submit-proof", c.body, "Authorization", "Bearer "+key)
			if r.Status != http.StatusBadRequest || !strings.Contains(string(r.Body), c.field) {
				t.Fatalf("%d %s; want 400 naming %s", r.Status, r.Body, c.field)
			}
		})
	}
	if n, err := env.Platform.Store.Count(context.Background(), acct, quota.ZKJobs); err != nil || n != 0 {
		t.Fatalf("open jobs after refusals: %d %v", n, err)
	}
	// A key of a relayed type cannot be registered without a relayer.
	r := env.Do(t, "POST", "/api/zkverify/register-vk", map[string]any{"proofType": "ultrahonk", "vk": "0x01"}, "Authorization", "Bearer "+key)
	if r.Status != http.StatusBadRequest || !strings.Contains(string(r.Body), "proofs.relayer_url") {
		t.Fatalf("%d %s", r.Status, r.Body)
	}
	// A malformed key is refused naming its field.
	r = env.Do(t, "POST", "/api/zkverify/register-vk", map[string]any{"vk": map[string]any{"protocol": "groth16", "nPublic": 1, "IC": []any{}}}, "Authorization", "Bearer "+key)
	if r.Status != http.StatusBadRequest || !strings.Contains(string(r.Body), "vk.IC") {
		t.Fatalf("%d %s", r.Status, r.Body)
	}
}

// The routes need the proofs scopes; another account's job is a 404.
func TestZKVerifyScopesAndOwnership(t *testing.T) {
	_, reader := env.NewAccount(t, apikey.ProofsRead)
	r := env.Do(t, "POST", "/api/zkverify/register-vk", map[string]any{"vk": fixture(t, "vk.json")}, "Authorization", "Bearer "+reader)
	if r.Status != http.StatusForbidden || !strings.Contains(string(r.Body), "proofs:write") {
		t.Fatalf("%d %s", r.Status, r.Body)
	}
	_, owner := env.NewAccount(t, apikey.ProofsWrite, apikey.ProofsRead)
	s := submit(t, owner, map[string]any{"verifyOnly": true, "proof": fixture(t, "proof.json"), "publicSignals": fixture(t, "public.json"), "vk": fixture(t, "vk.json")})
	r = env.Do(t, "GET", "/api/zkverify/job-status/"+s.JobID, nil, "Authorization", "Bearer "+reader)
	if r.Status != http.StatusNotFound {
		t.Fatalf("another account's job: %d %s", r.Status, r.Body)
	}
	r = env.Do(t, "GET", "/api/zkverify/job-status/not-a-job", nil, "Authorization", "Bearer "+owner)
	if r.Status != http.StatusNotFound {
		t.Fatalf("a malformed id: %d %s", r.Status, r.Body)
	}
	r = env.Do(t, "GET", "/api/zkverify/job-status/"+s.JobID, nil)
	if r.Status != http.StatusUnauthorized {
		t.Fatalf("no key: %d", r.Status)
	}
	awaitStatus(t, owner, s.JobID, workflows.ZKFinalized)
}

// A job whose aggregation is never published fails once the configured
// bound passes, saying so.
func TestZKVerifyAggregationWaitIsBounded(t *testing.T) {
	withFakeAggregation(t)
	svc := env.Platform.Proofs.ZKVerify
	saved := svc.Config.AggregationWait
	svc.Config.AggregationWait = 5 * time.Second
	t.Cleanup(func() { svc.Config.AggregationWait = saved })
	_, key := env.NewAccount(t, apikey.ProofsWrite, apikey.ProofsRead)
	s := submit(t, key, map[string]any{"chainId": 84532, "proof": fixture(t, "proof.json"), "publicSignals": fixture(t, "public.json"), "vk": fixture(t, "vk.json")})

	// While it waits, its status is its row's (workflows.ChangeZKStatusInRow):
	// the row holds the state the status read answers, not a query's.
	pending := awaitStatus(t, key, s.JobID, workflows.ZKAggregationPending)
	row, err := env.Platform.Store.ZKJob(context.Background(), s.JobID)
	if err != nil {
		t.Fatal(err)
	}
	var mirrored jobStatus
	if err := json.Unmarshal(row.State, &mirrored); err != nil || row.Closed || row.Status != workflows.ZKAggregationPending ||
		!slices.Equal(mirrored.path(), pending.path()) {
		t.Fatalf("the open job's row: closed %v, status %s, state %s (%v); the status read's path %v", row.Closed, row.Status, row.State, err, pending.path())
	}

	j := awaitStatus(t, key, s.JobID, workflows.ZKFailed)
	if *j.ChainID != 84532 || j.FailureReason != "AggregationPending: the aggregation was not published within 5s" ||
		!slices.Equal(j.path(), []string{"Queued", "Valid", "Submitted", "IncludedInBlock", "Finalized", "AggregationPending", "Failed"}) {
		t.Fatalf("job %+v", j)
	}
}

// An account's open jobs are bounded: past the bound a submission is a
// 429 naming the quota, and nothing is started.
func TestZKVerifyOpenJobsAreBounded(t *testing.T) {
	withFakeAggregation(t)
	svc := env.Platform.Proofs.ZKVerify
	saved := svc.Config
	svc.Config.MaxOpenJobs, svc.Config.AggregationWait = 1, 3*time.Second
	t.Cleanup(func() { svc.Config = saved })
	acct, key := env.NewAccount(t, apikey.ProofsWrite, apikey.ProofsRead)
	body := map[string]any{"proof": fixture(t, "proof.json"), "publicSignals": fixture(t, "public.json"), "vk": fixture(t, "vk.json")}
	first := submit(t, key, body)
	awaitStatus(t, key, first.JobID, workflows.ZKAggregationPending)
	r := env.Do(t, "POST", "/api/zkverify/submit-proof", body, "Authorization", "Bearer "+key)
	if r.Status != http.StatusTooManyRequests || !strings.Contains(string(r.Body), "QUOTA_EXCEEDED") {
		t.Fatalf("past the bound: %d %s", r.Status, r.Body)
	}
	if n, err := env.Platform.Store.Count(context.Background(), acct, quota.ZKJobs); err != nil || n != 1 {
		t.Fatalf("open jobs %d %v", n, err)
	}
	// Once the first ends (its aggregation never publishes), a slot is free.
	awaitStatus(t, key, first.JobID, workflows.ZKFailed)
	apptest.Eventually(t, 20*time.Second, "the slot freed", func() error {
		if n, _ := env.Platform.Store.Count(context.Background(), acct, quota.ZKJobs); n != 0 {
			return fmt.Errorf("%d open", n)
		}
		return nil
	})
	submit(t, key, body)
}

// The whole path with nothing standing in: a real Groth16 proof is
// verified, recorded on the embedded chain, joins its domain's real
// aggregation (which closes on time), and ends AggregationPublished; the
// aggregation contract then confirms its inclusion on chain, and refuses
// a tampered path.
func TestZKVerifyGroth16ThroughTheRealAggregation(t *testing.T) {
	_, key := env.NewAccount(t, apikey.ProofsWrite, apikey.ProofsRead)
	s := submit(t, key, map[string]any{"proof": fixture(t, "proof.json"), "publicSignals": fixture(t, "public.json"), "vk": fixture(t, "vk.json")})
	if s.OptimisticVerify != "success" {
		t.Fatalf("optimisticVerify %q (%s)", s.OptimisticVerify, s.Reason)
	}
	var j jobStatus
	apptest.Eventually(t, 2*time.Minute, "the job's aggregation published", func() error {
		j = readJob(t, key, s.JobID)
		if j.Status == workflows.ZKFailed {
			t.Fatalf("the job failed: %s", j.FailureReason)
		}
		if j.Status != workflows.ZKAggregationPublished {
			return fmt.Errorf("status %s", j.Status)
		}
		return nil
	})
	want := []string{"Queued", "Valid", "Submitted", "IncludedInBlock", "Finalized", "AggregationPending", "Aggregated", "AggregationPublished"}
	if !slices.Equal(j.path(), want) {
		t.Fatalf("transitions %v, want %v", j.path(), want)
	}
	checkOnChain(t, j)
	d := j.AggregationDetails
	if d == nil || j.AggregationID == nil || d.Receipt == "" || d.ReceiptBlockHash == "" || d.DomainID != env.Config.Proofs.AggregationDomain {
		t.Fatalf("aggregation details %+v (id %v)", d, j.AggregationID)
	}
	stmt := common.HexToHash(j.Statement)
	path := hashes(t, d.MerkleProof)
	ok, err := env.Platform.ZKContract.VerifyInclusion(context.Background(), d.DomainID, *j.AggregationID, stmt, path, d.NumberOfLeaves, d.LeafIndex)
	if err != nil || !ok {
		t.Fatalf("on-chain inclusion check: %v %v", ok, err)
	}
	// (A wrong path or index failing is frontend/zkagg_test.go's: here the
	// batch may hold other tests' jobs of the same proof, the same leaf.)
	bad := slices.Clone(path)
	if len(bad) > 0 {
		bad[0][0] ^= 1
		if ok, _ := env.Platform.ZKContract.VerifyInclusion(context.Background(), d.DomainID, *j.AggregationID, stmt, bad, d.NumberOfLeaves, d.LeafIndex); ok {
			t.Fatal("a tampered path verified")
		}
	}
	if root, err := env.Platform.ZKContract.PublishedRoot(context.Background(), d.DomainID, *j.AggregationID); err != nil || root != common.HexToHash(d.Root) {
		t.Fatalf("published root %x %v, want %s", root, err, d.Root)
	}
}
