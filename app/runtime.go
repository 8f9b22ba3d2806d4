package app

import (
	"log/slog"
	"os"
	"runtime/debug"
	"sync"

	"github.com/KimMachineGun/automemlimit/memlimit"
)

// gcPercent is the collector's target for a platform process, unless GOGC
// says otherwise. Most of what the process allocates is short-lived
// protobuf traffic to and from Temporal, per message rather than per byte
// kept, so the collector's cost follows the allocation rate over GOGC: at
// the default 100 it was about 7 % of an invoke's CPU, 200 halves it for
// a heap at most three times the live one instead of two (bench/README.md,
// "Garbage collection").
const gcPercent = 200

var tuneOnce sync.Once

// tuneRuntime sets the garbage collector for a server, once per process:
// GOGC 200 (above) and, in a container with a memory limit, a soft limit
// (GOMEMLIMIT) at 90 % of it, so the larger heap target gives way before
// the limit is reached. GOGC and GOMEMLIMIT in the environment win.
func tuneRuntime(log *slog.Logger) {
	tuneOnce.Do(func() {
		if _, set := os.LookupEnv("GOGC"); !set {
			debug.SetGCPercent(gcPercent)
		}
		if limit, err := memlimit.Set(memlimit.WithProvider(memlimit.FromCgroup)); err != nil {
			log.Debug("no container memory limit to follow", "err", err)
		} else if limit > 0 && limit < 1<<62 {
			log.Info("memory soft limit set from the container's", "gomemlimit_bytes", limit)
		}
	})
}
