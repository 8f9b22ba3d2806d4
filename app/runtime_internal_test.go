package app

import (
	"log/slog"
	"os"
	"runtime/debug"
	"strconv"
	"testing"
)

// A platform process runs the collector at GOGC 200 unless its
// environment names another target.
func TestTuneRuntimeSetsTheCollector(t *testing.T) {
	want := gcPercent
	if v, set := os.LookupEnv("GOGC"); set {
		n, err := strconv.Atoi(v)
		if err != nil {
			t.Fatalf("GOGC=%q", v)
		}
		want = n
	}
	tuneRuntime(slog.New(slog.DiscardHandler))
	got := debug.SetGCPercent(want)
	if got != want {
		t.Fatalf("GOGC %d, want %d", got, want)
	}
}
