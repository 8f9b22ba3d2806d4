// Package tasks is the scheduled-task domain: the record a caller sees
// (spec §2.8), its states (§3.4), what a task does when it fires (an HTTP
// request into its enclave's application), and validation of what a
// caller may create or change, the schedule string and time zone
// included. Each task is a Temporal Schedule (package
// internal/tasks/schedules); every firing is one TaskRun workflow.
package tasks

import (
	"fmt"
	"net/http"
	"net/textproto"
	"net/url"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"conduit/internal/errs"
)

// Status is a task state (spec §3.4).
type Status string

const (
	// Running: the schedule is active and fires.
	Running Status = "running"
	// Stopped: the owner stopped it; the schedule is paused.
	Stopped Status = "stopped"
	// Failed: FailureThreshold runs in a row failed; the schedule paused
	// itself with a note. Setting status running resumes it.
	Failed Status = "failed"
	// Pending: the enclave is not DEPLOYED; the schedule exists, paused,
	// and resumes when the enclave deploys (or resumes).
	Pending Status = "pending"
)

// Statuses lists every status, for filters.
var Statuses = []Status{Running, Stopped, Failed, Pending}

// Outcomes of a run.
const (
	// Success: the application answered 2xx within the timeout.
	Success = "success"
	// Failure: it answered another status, or could not be reached.
	Failure = "failure"
	// Timeout: it did not answer within request.timeoutSeconds.
	Timeout = "timeout"
	// Skipped: nothing was called (the enclave is not DEPLOYED, the task
	// was stopped or deleted meanwhile); it does not count as a failure.
	Skipped = "skipped"
)

// Outcomes lists every outcome, for filters.
var Outcomes = []string{Success, Failure, Timeout, Skipped}

// Counts says whether an outcome counts as a failed run.
func Counts(outcome string) bool { return outcome == Failure || outcome == Timeout }

// Overlap policies (what happens when a firing comes while the previous
// run still runs), by their API names.
var Overlaps = []string{"skip", "buffer_one", "buffer_all", "cancel_other", "terminate_other", "allow_all"}

// Defaults and limits.
const (
	DefaultOverlap          = "skip"
	DefaultCatchupSeconds   = 300
	MinCatchupSeconds       = 10
	MaxCatchupSeconds       = 7 * 24 * 3600
	MaxJitterSeconds        = 3600
	DefaultTimeoutSeconds   = 30
	MaxTimeoutSeconds       = 300
	DefaultFailureThreshold = 3
	MaxFailureThreshold     = 100
	MaxName                 = 100
	MaxDesc                 = 1000
	MaxBody                 = 64 << 10
	MaxHeaders              = 32
	MaxPath                 = 2048
	// MaxResult is how much of a response body a run keeps (characters).
	MaxResult = 1000
	// NextRuns is how many upcoming fire times a record lists.
	NextRuns = 5
)

// Request is what a firing sends to the enclave's application: an HTTP
// request to Path on the enclave's forwarded port.
type Request struct {
	Method         string            `json:"method"`
	Path           string            `json:"path"`
	Headers        map[string]string `json:"headers,omitempty"`
	Body           string            `json:"body,omitempty"`
	TimeoutSeconds int               `json:"timeoutSeconds"`
}

// LastRun is the newest run's summary on the record.
type LastRun struct {
	RunID      string    `json:"runId"`
	Time       time.Time `json:"time"`
	Outcome    string    `json:"outcome"`
	DurationMs int64     `json:"durationMs"`
	HTTPStatus int       `json:"httpStatus,omitempty"`
	Result     string    `json:"result"`
}

// Task is the record (spec §2.8 plus what a scheduled job needs).
type Task struct {
	ID                  string
	AccountID           string
	EnclaveID           string
	Name                string
	Description         string
	Schedule            string
	Timezone            string
	Request             Request
	Overlap             string
	CatchupSeconds      int
	JitterSeconds       int
	FailureThreshold    int
	Status              Status
	StatusReason        string
	ConsecutiveFailures int
	LastRun             *LastRun
	// WalletAddress is the enclave's (empty until it deploys).
	WalletAddress string
	CreatedAt     time.Time
	UpdatedAt     time.Time
	Deleted       bool
}

