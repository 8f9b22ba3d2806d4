package redact

import (
	"math/rand/v2"
	"runtime"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"
)

// cpuTime is the process's user+system CPU time. The benchmarks report
// MB per CPU-second as well as per wall-second: on a shared machine the
// wall figure measures the neighbours too.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// threadCPU is the calling thread's CPU time (CLOCK_THREAD_CPUTIME_ID):
// the latency of one call without the time other processes held the core.
func threadCPU() time.Duration {
	var ts syscall.Timespec
	syscall.Syscall(syscall.SYS_CLOCK_GETTIME, 3, uintptr(unsafe.Pointer(&ts)), 0)
	return time.Duration(ts.Nano())
}

func reportCPU(b *testing.B, start time.Duration, bytes int) {
	if d := cpuTime() - start; d > 0 {
		b.ReportMetric(float64(bytes)*float64(b.N)/d.Seconds()/1e6, "MB/cpu-s")
	}
}

// mixedText is chat, email, clinical, log and code text with every type
// in it, about one entity per 150 bytes.
func mixedText(size int) string {
	parts := []string{
		"Hi, my name is Zoltan Brekke and my email is zoltan.brekke@example.com. Call me at (415) 555-2671.\n",
		"2026-01-15T10:22:03Z INFO http: GET /api/v1/orders/88213 200 12ms req=3f2a9c1d-1b2c-4d5e-8f90-a1b2c3d4e5f6\n",
		"Patient: Maria Lopez  DOB: 03/12/1985  MRN: 00482913. Lives at 1600 Pennsylvania Avenue NW, Washington, DC 20500.\n",
		"Card 4111 1111 1111 1111 was declined; SSN on file 219-09-9998. Wire to DE89 3704 0044 0532 0130 00 please.\n",
		"The quarterly report is attached; revenue grew by 12 percent and the team shipped 41 features this cycle.\n",
		"AWS_ACCESS_KEY_ID=AKIAIOSFODNN7EXAMPLE and see https://docs.example.com/setup?step=3 for the rest.\n",
		"commit 9fceb02d0ae598e95dc970b74767f19372d61af8 Merge pull request #231 from feature/cache, build v1.4.2\n",
		"Dear Mr. Okonkwo, your appointment is on March 3, 2026 at our Tacoma office. Kind regards, Support\n",
	}
	var b strings.Builder
	r := rand.New(rand.NewPCG(1, 2))
	for b.Len() < size {
		b.WriteString(parts[r.IntN(len(parts))])
	}
	return b.String()
}

func BenchmarkDetectMixed64KB(b *testing.B) {
	text := mixedText(64 << 10)
	b.SetBytes(int64(len(text)))
	b.ReportAllocs()
	c0 := cpuTime()
	for b.Loop() {
		if _, err := Detect(text, Options{}); err != nil {
			b.Fatal(err)
		}
	}
	reportCPU(b, c0, len(text))
}

func BenchmarkDetect2KB(b *testing.B) {
	text := mixedText(2 << 10)
	b.SetBytes(int64(len(text)))
	b.ReportAllocs()
	lat := make([]time.Duration, 0, 1<<16)
	cpu := make([]time.Duration, 0, 1<<16)
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	c0 := cpuTime()
	for b.Loop() {
		t0, tc := time.Now(), threadCPU()
		if _, err := Detect(text, Options{}); err != nil {
			b.Fatal(err)
		}
		if len(lat) < cap(lat) {
			cpu = append(cpu, threadCPU()-tc)
			lat = append(lat, time.Since(t0))
		}
	}
	sort.Slice(cpu, func(i, j int) bool { return cpu[i] < cpu[j] })
	if len(cpu) > 0 {
		b.ReportMetric(float64(cpu[len(cpu)*99/100].Microseconds()), "p99-cpu-µs")
	}
	reportCPU(b, c0, len(text))
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	if len(lat) > 0 {
		b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
		b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
	}
}

func BenchmarkDetectClean64KB(b *testing.B) {
	var sb strings.Builder
	for sb.Len() < 64<<10 {
		sb.WriteString("2026-01-15T10:22:03Z INFO worker: job 3f2a9c1d-1b2c-4d5e-8f90-a1b2c3d4e5f6 done in 231ms rows=88213 sha=9fceb02d0ae598e95dc970b74767f19372d61af8\n")
	}
	text := sb.String()
	b.SetBytes(int64(len(text)))
	c0 := cpuTime()
	for b.Loop() {
		if _, err := Detect(text, Options{}); err != nil {
			b.Fatal(err)
		}
	}
	reportCPU(b, c0, len(text))
}

// BenchmarkDetectAdversarial: texts built to make a detector quadratic
// (every token a URL start, a PEM header, an address, a name).
func BenchmarkDetectAdversarial(b *testing.B) {
	for _, p := range []string{"a://", "www.", "-----BEGIN ", "@a.", "12 Main St ", "John Smith ", "password=xK9#mQ2$vL "} {
		text := strings.Repeat(p, (64<<10)/len(p))
		b.Run(strings.TrimSpace(p), func(b *testing.B) {
			b.SetBytes(int64(len(text)))
			c0 := cpuTime()
			for b.Loop() {
				if _, err := Detect(text, Options{}); err != nil {
					b.Fatal(err)
				}
			}
			reportCPU(b, c0, len(text))
		})
	}
}
