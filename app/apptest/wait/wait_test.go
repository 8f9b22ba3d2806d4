package wait_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"conduit/app/apptest/wait"
)

func TestEventuallyReturnsOnceTheConditionHolds(t *testing.T) {
	n := 0
	wait.Eventually(t, time.Second, "three calls", func() error {
		if n++; n < 3 {
			return fmt.Errorf("call %d", n)
		}
		return nil
	})
	if n != 3 {
		t.Fatalf("cond called %d times, want 3", n)
	}
}

// recorder catches the failure Eventually reports instead of failing this test.
type recorder struct {
	testing.TB
	msg string
}

func (r *recorder) Helper() {}
func (r *recorder) Fatalf(format string, args ...any) {
	r.msg = fmt.Sprintf(format, args...)
	panic(r)
}

func TestEventuallyReportsWhatItWaitedForAndTheLastAnswer(t *testing.T) {
	r := &recorder{TB: t}
	func() {
		defer func() {
			if p := recover(); p != r {
				t.Fatalf("Eventually did not fail: %v", p)
			}
		}()
		wait.Eventually(r, 50*time.Millisecond, "the run to finish", func() error { return errors.New("status running") })
	}()
	if want := "waited 50ms for the run to finish: status running"; r.msg != want {
		t.Fatalf("failure reads %q, want %q", r.msg, want)
	}
}
