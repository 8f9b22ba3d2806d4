package frontend_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
)

type runEntity struct {
	Type        string  `json:"type"`
	Start       int     `json:"start"`
	End         int     `json:"end"`
	Score       float64 `json:"score"`
	Placeholder string  `json:"placeholder"`
	Operator    string  `json:"operator"`
	Value       *string `json:"value"`
}

type runResult struct {
	Redacted string      `json:"redacted"`
	Entities []runEntity `json:"entities"`
}

func redactRun(t *testing.T, key string, body any, status int) (runResult, map[string]any) {
	t.Helper()
	r := do(t, "POST", "/api/redact/run", key, body)
	if r.Status != status {
		t.Fatalf("POST /api/redact/run: %d %s, want %d", r.Status, r.Body, status)
	}
	var out runResult
	var raw map[string]any
	_ = json.Unmarshal(r.Body, &out)
	_ = json.Unmarshal(r.Body, &raw)
	return out, raw
}

// The text of the tests: non-ASCII before the entities, so code-point
// offsets differ from byte offsets; one email twice; a literal [EMAIL_1]
// the caller wrote, which the numbering must skip.
const runText = "Grüße! I'm Zoltan Brekke, mail zoltan.brekke@example.com or call +1 415 555 2671. " +
	"Again: zoltan.brekke@example.com. Card 4111 1111 1111 1111. Literal [EMAIL_1] stays."

func TestRedactRunReplacesAndNeverEchoes(t *testing.T) {
	_, key := env.NewAccount(t, "redact:run")
	out, raw := redactRun(t, key, map[string]any{"text": runText}, http.StatusOK)
	for _, secret := range []string{"zoltan.brekke@example.com", "415 555 2671", "4111 1111 1111 1111", "Brekke"} {
		if strings.Contains(out.Redacted, secret) {
			t.Errorf("redacted text still holds %q: %s", secret, out.Redacted)
		}
		b, _ := json.Marshal(raw)
		if strings.Contains(string(b), secret) {
			t.Errorf("the answer echoes %q", secret)
		}
	}
	// the same email twice gets one placeholder; [EMAIL_1] is taken, so it is [EMAIL_2]
	if n := strings.Count(out.Redacted, "[EMAIL_2]"); n != 2 {
		t.Errorf("want [EMAIL_2] twice, got %d in %s", n, out.Redacted)
	}
	if !strings.Contains(out.Redacted, "Literal [EMAIL_1] stays.") {
		t.Errorf("the literal placeholder changed: %s", out.Redacted)
	}
	types := map[string]int{}
	runes := []rune(runText)
	for _, e := range out.Entities {
		types[e.Type]++
		if e.Value != nil {
			t.Errorf("value echoed without includeValues: %+v", e)
		}
		if e.Start < 0 || e.End > len(runes) || e.Start >= e.End || e.Placeholder == "" || e.Score <= 0 {
			t.Fatalf("bad entity %+v", e)
		}
	}
	for _, want := range []string{"NAME", "EMAIL", "PHONE", "CC"} {
		if types[want] == 0 {
			t.Errorf("no %s found: %+v", want, out.Entities)
		}
	}
	// offsets are code points of the submitted text
	for _, e := range out.Entities {
		if e.Type == "EMAIL" && string(runes[e.Start:e.End]) != "zoltan.brekke@example.com" {
			t.Errorf("EMAIL span [%d,%d) is %q", e.Start, e.End, string(runes[e.Start:e.End]))
		}
	}
	if !utf8.ValidString(out.Redacted) || !strings.HasPrefix(out.Redacted, "Grüße! I'm [NAME_1]") {
		t.Errorf("redacted = %q", out.Redacted)
	}
}

func TestRedactRunScopes(t *testing.T) {
	_, noScope := env.NewAccount(t, "pipelines:read")
	_, raw := redactRun(t, noScope, map[string]any{"text": runText}, http.StatusForbidden)
	if msg, _ := raw["error"].(string); !strings.Contains(strings.ToLower(msg+stringify(raw)), "redact:run") {
		t.Errorf("403 does not name redact:run: %v", raw)
	}
	// includeValues needs pii:read too
	_, runOnly := env.NewAccount(t, "redact:run")
	_, raw = redactRun(t, runOnly, map[string]any{"text": runText, "includeValues": true}, http.StatusForbidden)
	if !strings.Contains(stringify(raw), "pii:read") {
		t.Errorf("403 does not name pii:read: %v", raw)
	}
	_, both := env.NewAccount(t, "redact:run", "pii:read")
	out, _ := redactRun(t, both, map[string]any{"text": runText, "includeValues": true}, http.StatusOK)
	seen := false
	for _, e := range out.Entities {
		if e.Type == "EMAIL" {
			if e.Value == nil || *e.Value != "zoltan.brekke@example.com" {
				t.Errorf("EMAIL value = %v", e.Value)
			}
			seen = true
		}
	}
	if !seen {
		t.Fatal("no EMAIL entity")
	}
}

