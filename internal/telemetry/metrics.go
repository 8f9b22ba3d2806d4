package telemetry

import (
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// ours is every series of the platform itself (conduit_*). Each label's
// values come from a fixed set (the bounded* helpers): a request can never
// add a series.
var ours = &collectorSet{}

type collectorSet struct{ cs []prometheus.Collector }

func (s *collectorSet) add(c prometheus.Collector) { s.cs = append(s.cs, c) }

func (s *collectorSet) Describe(ch chan<- *prometheus.Desc) {
	for _, c := range s.cs {
		c.Describe(ch)
	}
}

func (s *collectorSet) Collect(ch chan<- prometheus.Metric) {
	for _, c := range s.cs {
		c.Collect(ch)
	}
}

func counter(name, help string) prometheus.Counter {
	c := prometheus.NewCounter(prometheus.CounterOpts{Name: name, Help: help})
	ours.add(c)
	return c
}

func counterVec(name, help string, labels ...string) *prometheus.CounterVec {
	c := prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, labels)
	ours.add(c)
	return c
}

var (
	httpRequests = counterVec("conduit_http_requests_total", "API requests answered, by method, route template and status class.", "method", "route", "code")
	httpDuration = func() *prometheus.HistogramVec {
		h := prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "conduit_http_request_duration_seconds",
			Help: "Time to answer an API request (a stream: until it ends), by method and route template.", Buckets: secondsBuckets}, []string{"method", "route"})
		ours.add(h)
		return h
	}()
	httpInFlight = func() prometheus.Gauge {
		g := prometheus.NewGauge(prometheus.GaugeOpts{Name: "conduit_http_requests_in_flight", Help: "API requests being answered."})
		ours.add(g)
		return g
	}()

	runsAdmitted = counter("conduit_runs_admitted_total", "Pipeline runs admitted (written with their credit hold).")
	runsFinished = counterVec("conduit_runs_finished_total", "Pipeline runs finished, by outcome.", "outcome")

	creditHeld     = counter("conduit_credit_held_microusd_total", "Credit reserved by holds, in micro-USD.")
	creditCaptured = counter("conduit_credit_captured_microusd_total", "Held credit charged, in micro-USD.")
	creditReleased = counter("conduit_credit_released_microusd_total", "Held credit returned to balances, in micro-USD.")

	paymentsVerified    = counter("conduit_payments_verified_total", "x402 payments whose signature and terms were accepted at the API.")
	paymentsRefused     = counterVec("conduit_payments_refused_total", "x402 payments refused, by stage (verify at the API, settle at the facilitator) and reason.", "stage", "reason")
	paymentsSettled     = counter("conduit_payments_settled_total", "x402 payments settled on chain and recorded.")
	paymentsReconciled  = counter("conduit_payments_reconciled_total", "Settlements whose answer was lost and that were found on chain (reconciliation).")
	paymentsUnconfirmed = counter("conduit_payments_unconfirmed_total", "Settlement attempts that ended without a confirmed outcome (retried).")

	rendersFinished = counterVec("conduit_renders_total", "Render attempts finished, by kind and outcome.", "kind", "outcome")
	renderDuration  = func() *prometheus.HistogramVec {
		h := prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "conduit_render_duration_seconds",
			Help: "Time one render attempt took, by kind.", Buckets: []float64{0.1, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800}}, []string{"kind"})
		ours.add(h)
		return h
	}()
	rendersInProgress = func() *prometheus.GaugeVec {
		g := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "conduit_renders_in_progress", Help: "Render attempts running in this process, by kind."}, []string{"kind"})
		ours.add(g)
		return g
	}()

	workflowReplays = counter("conduit_workflow_replays_total", "Workflow executions this worker replayed from their history (a cache miss, a query on a closed workflow), with tracing in place.")

	enclaveStates = counterVec("conduit_enclave_transitions_total", "Enclave state changes recorded, by the state entered.", "state")
	taskFirings   = counterVec("conduit_task_firings_total", "Scheduled task firings recorded, by outcome.", "outcome")
)

// The series of the fixed label sets exist from the start (at zero), so a
// dashboard or an alert finds them before the first event.
func init() {
	for _, o := range []string{"success", "error", "partial", "refused"} {
		runsFinished.WithLabelValues(o)
	}
	for _, st := range enclaveStatuses {
		enclaveStates.WithLabelValues(st)
	}
	for _, o := range []string{"success", "failure", "skipped"} {
		taskFirings.WithLabelValues(o)
	}
}

// RunAdmitted counts a run written with its hold (micro-USD, 0: none).
func RunAdmitted(heldMicros int64) {
	runsAdmitted.Inc()
	CreditHeld(heldMicros)
}