// Run is one firing's outcome.
type Run struct {
	ID          string    `json:"id"`
	TaskID      string    `json:"taskId"`
	ScheduledAt time.Time `json:"scheduledTime"`
	StartedAt   time.Time `json:"startedAt"`
	DurationMs  int64     `json:"durationMs"`
	Outcome     string    `json:"outcome"`
	HTTPStatus  int       `json:"httpStatus,omitempty"`
	Result      string    `json:"result"`
	Truncated   bool      `json:"truncated"`
}

// RunInput is the TaskRun workflow's input (the schedule's action).
type RunInput struct {
	TaskID string
}

// Spec is the part of a task that shapes its schedule and its request.
type Spec struct {
	Name                 string   `json:"name"`
	Description          string   `json:"description"`
	Schedule             string   `json:"schedule"`
	Timezone             string   `json:"timezone"`
	Request              *Request `json:"request"`
	Overlap              string   `json:"overlap"`
	CatchupWindowSeconds *int     `json:"catchupWindowSeconds"`
	JitterSeconds        *int     `json:"jitterSeconds"`
	FailureThreshold     *int     `json:"failureThreshold"`
}

// Create is what a caller sends to create a task.
type Create struct {
	Spec
	EnclaveID string `json:"enclaveId"`
	// Status may be "stopped" to create it stopped; otherwise it runs
	// (or is pending until its enclave deploys).
	Status string `json:"status"`
}

// Patch is what may change; absent fields keep their value.
type Patch struct {
	Name                 *string  `json:"name"`
	Description          *string  `json:"description"`
	Schedule             *string  `json:"schedule"`
	Timezone             *string  `json:"timezone"`
	Request              *Request `json:"request"`
	Overlap              *string  `json:"overlap"`
	CatchupWindowSeconds *int     `json:"catchupWindowSeconds"`
	JitterSeconds        *int     `json:"jitterSeconds"`
	FailureThreshold     *int     `json:"failureThreshold"`
	Status               *string  `json:"status"`
}

// Invalid is one field's 400, in the same shape as Validate's.
func Invalid(field, msg string) error {
	var p errs.Problems
	p.Add(field, msg)
	return p.Err("the task")
}

// Validate checks a create request and fills the defaults.
func (c *Create) Validate() error {
	var p errs.Problems
	c.EnclaveID = strings.TrimSpace(c.EnclaveID)
	if c.EnclaveID == "" {
		p.Add("enclaveId", "is required: the enclave whose application the task calls")
	}
	switch c.Status {
	case "", string(Running), string(Stopped):
	default:
		p.Add("status", `may only be "running" (the default) or "stopped" at creation`)
	}
	c.Name = strings.TrimSpace(c.Name)
	if c.Name == "" {
		p.Add("name", "is required")
	}
	if c.Schedule == "" {
		p.Add("schedule", `is required: a cron expression ("*/5 * * * *", "@daily") or "@every <duration>"`)
	}
	if c.Request == nil {
		c.Request = &Request{}
	}
	if c.Overlap == "" {
		c.Overlap = DefaultOverlap
	}
	if c.Timezone == "" {
		c.Timezone = "UTC"
	}
	def := func(v **int, d int) {
		if *v == nil {
			*v = &d
		}
	}
	def(&c.CatchupWindowSeconds, DefaultCatchupSeconds)
	def(&c.JitterSeconds, 0)
	def(&c.FailureThreshold, DefaultFailureThreshold)
	c.Spec.check(&p)
	return p.Err("the task")
}

func (s *Spec) check(p *errs.Problems) {
	if len(s.Name) > MaxName {
		p.Add("name", fmt.Sprintf("is longer than %d characters", MaxName))
	}
	if len(s.Description) > MaxDesc {
		p.Add("description", fmt.Sprintf("is longer than %d characters", MaxDesc))
	}
	if s.Schedule != "" {
		if _, err := ParseSchedule(s.Schedule); err != nil {
			p.Add("schedule", err.Error())
		}
	}
	if _, err := time.LoadLocation(s.Timezone); err != nil || s.Timezone == "Local" {
		p.Add("timezone", fmt.Sprintf("%q is not an IANA time zone name (e.g. \"UTC\", \"Europe/Berlin\", \"America/New_York\")", s.Timezone))
	}
	s.Request.check(p)
	if !slices.Contains(Overlaps, s.Overlap) {
		p.Add("overlap", "must be one of "+strings.Join(Overlaps, ", "))
	}
	if v := *s.CatchupWindowSeconds; v < MinCatchupSeconds || v > MaxCatchupSeconds {
		p.Add("catchupWindowSeconds", fmt.Sprintf("must be between %d and %d", MinCatchupSeconds, MaxCatchupSeconds))
	}
	if v := *s.JitterSeconds; v < 0 || v > MaxJitterSeconds {
		p.Add("jitterSeconds", fmt.Sprintf("must be between 0 and %d", MaxJitterSeconds))
	}
	if v := *s.FailureThreshold; v < 1 || v > MaxFailureThreshold {
		p.Add("failureThreshold", fmt.Sprintf("must be between 1 and %d", MaxFailureThreshold))
	}
}