func TestRedactRunPolicyAndLimits(t *testing.T) {
	_, key := env.NewAccount(t, "redact:run")
	// operators: mask cards, hash emails, placeholder the rest; only three types
	out, _ := redactRun(t, key, map[string]any{"text": runText, "policy": map[string]any{
		"entities":  []string{"EMAIL", "CC", "PHONE"},
		"operators": map[string]string{"CC": "mask", "EMAIL": "hash"},
	}}, http.StatusOK)
	if !strings.Contains(out.Redacted, "**** **** **** 1111") {
		t.Errorf("card not masked to its last four: %s", out.Redacted)
	}
	if !strings.Contains(out.Redacted, "Zoltan Brekke") {
		t.Errorf("NAME redacted though the policy leaves it out: %s", out.Redacted)
	}
	var hashes []string
	for _, e := range out.Entities {
		if e.Type == "EMAIL" {
			if e.Operator != "hash" || !strings.HasPrefix(e.Placeholder, "[EMAIL:") {
				t.Errorf("EMAIL entity %+v", e)
			}
			hashes = append(hashes, e.Placeholder)
		}
	}
	if len(hashes) != 2 || hashes[0] != hashes[1] {
		t.Errorf("equal emails should hash equal: %v", hashes)
	}
	// block: 422 naming the type, never the value
	r := do(t, "POST", "/api/redact/run", key, map[string]any{"text": runText, "policy": map[string]any{"operators": map[string]string{"SSN": "block", "CC": "block"}}})
	if r.Status != http.StatusUnprocessableEntity || !strings.Contains(string(r.Body), "CC") || strings.Contains(string(r.Body), "4111") {
		t.Errorf("block: %d %s", r.Status, r.Body)
	}
	// bad input: 400s that say what is wrong
	for _, c := range []struct {
		body any
		want string
	}{
		{map[string]any{"text": ""}, "text is required"},
		{map[string]any{"text": "x", "entities": []string{"EMAIL", "PASSPORT"}}, "PASSPORT"},
		{map[string]any{"text": "x", "policy": map[string]any{"operators": map[string]string{"EMAIL": "shred"}}}, "shred"},
		{map[string]any{"text": "x", "policy": map[string]any{"mrnFormats": []string{"(["}}}, "mrnFormats"},
		{map[string]any{"text": "x", "unknown": true}, "unknown"},
	} {
		r := do(t, "POST", "/api/redact/run", key, c.body)
		if r.Status != http.StatusBadRequest || !strings.Contains(string(r.Body), c.want) {
			t.Errorf("%v: %d %s, want 400 naming %q", c.body, r.Status, r.Body, c.want)
		}
	}
	// size: a clear 413
	big := strings.Repeat("a", 300<<10)
	r = do(t, "POST", "/api/redact/run", key, map[string]any{"text": big})
	if r.Status != http.StatusRequestEntityTooLarge || !strings.Contains(string(r.Body), "at most") {
		t.Errorf("oversized text: %d %.200s", r.Status, r.Body)
	}
}

func stringify(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// Every redacting /api/redact/run call lands in the account's audit chain
// as a "run" entry — counts by type, the status answered, the key, never a
// value; refusals before detection record nothing; the chain verifies, and
// stops verifying after an edit.
func TestRedactRunIsAudited(t *testing.T) {
	acct, key := env.NewAccount(t, "redact:run", "redact:log")
	redactRun(t, key, map[string]any{"text": runText}, http.StatusOK)
	// blocked by the policy: recorded, with the status answered
	r := do(t, "POST", "/api/redact/run", key, map[string]any{"text": runText, "policy": map[string]any{"operators": map[string]string{"CC": "block"}}})
	if r.Status != http.StatusUnprocessableEntity {
		t.Fatalf("block: %d %s", r.Status, r.Body)
	}
	// refused before detection: nothing recorded
	redactRun(t, key, map[string]any{"text": ""}, http.StatusBadRequest)
	redactRun(t, key, map[string]any{"text": runText, "includeValues": true}, http.StatusForbidden)
	redactRun(t, key, map[string]any{"text": strings.Repeat("a", 300<<10)}, http.StatusRequestEntityTooLarge)

	page := env.Do(t, "GET", "/api/redact/log?source=run", nil, bearer(key)...)
	if page.Status != 200 {
		t.Fatalf("%d %s", page.Status, page.Body)
	}
	for _, v := range []string{"zoltan.brekke@example.com", "Zoltan", "Brekke", "415 555 2671", "4111", "Grüße"} {
		if strings.Contains(string(page.Body), v) {
			t.Fatalf("the log holds a value (%q): %s", v, page.Body)
		}
	}
	entries, _ := page.JSON(t)["entries"].([]any)
	if len(entries) != 2 {
		t.Fatalf("want 2 run entries (the 200 and the 422), got %s", page.Body)
	}
	blocked, ok := entries[0].(map[string]any)
	first, _ := entries[1].(map[string]any)
	if !ok || first["source"] != "run" || first["upstreamStatus"] != float64(200) || first["keyId"] == nil || first["keyId"] == "" ||
		first["proxyId"] != nil {
		t.Fatalf("first entry %v", first)
	}
	counts, _ := first["entityCountsByType"].(map[string]any)
	if counts["EMAIL"] != float64(2) || counts["CC"] != float64(1) || counts["NAME"] == nil || counts["PHONE"] != float64(1) {
		t.Fatalf("counts %v", counts)
	}
	if bc, _ := blocked["entityCountsByType"].(map[string]any); blocked["upstreamStatus"] != float64(422) || bc["CC"] != float64(1) {
		t.Fatalf("blocked entry %v", blocked)
	}
	verify := func() map[string]any {
		r := env.Do(t, "GET", "/api/redact/log/verify", nil, bearer(key)...)
		if r.Status != 200 {
			t.Fatalf("%d %s", r.Status, r.Body)
		}
		return r.JSON(t)
	}
	if v := verify(); v["valid"] != true || v["entries"] != float64(2) {
		t.Fatalf("%v", v)
	}
	conn, err := pgx.Connect(context.Background(), env.Config.Database.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(context.Background(), `UPDATE redaction_log SET counts = '{"EMAIL":0}' WHERE account_id = $1 AND seq = 1`, acct); err != nil {
		t.Fatal(err)
	}
	if v := verify(); v["valid"] != false || v["brokenAt"] != float64(1) {
		t.Fatalf("after edit %v", v)
	}
}
