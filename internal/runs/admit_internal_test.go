package runs

import (
	"testing"
	"time"

	"conduit/workflows"
)

// A run without an Idempotency-Key is admitted only while its caller still
// waits for the answer, with a margin for the admission step itself and
// clock skew: otherwise a 503 that says nothing was charged could be
// followed by a charged run (workflows.AnswerWithin).
func TestUnkeyedAdmissionEndsWellInsideTheWait(t *testing.T) {
	if margin := admitWait - workflows.AnswerWithin; margin < 10*time.Second {
		t.Fatalf("admitWait %v leaves %v after workflows.AnswerWithin %v; want at least 10 s", admitWait, margin, workflows.AnswerWithin)
	}
}
