package media

import (
	"context"
	"os"
	"sync"
	"testing"
	"time"
)

// An edit reports the seconds it encoded (what a job is charged by when
// it reaches its timeout), and stops at MaxBytes.
func TestEditReportsEncodedSecondsAndStopsAtMaxBytes(t *testing.T) {
	a, b := tone(t, 440, "3"), tone(t, 660, "2")
	var mu sync.Mutex
	var last time.Duration
	reports := 0
	out, err := (&Editor{}).EditLimited(context.Background(), EditSpec{Op: OpConcat}, []Source{a, b}, t.TempDir(), Limits{Encoded: func(d time.Duration) {
		mu.Lock()
		defer mu.Unlock()
		if d < last {
			t.Errorf("encoded went back from %s to %s", last, d)
		}
		last, reports = d, reports+1
	}})
	if err != nil {
		t.Fatal(err)
	}
	if reports == 0 || last < 4900*time.Millisecond {
		t.Fatalf("%d reports, last %s; want about 5 s", reports, last)
	}
	full, _ := os.Stat(out.Path)
	capped, err := (&Editor{}).EditLimited(context.Background(), EditSpec{Op: OpConcat}, []Source{a, b}, t.TempDir(), Limits{MaxBytes: full.Size() / 2})
	if err != nil {
		t.Fatal(err)
	}
	if st, _ := os.Stat(capped.Path); st.Size() >= full.Size() || st.Size() > full.Size()/2+64<<10 {
		t.Fatalf("capped at %d bytes: %d (full %d)", full.Size()/2, st.Size(), full.Size())
	}
}