// RunFinished counts a run that left running, by its status.
func RunFinished(status string) {
	runsFinished.WithLabelValues(bounded(status, runOutcomes)).Inc()
}

var runOutcomes = []string{"success", "error", "partial", "refused", "duplicate", "timeout", "cancelled", "canceled"}

// CreditHeld counts credit reserved by a hold (micro-USD).
func CreditHeld(micros int64) {
	if micros > 0 {
		creditHeld.Add(float64(micros))
	}
}

// CreditSettled counts a hold's settlement: charged is captured, the rest
// of held released (micro-USD).
func CreditSettled(held, charged int64) {
	if charged > 0 {
		creditCaptured.Add(float64(charged))
	}
	if held > charged {
		creditReleased.Add(float64(held - charged))
	}
}

// PaymentVerified counts a payment accepted at the API.
func PaymentVerified() { paymentsVerified.Inc() }

// PaymentRefused counts a refused payment; stage is "verify" or "settle",
// reason an x402 reason (others count as "other").
func PaymentRefused(stage, reason string) {
	if stage != "verify" {
		stage = "settle"
	}
	paymentsRefused.WithLabelValues(stage, boundedReason(reason)).Inc()
}

// PaymentSettled counts a settlement recorded.
func PaymentSettled() { paymentsSettled.Inc() }

// PaymentReconciled counts a settlement whose answer was lost and that was
// found on chain.
func PaymentReconciled() { paymentsReconciled.Inc() }

// PaymentUnconfirmed counts a settlement attempt left unconfirmed.
func PaymentUnconfirmed() { paymentsUnconfirmed.Inc() }

// RenderStarted marks a render attempt running; call the returned func
// with its error when it ends (outcome success or error).
func RenderStarted(kind string) func(err error) {
	kind = boundedKind(renderKinds, kind)
	start := time.Now()
	g := rendersInProgress.WithLabelValues(kind)
	g.Inc()
	return func(err error) {
		g.Dec()
		outcome := "success"
		if err != nil {
			outcome = "error"
		}
		rendersFinished.WithLabelValues(kind, outcome).Inc()
		renderDuration.WithLabelValues(kind).Observe(time.Since(start).Seconds())
	}
}

// EnclaveState counts an enclave entering state (an enclaves.Status).
func EnclaveState(state string) {
	enclaveStates.WithLabelValues(bounded(state, enclaveStatuses)).Inc()
}

var enclaveStatuses = []string{"PENDING_BUILD", "BUILDING", "BUILD_FAILED", "PENDING_DEPLOY", "DEPLOYING", "DEPLOYED",
	"PAUSING", "PAUSED", "RESUMING", "PENDING_DESTROY", "DESTROYING", "DESTROYED", "FAILED"}

// TaskFiring counts a recorded task firing by its outcome.
func TaskFiring(outcome string) {
	taskFirings.WithLabelValues(boundedKind(taskOutcomes, outcome)).Inc()
}

// bounded is v when it is one of allowed, else "other".
func bounded(v string, allowed []string) string {
	for _, a := range allowed {
		if v == a {
			return a
		}
	}
	return "other"
}

// boundedKind keeps a short lower-case word from our own code or
// configuration (a render kind, a task outcome); anything else, and any
// word past the first maxValues seen, is "other".
func boundedKind(set *valueSet, v string) string {
	if v == "" || len(v) > 32 || strings.Trim(v, "abcdefghijklmnopqrstuvwxyz0123456789_-") != "" {
		return "other"
	}
	return set.admit(v)
}

// boundedReason keeps x402's reason codes (lower-case words joined by
// underscores, a fixed list in the protocol); a hosted facilitator's other
// words count as "other", as does any reason past the first maxValues.
func boundedReason(v string) string {
	if v == "" {
		return "unknown"
	}
	if len(v) > 96 || strings.Trim(v, "abcdefghijklmnopqrstuvwxyz0123456789_") != "" {
		return "other"
	}
	return reasons.admit(v)
}

// maxValues bounds the distinct values of one free-form label.
const maxValues = 64

var renderKinds, taskOutcomes, reasons = &valueSet{}, &valueSet{}, &valueSet{}

// valueSet admits at most maxValues distinct label values.
type valueSet struct {
	mu   sync.Mutex
	seen map[string]bool
}

func (s *valueSet) admit(v string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.seen[v] {
		return v
	}
	if len(s.seen) >= maxValues {
		return "other"
	}
	if s.seen == nil {
		s.seen = map[string]bool{}
	}
	s.seen[v] = true
	return v
}
