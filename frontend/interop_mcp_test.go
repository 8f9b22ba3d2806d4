package frontend_test

import (
	"bytes"
	"encoding/json"
	"os/exec"
	"strings"
	"sync"
	"testing"
)

var (
	mcpNpmOnce sync.Once
	mcpNpmErr  error
)

// officialMCPClient installs the official TypeScript MCP SDK of
// interop/mcp (npm ci, from its package-lock.json), once per test binary.
func officialMCPClient(t *testing.T) {
	t.Helper()
	mcpNpmOnce.Do(func() {
		cmd := exec.Command("npm", "ci", "--no-audit", "--no-fund", "--silent")
		cmd.Dir = "../interop/mcp"
		if out, err := cmd.CombinedOutput(); err != nil {
			mcpNpmErr = err
			t.Logf("npm ci: %s", out)
		}
	})
	if mcpNpmErr != nil {
		t.Fatalf("installing the official MCP SDK failed: %v", mcpNpmErr)
	}
}

// The official TypeScript MCP SDK client, unmodified
// (interop/mcp/drive.mjs), connects to /api/mcp over streamable HTTP with
// a bearer API key, lists the tools, authors, publishes and runs a
// pipeline with progress, and reads the run back; the SDK itself checks
// every structured result against the tool's output schema.
func TestOfficialTypeScriptMCPClient(t *testing.T) {
	officialMCPClient(t)
	_, key := env.NewAccount(t)
	graph, _ := json.Marshal(chainGraph("Be brief."))
	cmd := exec.Command("node", "drive.mjs", env.URL+"/api/mcp", key, string(graph))
	cmd.Dir = "../interop/mcp"
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("drive.mjs: %v\n%s%s", err, out, stderr.Bytes())
	}
	var res struct {
		ProtocolVersion string `json:"protocolVersion"`
		SessionID       string `json:"sessionId"`
		Tools           []struct {
			Name      string `json:"name"`
			HasInput  bool   `json:"hasInput"`
			HasOutput bool   `json:"hasOutput"`
		} `json:"tools"`
		Created   map[string]any   `json:"created"`
		Published map[string]any   `json:"published"`
		Run       map[string]any   `json:"run"`
		Progress  []map[string]any `json:"progress"`
		Got       map[string]any   `json:"got"`
		Bad       struct {
			IsError bool   `json:"isError"`
			Text    string `json:"text"`
		} `json:"bad"`
	}
	if err := json.Unmarshal(bytes.TrimSpace(out), &res); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if res.SessionID == "" || res.ProtocolVersion == "" {
		t.Errorf("no session (%q) or protocol version (%q)", res.SessionID, res.ProtocolVersion)
	}
	if len(res.Tools) != 19 {
		t.Errorf("%d tools", len(res.Tools))
	}
	for _, tool := range res.Tools {
		if !tool.HasInput || !tool.HasOutput {
			t.Errorf("tool %s: schemas missing", tool.Name)
		}
	}
	if res.Created["id"] == nil || res.Published["servingVersion"] != float64(1) {
		t.Fatalf("created %v, published %v", res.Created, res.Published)
	}
	if res.Run["status"] != "success" || res.Run["outputs"].(map[string]any)["answer"] != "Echo: hello from TypeScript, echoed back slowly one token at a time" {
		t.Fatalf("run %v", res.Run)
	}
	if len(res.Progress) < 2 || res.Progress[0]["total"] != float64(5) {
		t.Fatalf("progress %v", res.Progress)
	}
	if res.Got["runId"] != res.Run["runId"] || len(res.Got["nodes"].([]any)) != 5 || res.Got["usage"] == nil {
		t.Fatalf("get_run %v", res.Got)
	}
	if !res.Bad.IsError || !strings.Contains(res.Bad.Text, "question") {
		t.Fatalf("bad call %+v", res.Bad)
	}
	t.Logf("TypeScript SDK: protocol %s, session %s, %d progress notifications", res.ProtocolVersion, res.SessionID, len(res.Progress))
}
