package tools

import (
	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"conduit/internal/accounts"
)

// instructions tell a connected model what the server is for.
const instructions = `Conduit runs AI pipelines: graphs of input, prompt/transform, model, guardrail and output nodes.
Author a pipeline (create_pipeline, update_draft, validate_draft), publish it (publish_pipeline), then run it
(run_pipeline with waitSeconds to wait for the result) and inspect runs (get_run, list_runs). Runs are paid from the
account's prepaid USD credit: estimate_run_cost prices a run before it starts, get_credit_balance shows what is left.`

// MCPServer builds an MCP server holding every tool of r.
func (r *Registry) MCPServer(version string) *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "conduit", Title: "Conduit", Version: version}, &mcp.ServerOptions{Instructions: instructions})
	for _, t := range r.tools {
		t.addTo(s, r)
	}
	return s
}

// TokenInfo is how the HTTP layer hands the caller it authenticated for
// one request to the MCP server (auth.RequireBearerToken puts it in the
// request's context): the SDK binds a session to its UserID, the account,
// so another account's requests cannot use the session, and attaches it to
// every tool call of that request, so each call acts with the credentials
// that came with it.
func TokenInfo(p accounts.Principal) *auth.TokenInfo {
	return &auth.TokenInfo{UserID: p.AccountID, Scopes: p.Scopes, Extra: map[string]any{principalKey: p}}
}
