package tasks_test

import (
	"strings"
	"testing"
	"time"

	"conduit/internal/errs"
	"conduit/internal/tasks"
)

func TestParseSchedule(t *testing.T) {
	good := []struct {
		in    string
		cron  string
		every time.Duration
	}{
		{"*/5 * * * *", "*/5 * * * *", 0},
		{"  0  9 * * MON-FRI ", "0 9 * * MON-FRI", 0},
		{"30 2 1,15 * *", "30 2 1,15 * *", 0},
		{"@daily", "@daily", 0},
		{"@hourly", "@hourly", 0},
		{"@every 1s", "", time.Second},
		{"@every 90s", "", 90 * time.Second},
		{"@every 1h30m", "", 90 * time.Minute},
	}
	for _, g := range good {
		p, err := tasks.ParseSchedule(g.in)
		if err != nil || p.Cron != g.cron || p.Every != g.every {
			t.Errorf("%q: %+v %v, want cron %q every %s", g.in, p, err, g.cron, g.every)
		}
	}
	bad := map[string]string{
		"":                    "empty",
		"* * * *":             "has 4 fields",
		"* * * * * *":         "has 6 fields",
		"61 * * * *":          "not a valid cron expression",
		"* 25 * * *":          "not a valid cron expression",
		"* * * FOO *":         "not a valid cron expression",
		"@often":              "not a descriptor",
		"@every":              "needs a duration",
		"@every soon":         "not a duration",
		"@every 500ms":        "at least 1s",
		"@every 1500ms":       "whole number of seconds",
		"@every 9000h":        "at most",
		"TZ=UTC * * * * *":    "timezone field",
		"CRON_TZ=UTC 0 * * *": "timezone field",
	}
	for in, want := range bad {
		if _, err := tasks.ParseSchedule(in); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want an error with %q", in, err, want)
		}
	}
}

func create(schedule, tz string) tasks.Create {
	return tasks.Create{EnclaveID: "enc_1", Spec: tasks.Spec{Name: "nightly", Schedule: schedule, Timezone: tz,
		Request: &tasks.Request{Method: "post", Path: "/jobs/run?x=1"}}}
}

// problems answers the fields a validation error names.
func problems(t *testing.T, err error) []string {
	t.Helper()
	e, ok := errs.As(err)
	if !ok || e.Kind != errs.Invalid {
		t.Fatalf("not an Invalid error: %v", err)
	}
	var out []string
	for _, p := range e.Extra["problems"].([]map[string]string) {
		out = append(out, p["field"])
	}
	return out
}

func TestCreateValidation(t *testing.T) {
	c := create("0 3 * * *", "Europe/Berlin")
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	if c.Request.Method != "POST" || c.Request.TimeoutSeconds != tasks.DefaultTimeoutSeconds || c.Overlap != "skip" ||
		*c.FailureThreshold != tasks.DefaultFailureThreshold || *c.CatchupWindowSeconds != tasks.DefaultCatchupSeconds {
		t.Fatalf("defaults: %+v %+v", c, c.Request)
	}
	c = create("*/5 * * * *", "")
	if err := c.Validate(); err != nil || c.Timezone != "UTC" {
		t.Fatalf("default zone: %q %v", c.Timezone, err)
	}

	cases := []struct {
		name  string
		edit  func(*tasks.Create)
		field string
	}{
		{"bad cron", func(c *tasks.Create) { c.Schedule = "* * *" }, "schedule"},
		{"bad zone", func(c *tasks.Create) { c.Timezone = "Mars/Olympus" }, "timezone"},
		{"local zone", func(c *tasks.Create) { c.Timezone = "Local" }, "timezone"},
		{"no schedule", func(c *tasks.Create) { c.Schedule = "" }, "schedule"},
		{"no enclave", func(c *tasks.Create) { c.EnclaveID = " " }, "enclaveId"},
		{"no name", func(c *tasks.Create) { c.Name = "" }, "name"},
		{"method", func(c *tasks.Create) { c.Request.Method = "TRACE" }, "request.method"},
		{"absolute url", func(c *tasks.Create) { c.Request.Path = "http://elsewhere/x" }, "request.path"},
		{"other host", func(c *tasks.Create) { c.Request.Path = "//elsewhere/x" }, "request.path"},
		{"fragment", func(c *tasks.Create) { c.Request.Path = "/x#y" }, "request.path"},
		{"host header", func(c *tasks.Create) { c.Request.Headers = map[string]string{"host": "x"} }, "request.headers"},
		{"our header", func(c *tasks.Create) { c.Request.Headers = map[string]string{"X-Conduit-Run-Id": "x"} }, "request.headers"},
		{"header injection", func(c *tasks.Create) { c.Request.Headers = map[string]string{"X-A": "1\r\nX-B: 2"} }, "request.headers"},
		{"get body", func(c *tasks.Create) { c.Request.Method, c.Request.Body = "GET", "{}" }, "request.body"},
		{"timeout", func(c *tasks.Create) { c.Request.TimeoutSeconds = 301 }, "request.timeoutSeconds"},
		{"overlap", func(c *tasks.Create) { c.Overlap = "sometimes" }, "overlap"},
		{"threshold", func(c *tasks.Create) { n := 0; c.FailureThreshold = &n }, "failureThreshold"},
		{"catch-up", func(c *tasks.Create) { n := 1; c.CatchupWindowSeconds = &n }, "catchupWindowSeconds"},
		{"jitter", func(c *tasks.Create) { n := -1; c.JitterSeconds = &n }, "jitterSeconds"},
		{"status", func(c *tasks.Create) { c.Status = "failed" }, "status"},
	}
	for _, k := range cases {
		c := create("0 3 * * *", "UTC")
		k.edit(&c)
		err := c.Validate()
		if err == nil {
			t.Errorf("%s: accepted", k.name)
			continue
		}
		if f := problems(t, err); len(f) != 1 || f[0] != k.field {
			t.Errorf("%s: fields %v, want [%s] (%v)", k.name, f, k.field, err)
		}
		if !strings.Contains(err.Error(), k.field+": ") {
			t.Errorf("%s: the message does not name %s: %v", k.name, k.field, err)
		}
	}
}

