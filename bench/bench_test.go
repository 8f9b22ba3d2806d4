// Package bench measures the platform on the real stack (PostgreSQL,
// in-process Temporal, real worker and API): `go tool task bench`.
package bench

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/crypto"
	"go.temporal.io/sdk/client"

	"conduit/app/apptest"
	"conduit/internal/money"
	"conduit/internal/x402"
	"conduit/workflows"
)

var env *apptest.Env

// TestMain starts the platform only when benchmarks are asked for, so the
// plain test run does not pay for a stack it will not use.
func TestMain(m *testing.M) {
	flag.Parse()
	if flag.Lookup("test.bench").Value.String() == "" {
		os.Exit(m.Run())
	}
	apptest.Main(m, &env)
}

// latencies collects durations and reports p50/p99 in ms and throughput,
// and the CPU time per run the platform spent from the moment it was made:
// this process (API, worker, Temporal server, the benchmark's callers) and
// its PostgreSQL, counted per process so other work on the machine does
// not blur it.
type latencies struct {
	mu  sync.Mutex
	d   []time.Duration
	cpu float64 // platform CPU seconds when measuring began
}

func newLatencies() *latencies { return &latencies{cpu: platformCPU()} }

// platformCPU is the CPU time (seconds) of this process and every process
// it started (PostgreSQL and its backends), from /proc.
func platformCPU() float64 {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	total := float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9
	parents := map[int]int{} // pid → ppid
	ticks := map[int]float64{}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// After the command (which may hold spaces): state ppid … utime stime.
		f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
		if len(f) < 13 {
			continue
		}
		ppid, _ := strconv.Atoi(f[1])
		ut, _ := strconv.ParseFloat(f[11], 64)
		st, _ := strconv.ParseFloat(f[12], 64)
		parents[pid], ticks[pid] = ppid, ut+st
	}
	self := os.Getpid()
	for pid := range parents {
		for p := parents[pid]; p > 1; p = parents[p] {
			if p == self {
				total += ticks[pid] / 100 // USER_HZ
				break
			}
		}
	}
	return total
}

func (l *latencies) add(d time.Duration) { l.mu.Lock(); l.d = append(l.d, d); l.mu.Unlock() }

func (l *latencies) report(b *testing.B, elapsed time.Duration) {
	sort.Slice(l.d, func(i, j int) bool { return l.d[i] < l.d[j] })
	pct := func(p float64) float64 {
		return float64(l.d[int(p*float64(len(l.d)-1))].Microseconds()) / 1000
	}
	b.ReportMetric(pct(0.50), "p50-ms")
	b.ReportMetric(pct(0.99), "p99-ms")
	b.ReportMetric(float64(len(l.d))/elapsed.Seconds(), "runs/s")
	b.ReportMetric((platformCPU()-l.cpu)*1000/float64(len(l.d)), "cpu-ms/run")
}

// BenchmarkTemporalRoundTrip: start a workflow that returns at once and
// wait for its result — the floor every run stands on.
func BenchmarkTemporalRoundTrip(b *testing.B) {
	c := env.Platform.Temporal
	b.ResetTimer()
	lat := newLatencies()
	start := time.Now()
	for i := range b.N {
		t0 := time.Now()
		run, err := c.ExecuteWorkflow(context.Background(), client.StartWorkflowOptions{ID: fmt.Sprintf("bench-nop-%d-%d", time.Now().UnixNano(), i), TaskQueue: workflows.SystemQueue}, workflows.WfNop)
		if err != nil {
			b.Fatal(err)
		}
		if err := run.Get(context.Background(), nil); err != nil {
			b.Fatal(err)
		}
		lat.add(time.Since(t0))
	}
	lat.report(b, time.Since(start))
}

// BenchmarkTemporalRoundTripParallel: the bare round trip with as many
// callers as BenchmarkInvoke3NodeParallel, so parallel throughput is
// compared side by side in one run.
func BenchmarkTemporalRoundTripParallel(b *testing.B) {
	c := env.Platform.Temporal
	var n atomic.Int64
	b.SetParallelism(4) // × GOMAXPROCS (2) = 8 callers
	b.ResetTimer()
	lat := newLatencies()
	start := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			t0 := time.Now()
			run, err := c.ExecuteWorkflow(context.Background(), client.StartWorkflowOptions{
				ID: fmt.Sprintf("bench-nop-par-%d-%d", time.Now().UnixNano(), n.Add(1)), TaskQueue: workflows.SystemQueue,
			}, workflows.WfNop)
			if err != nil {
				b.Error(err)
				return
			}
			if err := run.Get(context.Background(), nil); err != nil {
				b.Error(err)
				return
			}
			lat.add(time.Since(t0))
		}
	})
	lat.report(b, time.Since(start))
}

// BenchmarkInvoke3Node: POST invoke on a 3-node local pipeline (input →
// local-echo → output) and poll the statusUrl until success, sequentially.
func BenchmarkInvoke3Node(b *testing.B) {
	key, id := threeNodePipeline(b)
	b.ResetTimer()
	lat := newLatencies()
	start := time.Now()
	for range b.N {
		lat.add(invokeAndWait(b, key, id))
	}
	lat.report(b, time.Since(start))
}

// BenchmarkInvoke3NodeParallel: the same with 8 callers at once.
func BenchmarkInvoke3NodeParallel(b *testing.B) {
	key, id := threeNodePipeline(b)
	b.SetParallelism(4) // × GOMAXPROCS (2) = 8 callers
	b.ResetTimer()
	lat := newLatencies()
	start := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			lat.add(invokeAndWait(b, key, id))
		}
	})
	lat.report(b, time.Since(start))
}

