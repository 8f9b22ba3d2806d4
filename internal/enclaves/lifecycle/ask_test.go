package lifecycle

import (
	"testing"
	"time"
)

// The stuck list's visibility query names every provisioning state and
// the time as RFC 3339 in UTC (Temporal's visibility parses it so).
func TestQueryNamesTheProvisioningStates(t *testing.T) {
	at := time.Date(2026, 11, 25, 18, 0, 0, 0, time.FixedZone("x", 3600))
	want := "WorkflowType = 'Enclave' AND ExecutionStatus = 'Running' AND EnclaveStatus IN ('PENDING_BUILD', 'BUILDING', 'PENDING_DEPLOY', 'DEPLOYING') AND EnclaveStatusSince < '2026-11-25T17:00:00Z'"
	if got := Query(at); got != want {
		t.Fatalf("Query:\n got %s\nwant %s", got, want)
	}
}
