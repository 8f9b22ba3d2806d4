package bench

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"conduit/app/apptest"
	"conduit/internal/apikey"
)

// BenchmarkZKSubmitToFinalized: a real Groth16 proof submitted verify-only
// (docs/proofs.md), then its job-status read until Finalized: verified,
// recorded on the embedded chain and its block confirmed. The chain seals
// at most one block a second, so the target is stated beside the bare
// round trip measured in the same run: p50 ≤ 1.5 × bare + one block
// (target-ratio ≤ 1). Sixteen callers keep the chain's blocks full, as a
// relay's are.
func BenchmarkZKSubmitToFinalized(b *testing.B) {
	read := func(name string) json.RawMessage {
		raw, err := os.ReadFile(filepath.Join("..", "internal", "groth16", "testdata", name))
		if err != nil {
			b.Fatal(err)
		}
		return raw
	}
	vk, proof, public := read("vk.json"), read("proof.json"), read("public.json")
	_, key := env.NewAccount(b, apikey.ProofsWrite, apikey.ProofsRead)
	r := env.Do(b, "POST", "/api/zkverify/register-vk", map[string]any{"proofType": "groth16", "vk": vk}, apptest.Bearer(key)...)
	if r.Status != http.StatusOK {
		b.Fatalf("register-vk: %d %s", r.Status, r.Body)
	}
	var reg struct{ VKHash string }
	_ = json.Unmarshal(r.Body, &reg)

	// The floor, in this run.
	bare := make([]time.Duration, 50)
	for i := range bare {
		bare[i] = nop(b, false)
	}
	sort.Slice(bare, func(i, j int) bool { return bare[i] < bare[j] })
	bareP50 := float64(bare[len(bare)/2].Microseconds()) / 1000

	b.ResetTimer()
	lat, elapsed := callers(b, 16, always(func() time.Duration {
		t0 := time.Now()
		s := env.Do(b, "POST", "/api/zkverify/submit-proof", map[string]any{"verifyOnly": true,
			"proof": proof, "publicSignals": public, "vk": reg.VKHash}, apptest.Bearer(key)...)
		var sub struct{ JobID, OptimisticVerify string }
		_ = json.Unmarshal(s.Body, &sub)
		if s.Status != http.StatusOK || sub.OptimisticVerify != "success" {
			b.Fatalf("submit-proof: %d %s", s.Status, s.Body)
		}
		for {
			j := env.Do(b, "GET", "/api/zkverify/job-status/"+sub.JobID, nil, apptest.Bearer(key)...)
			var job struct{ Status, FailureReason string }
			_ = json.Unmarshal(j.Body, &job)
			switch job.Status {
			case "Finalized":
				return time.Since(t0)
			case "Failed":
				b.Fatalf("job failed: %s", job.FailureReason)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}))
	lat.report(b, elapsed) // sorts lat.d
	p50 := float64(lat.d[len(lat.d)/2].Microseconds()) / 1000
	b.ReportMetric(bareP50, "bare-p50-ms")
	b.ReportMetric(p50/(1.5*bareP50+1000), "target-ratio")
}