func threeNodePipeline(b *testing.B) (key, id string) {
	acct, key := env.NewAccount(b)
	_ = acct
	graph := map[string]any{
		"nodes": []map[string]any{
			{"id": "q", "type": "input", "key": "q"},
			{"id": "llm", "type": "model", "model": "local-echo", "prompt": "{{q}}", "maxTokens": 64},
			{"id": "a", "type": "output", "key": "a", "from": "llm"},
		},
		"edges": []map[string]any{{"from": "q", "to": "llm"}, {"from": "llm", "to": "a"}},
	}
	r := env.Do(b, "POST", "/api/pipelines", map[string]any{"name": "bench", "draft": graph}, apptest.Bearer(key)...)
	if r.Status != http.StatusCreated {
		b.Fatalf("create: %d %s", r.Status, r.Body)
	}
	id = r.JSON(b)["id"].(string)
	if r := env.Do(b, "POST", "/api/pipelines/"+id+"/publish", nil, apptest.Bearer(key)...); r.Status != http.StatusOK {
		b.Fatalf("publish: %d %s", r.Status, r.Body)
	}
	return key, id
}

func invokeAndWait(b *testing.B, key, id string) time.Duration {
	t0 := time.Now()
	r := env.Do(b, "POST", "/api/pipelines/"+id+"/invoke", map[string]any{"inputs": map[string]any{"q": "How fast is a durable run?"}}, apptest.Bearer(key)...)
	if r.Status != http.StatusAccepted {
		b.Fatalf("invoke: %d %s", r.Status, r.Body)
	}
	var acc struct{ StatusURL string }
	_ = json.Unmarshal(r.Body, &acc)
	path := strings.TrimPrefix(acc.StatusURL, env.URL)
	for {
		p := env.Do(b, "GET", path, nil, apptest.Bearer(key)...)
		var run struct{ Status string }
		_ = json.Unmarshal(p.Body, &run)
		switch run.Status {
		case "success":
			return time.Since(t0)
		case "running":
			time.Sleep(2 * time.Millisecond)
		default:
			b.Fatalf("run ended %s: %s", run.Status, p.Body)
		}
	}
}

// BenchmarkChatStream: a streamed chat completion on the 3-node local
// pipeline: time to the first content token and to [DONE].
func BenchmarkChatStream(b *testing.B) {
	key, id := threeNodePipeline(b)
	var ttft latencies
	body := `{"stream":true,"messages":[{"role":"user","content":"How fast does the first token arrive through a durable run?"}]}`
	b.ResetTimer()
	total := newLatencies()
	start := time.Now()
	for range b.N {
		t0 := time.Now()
		req, _ := http.NewRequest("POST", env.URL+"/api/pipelines/"+id+"/chat/completions", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+key)
		resp, err := env.HTTP.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		sc := bufio.NewScanner(resp.Body)
		first := time.Duration(0)
		for sc.Scan() {
			line := sc.Text()
			if line == "data: [DONE]" {
				break
			}
			if first == 0 && strings.Contains(line, `"content":"`) && !strings.Contains(line, `"content":""`) {
				first = time.Since(t0)
			}
		}
		resp.Body.Close()
		if first == 0 {
			b.Fatal("no content token arrived")
		}
		ttft.add(first)
		total.add(time.Since(t0))
	}
	elapsed := time.Since(start)
	sort.Slice(ttft.d, func(i, j int) bool { return ttft.d[i] < ttft.d[j] })
	b.ReportMetric(float64(ttft.d[len(ttft.d)/2].Microseconds())/1000, "ttft-p50-ms")
	b.ReportMetric(float64(ttft.d[len(ttft.d)*99/100].Microseconds())/1000, "ttft-p99-ms")
	total.report(b, elapsed)
}

// BenchmarkTopUpX402: an agent's credit top-up end to end on the embedded
// network: 402 challenge, EIP-3009 signature, paid retry (settle on the
// in-process EVM, record, grant) — one caller.
func BenchmarkTopUpX402(b *testing.B) {
	key, _ := crypto.GenerateKey()
	payer := crypto.PubkeyToAddress(key.PublicKey)
	if _, err := env.Platform.Payments.Mint(context.Background(), payer.Hex(), money.Micros(b.N+1)*5*money.USD); err != nil {
		b.Fatal(err)
	}
	keyHex := hexutil.Encode(crypto.FromECDSA(key))
	b.ResetTimer()
	lat := newLatencies()
	start := time.Now()
	for range b.N {
		t0 := time.Now()
		r := env.Do(b, "POST", "/api/billing/credits/x402", nil)
		pr, err := x402.DecodePaymentRequired(r.Header.Get("PAYMENT-REQUIRED"))
		if err != nil {
			b.Fatal(err)
		}
		var nonce [32]byte
		_, _ = rand.Read(nonce[:])
		p, err := x402.SignEVM(pr.Accepts[0], keyHex, nonce, time.Now())
		if err != nil {
			b.Fatal(err)
		}
		h, _ := x402.EncodeHeader(p)
		if r := env.Do(b, "POST", "/api/billing/credits/x402", nil, "PAYMENT-SIGNATURE", h); r.Status != http.StatusOK {
			b.Fatalf("top-up: %d %s", r.Status, r.Body)
		}
		lat.add(time.Since(t0))
	}
	lat.report(b, time.Since(start))
}
