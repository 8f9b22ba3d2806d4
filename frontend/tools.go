package frontend

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"conduit/internal/accounts"
	"conduit/internal/errs"
	"conduit/internal/logging"
	"conduit/internal/tools"
)

// The tool server (spec §4.15, MCP over streamable HTTP at /api/mcp) and
// its HTTP mirror (§4.14, /api/v1/tools). Both serve the tools of
// internal/tools, the same Go functions; docs/mcp.md describes them.

const (
	// MCPPath is the tool server's address.
	MCPPath = "/api/mcp"
	// ToolsPath is the mirror's: GET lists the tools, POST …/{name} calls one.
	ToolsPath = "/api/v1/tools"
	// mcpSessionIdle closes an MCP session nobody has used for this long.
	mcpSessionIdle = 30 * time.Minute
	// toolServerVersion is the interface version the server reports.
	toolServerVersion = "3.0.0"
)

// toolServer is the MCP side: the SDK's streamable HTTP handlers over one
// server holding every tool. Clients on the sessionless protocol revision
// (2026-07-28 and later: every request carries its protocol version) are
// served statelessly, as that revision requires; earlier clients (through
// 2025-11-25) open a session with initialize and keep it, as theirs does.
// Both answer in JSON or in SSE (progress notifications).
type toolServer struct {
	server    *mcp.Server
	sessions  http.Handler
	stateless http.Handler
}

// sessionlessRevision is the first protocol revision without sessions.
const sessionlessRevision = "2026-07-28"

type principalCtxKey struct{}

func (s *Server) newToolServer(d Deps) {
	s.tools = tools.New(tools.Deps{
		Pipelines: s.pipes, Runs: s.runs, Accounts: d.Accounts, Payments: d.Payments, Library: d.Library, Store: d.Store,
		BaseURL: d.Config.BaseURL(), TopUpURL: s.topUpURL(),
		Internal: func(ctx context.Context, tool string, err error) {
			logging.From(ctx).Error("tool failed", "tool", tool, "err", err)
		},
	})
	server := s.tools.MCPServer(toolServerVersion)
	opts := mcp.StreamableHTTPOptions{
		SessionTimeout: mcpSessionIdle,
		// Every request carries its bearer credential, which a page that
		// rebinds a DNS name to the loopback cannot add; the Host check
		// would only refuse deployments behind a proxy on the loopback.
		DisableLocalhostProtection: true,
		MaxRequestBodyBytes:        maxBody,
		Logger:                     d.Log.With("component", "mcp"),
	}
	sessions := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, &opts)
	statelessOpts := opts
	// A client that hangs up cancels its call (a waiting run_pipeline
	// stops waiting; the run itself goes on).
	statelessOpts.Stateless, statelessOpts.PropagateRequestCancellation = true, true
	stateless := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, &statelessOpts)
	// authenticate has already resolved this request's caller; the SDK's
	// bearer middleware hands it on as the request's TokenInfo, which binds
	// a new session to the account and reaches every tool call.
	verify := func(ctx context.Context, _ string, r *http.Request) (*auth.TokenInfo, error) {
		p, ok := r.Context().Value(principalCtxKey{}).(accounts.Principal)
		if !ok {
			return nil, auth.ErrInvalidToken
		}
		return tools.TokenInfo(p), nil
	}
	bearer := auth.RequireBearerToken(verify, &auth.RequireBearerTokenOptions{AllowMissingExpiration: true})
	s.mcp = &toolServer{server: server, sessions: bearer(sessions), stateless: bearer(stateless)}
}

// serveMCP: GET, POST and DELETE /api/mcp, as the authenticated caller.
// A session id opened by another account is refused (403); within a
// session, every request acts with its own credentials and scopes.
func (s *Server) serveMCP(c *gin.Context) {
	// The body is read here, within maxBody, so that one over it is a 413
	// in this endpoint's error shape with the security headers (the SDK's
	// own limit answers in text/plain); the SDK reads it from memory.
	if c.Request.Method == http.MethodPost {
		body, err := io.ReadAll(http.MaxBytesReader(c.Writer, c.Request.Body, maxBody))
		if err != nil {
			fail(c, badJSON(err))
			return
		}
		c.Request.Body = io.NopCloser(bytes.NewReader(body))
	}
	ctx := context.WithValue(c.Request.Context(), principalCtxKey{}, principal(c))
	h := s.mcp.sessions
	if c.Request.Method == http.MethodPost && c.GetHeader("Mcp-Session-Id") == "" && c.GetHeader("Mcp-Protocol-Version") >= sessionlessRevision {
		h = s.mcp.stateless
	}
	h.ServeHTTP(c.Writer, c.Request.WithContext(ctx))
}

// closeSessions ends every open MCP session, so their streams end and a
// shutdown does not wait for them.
func (t *toolServer) closeSessions() {
	for ss := range t.server.Sessions() {
		_ = ss.Close()
	}
}

// listTools: GET /api/v1/tools — every tool with its name, title,
// description, input and output schemas and annotations, as tools/list
// shows them.
func (s *Server) listTools(c *gin.Context) {
	list := s.tools.Tools()
	defs := make([]*mcp.Tool, len(list))
	for i, t := range list {
		defs[i] = t.Def()
	}
	c.JSON(http.StatusOK, gin.H{"tools": defs})
}

// callTool: POST /api/v1/tools/{name} with the tool's arguments as the
// body; the answer is the tool's structured result.
func (s *Server) callTool(c *gin.Context) {
	t, ok := s.tools.Lookup(c.Param("name"))
	if !ok {
		fail(c, errs.NotFoundf("there is no tool named %q; GET %s lists them", c.Param("name"), ToolsPath))
		return
	}
	body, err := readBody(c)
	if err != nil {
		fail(c, err)
		return
	}
	out, err := s.tools.Invoke(c.Request.Context(), t, principal(c), body)
	if err != nil {
		fail(c, err)
		return
	}
	c.JSON(http.StatusOK, out)
}

// toolPreflight answers a browser's CORS preflight for the tool routes
// (the answer's Allow-Origin comes from Server.challenged).
func toolPreflight(c *gin.Context) {
	c.Header("Access-Control-Allow-Methods", "GET, POST, DELETE, OPTIONS")
	c.Header("Access-Control-Allow-Headers", "Authorization, Content-Type, Accept, Mcp-Session-Id, MCP-Protocol-Version, Last-Event-ID")
	c.Header("Access-Control-Max-Age", "600")
	c.Status(http.StatusNoContent)
}
