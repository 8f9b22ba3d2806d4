package frontend_test

import (
	"net/http"
	"strings"
	"testing"
)

// A publish may say what the version changes: {note} is kept with the
// version and listed with it; a publish without a body still works, and
// a note over 500 characters is refused with nothing published.
func TestPublishKeepsTheVersionNote(t *testing.T) {
	_, key := env.NewAccount(t)
	id := createPipeline(t, key, echoGraph("{{question}}", "local-echo"))
	publish(t, key, id)
	if p := wantStatus(t, do(t, "POST", "/api/pipelines/"+id+"/publish", key, map[string]any{"note": "Answers in French now."}), http.StatusOK); p["servingVersion"] != float64(2) {
		t.Fatalf("publish with a note: %v", p)
	}
	bad := wantStatus(t, do(t, "POST", "/api/pipelines/"+id+"/publish", key, map[string]any{"note": strings.Repeat("é", 501)}), http.StatusBadRequest)
	if !strings.Contains(bad["error"].(string), "note must be at most 500 characters") {
		t.Errorf("a long note: %v", bad)
	}
	wantStatus(t, do(t, "POST", "/api/pipelines/"+id+"/publish", key, map[string]any{"notes": "typo"}), http.StatusBadRequest)

	vs := wantStatus(t, do(t, "GET", "/api/pipelines/"+id+"/versions", key, nil), http.StatusOK)["versions"].([]any)
	if len(vs) != 2 {
		t.Fatalf("%d versions after two publishes and two refusals: %v", len(vs), vs)
	}
	if v2, v1 := vs[0].(map[string]any), vs[1].(map[string]any); v2["note"] != "Answers in French now." || v1["note"] != nil {
		t.Errorf("versions: %v", vs)
	}
	if v := wantStatus(t, do(t, "GET", "/api/pipelines/"+id+"/versions/2", key, nil), http.StatusOK); v["note"] != "Answers in French now." {
		t.Errorf("version 2: %v", v)
	}
}
