package frontend_test

import (
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"conduit/internal/apikey"
	"conduit/internal/zkverify/relayer"
	"conduit/internal/zkverify/relayer/relayertest"
	"conduit/workflows"
)

// withRelayer points the relay at a fake zkVerify relayer (Kurier's API
// over httptest) and restarts the worker so its steps use it; both are
// undone when the test ends.
func withRelayer(t *testing.T) *relayertest.Server {
	t.Helper()
	srv := relayertest.New("kurier-test-key")
	c := relayer.New(srv.BaseURL(), srv.APIKey)
	pr, svc := env.Platform.Proofs, env.Platform.Proofs.ZKVerify
	env.StopWorker()
	// Read the relayer's jobs every second (the workflow's floor).
	poll := svc.Config.RelayerPoll
	pr.Relayer, svc.Relayer, svc.Config.RelayerPoll = c, c, time.Second
	if err := env.StartWorker(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		env.StopWorker()
		pr.Relayer, svc.Relayer, svc.Config.RelayerPoll = nil, nil, poll
		if err := env.StartWorker(); err != nil {
			t.Error(err)
		}
		srv.Close()
	})
	return srv
}

// Proof types we cannot verify go to the relayer: their jobs mirror the
// relayer's statuses and fields and say the relayer verified them, never
// us; the relayer's refusals and failures fail the job with its reason.
func TestZKVerifyRelayedProofTypes(t *testing.T) {
	srv := withRelayer(t)
	_, key := env.NewAccount(t, apikey.ProofsWrite, apikey.ProofsRead)
	r := env.Do(t, "POST", "/api/zkverify/register-vk", map[string]any{"proofType": "ultrahonk", "vk": "0x0badc0de"}, "Authorization", "Bearer "+key)
	if r.Status != http.StatusOK {
		t.Fatalf("register-vk: %d %s", r.Status, r.Body)
	}
	vkHash := r.JSON(t)["vkHash"].(string)
	if h, already := registerAgain(t, key, "ultrahonk", "0x0badc0de"); h != vkHash || !already {
		t.Fatalf("again: %s %v", h, already)
	}

	// Verify-only: Queued … Finalized, as the relayer reports them.
	s := submit(t, key, map[string]any{"proofType": "ultrahonk", "verifyOnly": true, "proof": "0xabcdef", "vk": vkHash})
	if s.OptimisticVerify != "success" {
		t.Fatalf("%+v", s)
	}
	j := awaitStatus(t, key, s.JobID, workflows.ZKFinalized)
	if j.VerifiedBy != "relayer" || j.TxHash == "" || j.BlockHash == "" || j.ChainID != nil || j.Statement != "" {
		t.Fatalf("job %+v", j)
	}
	if p := j.path(); p[0] != "Queued" || p[len(p)-1] != "Finalized" {
		t.Fatalf("path %v", p)
	}

	// With a chain: through AggregationPublished, the relayer's
	// aggregation details kept.
	s = submit(t, key, map[string]any{"proofType": "ultrahonk", "proof": "0x1234", "vk": vkHash})
	j = awaitStatus(t, key, s.JobID, workflows.ZKAggregationPublished)
	if j.VerifiedBy != "relayer" || j.AggregationID == nil || *j.AggregationID != 42 || j.AggregationDetails == nil || j.AggregationDetails.Receipt == "" {
		t.Fatalf("job %+v", j)
	}
	if !slices.Contains(j.path(), "Aggregated") {
		t.Fatalf("path %v", j.path())
	}
	// The relayer got the relayer's own body: proofData, vkRegistered, the
	// default chainId.
	last := srv.Submitted[len(srv.Submitted)-1]
	if last["vkRegistered"] != true || last["chainId"] != float64(11155111) || last["proofData"].(map[string]any)["vk"] != vkHash {
		t.Fatalf("relayer got %v", last)
	}

	// Refused by the relayer's optimistic verification: failed at Valid.
	s = submit(t, key, map[string]any{"proofType": "ultrahonk", "verifyOnly": true, "proof": relayertest.RejectedProof, "vk": vkHash})
	if s.OptimisticVerify != "failed" || !strings.Contains(s.Reason, "Optimistic verification failed") {
		t.Fatalf("%+v", s)
	}
	j = awaitStatus(t, key, s.JobID, workflows.ZKFailed)
	if !strings.HasPrefix(j.FailureReason, "Valid: ") {
		t.Fatalf("job %+v", j)
	}
	// Accepted, then failed on the relayer's chain.
	s = submit(t, key, map[string]any{"proofType": "ultrahonk", "verifyOnly": true, "proof": relayertest.FailingProof, "vk": vkHash})
	j = awaitStatus(t, key, s.JobID, workflows.ZKFailed)
	if j.FailureReason != "relayer: Proof verification failed on chain" {
		t.Fatalf("job %+v", j)
	}
}

func registerAgain(t *testing.T, key, proofType, vk string) (string, bool) {
	t.Helper()
	r := env.Do(t, "POST", "/api/zkverify/register-vk", map[string]any{"proofType": proofType, "vk": vk}, "Authorization", "Bearer "+key)
	if r.Status != http.StatusOK {
		t.Fatalf("register-vk: %d %s", r.Status, r.Body)
	}
	m := r.JSON(t)
	return m["vkHash"].(string), m["alreadyRegistered"].(bool)
}