func TestPatch(t *testing.T) {
	c := create("@every 10s", "UTC")
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	task := tasks.Task{Name: c.Name, Schedule: c.Schedule, Timezone: c.Timezone, Request: *c.Request, Overlap: c.Overlap,
		CatchupSeconds: *c.CatchupWindowSeconds, JitterSeconds: *c.JitterSeconds, FailureThreshold: *c.FailureThreshold}
	if err := (&tasks.Patch{}).Validate(); err == nil {
		t.Fatal("an empty patch was accepted")
	}
	failed := "failed"
	if err := (&tasks.Patch{Status: &failed}).Validate(); err == nil || problems(t, err)[0] != "status" {
		t.Fatalf("status failed: %v", err)
	}
	sched := "0 0 31 2 *x"
	p := tasks.Patch{Schedule: &sched}
	if _, err := p.Apply(task); err == nil || problems(t, err)[0] != "schedule" {
		t.Fatalf("bad cron patch: %v", err)
	}
	sched, tz := "15 8 * * 1", "America/New_York"
	p = tasks.Patch{Schedule: &sched, Timezone: &tz}
	s, err := p.Apply(task)
	if err != nil || s.Schedule != sched || s.Timezone != tz || s.Name != task.Name || !s.Changed(task) {
		t.Fatalf("apply: %+v %v", s, err)
	}
	name := task.Name
	if s, err := (&tasks.Patch{Name: &name}).Apply(task); err != nil || s.Changed(task) {
		t.Fatalf("the same name changed the task: %v", err)
	}
}

func TestTruncate(t *testing.T) {
	long := strings.Repeat("é", tasks.MaxResult+5)
	s, cut := tasks.Truncate(long)
	if !cut || len([]rune(s)) != tasks.MaxResult {
		t.Fatalf("%d runes, cut %v", len([]rune(s)), cut)
	}
	if s, cut := tasks.Truncate("ok\xff"); cut || s != "ok\uFFFD" {
		t.Fatalf("%q %v", s, cut)
	}
}

func TestShortestInterval(t *testing.T) {
	for _, c := range []struct {
		in   string
		want time.Duration
	}{
		{"@every 90s", 90 * time.Second},
		{"* * * * *", time.Minute},
		{"*/5 * * * *", 5 * time.Minute},
		{"30 * * * *", time.Hour},
		{"0,1 * * * *", time.Minute},
		{"@hourly", time.Hour},
		{"@daily", 24 * time.Hour},
	} {
		p, err := tasks.ParseSchedule(c.in)
		if err != nil {
			t.Fatal(c.in, err)
		}
		if got := p.Shortest(); got != c.want {
			t.Errorf("%s: shortest %s, want %s", c.in, got, c.want)
		}
	}
	if err := tasks.CheckInterval("@every 30s", time.Minute); err == nil || !strings.Contains(err.Error(), "the task") {
		t.Errorf("@every 30s under a 1m minimum: %v", err)
	}
	if err := tasks.CheckInterval("*/2 * * * *", 5*time.Minute); err == nil {
		t.Error("*/2 under a 5m minimum was accepted")
	}
	if err := tasks.CheckInterval("@hourly", 5*time.Minute); err != nil {
		t.Errorf("@hourly under a 5m minimum: %v", err)
	}
}