var methods = []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete, http.MethodHead}

// Headers a task may not set: the transport owns them.
var reserved = []string{"Host", "Content-Length", "Transfer-Encoding", "Connection", "Upgrade", "Te", "Trailer", "Keep-Alive", "Proxy-Connection"}

func (r *Request) check(p *errs.Problems) {
	r.Method = strings.ToUpper(strings.TrimSpace(r.Method))
	if r.Method == "" {
		r.Method = http.MethodPost
	}
	if !slices.Contains(methods, r.Method) {
		p.Add("request.method", "must be one of "+strings.Join(methods, ", "))
	}
	if r.Path == "" {
		r.Path = "/"
	}
	if msg := checkPath(r.Path); msg != "" {
		p.Add("request.path", msg)
	}
	if len(r.Headers) > MaxHeaders {
		p.Add("request.headers", fmt.Sprintf("at most %d headers", MaxHeaders))
	}
	for _, k := range sortedKeys(r.Headers) {
		v := r.Headers[k]
		canon := textproto.CanonicalMIMEHeaderKey(k)
		switch {
		case k == "" || strings.ContainsAny(k, " \t\r\n:") || !isToken(k):
			p.Add("request.headers", fmt.Sprintf("%q is not a header name", k))
		case slices.Contains(reserved, canon) || strings.HasPrefix(canon, "X-Conduit-"):
			p.Add("request.headers", fmt.Sprintf("%s is set by the platform and cannot be given", canon))
		case strings.ContainsAny(v, "\r\n\x00") || len(v) > 8192:
			p.Add("request.headers", fmt.Sprintf("the value of %s is not a valid header value", k))
		}
	}
	if len(r.Body) > MaxBody {
		p.Add("request.body", fmt.Sprintf("is longer than %d bytes", MaxBody))
	}
	if r.Body != "" && (r.Method == http.MethodGet || r.Method == http.MethodHead) {
		p.Add("request.body", "a "+r.Method+" request has no body")
	}
	if r.TimeoutSeconds == 0 {
		r.TimeoutSeconds = DefaultTimeoutSeconds
	}
	if r.TimeoutSeconds < 1 || r.TimeoutSeconds > MaxTimeoutSeconds {
		p.Add("request.timeoutSeconds", fmt.Sprintf("must be between 1 and %d", MaxTimeoutSeconds))
	}
}

func sortedKeys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func isToken(s string) bool {
	for _, r := range s {
		if r > 126 || r <= 32 || strings.ContainsRune(`"(),/:;<=>?@[\]{}`, r) {
			return false
		}
	}
	return true
}

// checkPath says what is wrong with a request path ("" when nothing): it
// is the path and query of a URL on the enclave's own address, never
// another host.
func checkPath(path string) string {
	if len(path) > MaxPath {
		return fmt.Sprintf("is longer than %d characters", MaxPath)
	}
	if !strings.HasPrefix(path, "/") || strings.HasPrefix(path, "//") {
		return `must start with "/" (a path on the enclave's application, e.g. "/jobs/cleanup?dry=1")`
	}
	if !utf8.ValidString(path) || strings.ContainsAny(path, " \t\r\n\x00#\\") {
		return "must not contain spaces, control characters, '#' or '\\'"
	}
	u, err := url.Parse("http://enclave" + path)
	if err != nil || u.Host != "enclave" {
		return "is not a URL path"
	}
	return ""
}

