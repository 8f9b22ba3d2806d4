package frontend_test

import (
	"bytes"
	"context"
	"net/http"
	"strings"
	"testing"

	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/api/enums/v1"
	"google.golang.org/protobuf/encoding/protojson"

	"conduit/frontend"
	"conduit/internal/codec"
	"conduit/internal/money"
	"conduit/workflows"
)

// #14 item 10: what a workflow's history keeps of a purchase — the payment
// payload, the text — is sealed by the payload codec, and the codec
// endpoint the Temporal UI calls opens it for pages on this machine.
func TestHistoryPayloadsAreSealed(t *testing.T) {
	w := newWallet(t, money.USD)
	text := "A secret sentence only the buyer should read."
	rec := wantStatus(t, buy(t, frontend.SpeechPath, w, map[string]any{"text": text}), http.StatusOK)
	it := env.Platform.Temporal.GetWorkflowHistory(context.Background(), workflows.RenderWorkflowID(rec["runId"].(string)), "", false, enums.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	ev, err := it.Next()
	if err != nil {
		t.Fatal(err)
	}
	input := ev.GetWorkflowExecutionStartedEventAttributes().GetInput()
	raw, _ := protojson.Marshal(input)
	if len(input.GetPayloads()) == 0 || string(input.Payloads[0].Metadata["encoding"]) != codec.Encoding ||
		bytes.Contains(raw, []byte("secret sentence")) || strings.Contains(strings.ToLower(string(raw)), strings.ToLower(w.addr.Hex()[2:])) {
		t.Fatalf("the workflow input is in the clear: %s", raw)
	}

	// The UI's codec endpoint opens it for a page on this machine…
	do := func(origin string) *http.Response {
		req, _ := http.NewRequest("POST", env.URL+frontend.CodecPath+"/decode", bytes.NewReader(raw))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-Namespace", "default")
		req.Header.Set("Origin", origin)
		resp, err := env.HTTP.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	resp := do("http://127.0.0.1:8233")
	var opened commonpb.Payloads
	var buf bytes.Buffer
	_, _ = buf.ReadFrom(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("Access-Control-Allow-Origin") != "http://127.0.0.1:8233" || protojson.Unmarshal(buf.Bytes(), &opened) != nil ||
		!strings.Contains(string(opened.Payloads[0].GetData()), "secret sentence") {
		t.Fatalf("%d %s", resp.StatusCode, buf.String())
	}
	// …and not for a page elsewhere.
	if resp := do("https://evil.example"); resp.StatusCode != http.StatusForbidden {
		t.Fatalf("a foreign page got %d", resp.StatusCode)
	}
}
