package frontend_test

import (
	"net/http"
	"testing"
)

// The probes a deployment uses (deploy/helm): /healthz, the readiness,
// fails while PostgreSQL is unreachable and recovers with it; /livez, the
// liveness, keeps answering, so an outage takes a frontend out of rotation
// without restarting it.
func TestReadinessFailsWhileTheDatabaseIsDown(t *testing.T) {
	for _, path := range []string{"/healthz", "/livez"} {
		if r := env.Do(t, "GET", path, nil); r.Status != http.StatusOK || r.JSON(t)["status"] != "ok" {
			t.Fatalf("%s before the outage: %d %s", path, r.Status, r.Body)
		}
	}
	env.StopDatabase(t)
	r := env.Do(t, "GET", "/healthz", nil)
	if body := r.JSON(t); r.Status != http.StatusServiceUnavailable || body["postgres"] != "unreachable" || body["temporal"] != "ok" || body["status"] != "unavailable" {
		t.Fatalf("/healthz during the outage: %d %s", r.Status, r.Body)
	}
	if r := env.Do(t, "GET", "/livez", nil); r.Status != http.StatusOK {
		t.Fatalf("/livez during the outage: %d %s", r.Status, r.Body)
	}
	env.StartDatabase(t) // waits, with a bound, for /healthz to answer 200 again
	if r := env.Do(t, "GET", "/healthz", nil); r.Status != http.StatusOK {
		t.Fatalf("/healthz after the outage: %d %s", r.Status, r.Body)
	}
}