// Validate checks a patch; the result applies to t (the stored task) with
// Apply.
func (pt *Patch) Validate() error {
	var p errs.Problems
	if *pt == (Patch{}) {
		p.Add("body", "nothing to change: send name, description, schedule, timezone, request, overlap, catchupWindowSeconds, jitterSeconds, failureThreshold or status")
	}
	if pt.Name != nil {
		n := strings.TrimSpace(*pt.Name)
		pt.Name = &n
		if n == "" {
			p.Add("name", "must not be empty")
		}
	}
	if pt.Schedule != nil && strings.TrimSpace(*pt.Schedule) == "" {
		p.Add("schedule", "must not be empty")
	}
	if pt.Status != nil && *pt.Status != string(Running) && *pt.Status != string(Stopped) {
		p.Add("status", `may be set to "stopped" (pause the schedule) or "running" (resume it); "failed" and "pending" are set by the platform`)
	}
	return p.Err("the task")
}

// Apply returns t's spec with the patch applied, validated.
func (pt *Patch) Apply(t Task) (Spec, error) {
	req := t.Request
	s := Spec{Name: t.Name, Description: t.Description, Schedule: t.Schedule, Timezone: t.Timezone, Request: &req,
		Overlap: t.Overlap, CatchupWindowSeconds: &t.CatchupSeconds, JitterSeconds: &t.JitterSeconds, FailureThreshold: &t.FailureThreshold}
	if pt.Name != nil {
		s.Name = *pt.Name
	}
	if pt.Description != nil {
		s.Description = *pt.Description
	}
	if pt.Schedule != nil {
		s.Schedule = strings.TrimSpace(*pt.Schedule)
	}
	if pt.Timezone != nil {
		s.Timezone = *pt.Timezone
	}
	if pt.Request != nil {
		r := *pt.Request
		s.Request = &r
	}
	if pt.Overlap != nil {
		s.Overlap = *pt.Overlap
	}
	if pt.CatchupWindowSeconds != nil {
		s.CatchupWindowSeconds = pt.CatchupWindowSeconds
	}
	if pt.JitterSeconds != nil {
		s.JitterSeconds = pt.JitterSeconds
	}
	if pt.FailureThreshold != nil {
		s.FailureThreshold = pt.FailureThreshold
	}
	var p errs.Problems
	s.check(&p)
	return s, p.Err("the task")
}

// Owned returns t when account owns it and it is not deleted, else
// NotFound: another account's task does not exist for the caller.
func Owned(t Task, account string) (Task, error) {
	if t.AccountID != account || t.Deleted {
		return Task{}, NotFound(t.ID)
	}
	return t, nil
}

// NotFound is the 404 of a task id.
func NotFound(id string) error { return errs.NotFoundf("task %q does not exist", id) }

// ScheduleID is the Temporal Schedule of a task.
func ScheduleID(id string) string { return "task/" + id }

// RunWorkflowID is the id the schedule's action names; Temporal appends
// "-" and the nominal fire time in RFC 3339 (UTC, seconds), so a firing
// is "task-run/<id>-2026-11-23T20:30:05Z".
func RunWorkflowID(id string) string { return "task-run/" + id }

// Truncate keeps the first MaxResult characters of s (valid UTF-8) and
// says whether it cut.
func Truncate(s string) (string, bool) {
	s = strings.ToValidUTF8(s, "\uFFFD")
	if utf8.RuneCountInString(s) <= MaxResult {
		return s, false
	}
	r := []rune(s)
	return string(r[:MaxResult]), true
}

// Changed says whether the spec differs from t's.
func (s Spec) Changed(t Task) bool {
	return s.Name != t.Name || s.Description != t.Description || s.Schedule != t.Schedule || s.Timezone != t.Timezone ||
		!sameRequest(*s.Request, t.Request) || s.Overlap != t.Overlap || *s.CatchupWindowSeconds != t.CatchupSeconds ||
		*s.JitterSeconds != t.JitterSeconds || *s.FailureThreshold != t.FailureThreshold
}

func sameRequest(a, b Request) bool {
	if a.Method != b.Method || a.Path != b.Path || a.Body != b.Body || a.TimeoutSeconds != b.TimeoutSeconds || len(a.Headers) != len(b.Headers) {
		return false
	}
	for k, v := range a.Headers {
		if w, ok := b.Headers[k]; !ok || w != v {
			return false
		}
	}
	return true
}
