// Package tools defines the tools AI agents drive the platform with: each
// tool is one Go function with typed arguments and a typed result, whose
// JSON Schemas are derived from those types. The same functions serve the
// MCP server (/api/mcp, through the official Go SDK's mcp.AddTool) and the
// HTTP mirror (POST /api/v1/tools/{name}); a tool never knows which one
// called it. Tools hold no business rules of their own: they call the
// domain services (internal/pipelines, internal/runs, internal/accounts,
// internal/payments) that the REST handlers call too.
//
// Adding a tool: write a function
//
//	func (t *toolset) listMedia(ctx context.Context, c *Call, in ListMediaArgs) (MediaList, error)
//
// with argument and result structs (json tags name the fields, a
// `jsonschema:"…"` tag describes one for the model; omitempty makes an
// argument optional), and register it in New with Add and its Meta (name,
// description written for a model, scope, annotations). Return domain
// errors (internal/errs): the MCP server makes them tool errors with the
// sentence, the mirror the matching HTTP status.
package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"conduit/internal/accounts"
	"conduit/internal/errs"
	"conduit/internal/money"
	"conduit/internal/pgtext"
	"conduit/internal/store"
)

// Meta describes a tool.
type Meta struct {
	// Name is the tool's stable name (docs/mcp.md lists every one).
	Name  string
	Title string
	// Description is written for a model: what the tool does, when to use
	// it, what it answers.
	Description string
	// Scope is the API key scope the caller needs; empty means any key of
	// the account.
	Scope string
	// ReadOnly: changes nothing. Destructive: may overwrite or remove
	// something (otherwise it only adds). Idempotent: calling it again with
	// the same arguments changes nothing more. OpenWorld: reaches outside
	// the platform (model providers).
	ReadOnly, Destructive, Idempotent, OpenWorld bool
	// Refine adjusts the derived input schema (ranges, enums) where Go
	// types cannot say it.
	Refine func(input *jsonschema.Schema)
}

// Call is one invocation of a tool: who calls, and how it reports progress.
type Call struct {
	Principal accounts.Principal
	// progress sends notifications/progress; nil when the caller asked for
	// none (and on the HTTP mirror).
	progress func(ctx context.Context, done, total float64, message string)
}

// Progress reports how far a long tool has come, when the caller listens.
func (c *Call) Progress(ctx context.Context, done, total float64, message string) {
	if c.progress != nil {
		c.progress(ctx, done, total, message)
	}
}

// Tool is a registered tool.
type Tool struct {
	Meta
	// def is the tool as tools/list and GET /api/v1/tools show it.
	def   *mcp.Tool
	input *jsonschema.Resolved
	// addTo registers the tool on an MCP server (mcp.AddTool, typed).
	addTo func(*mcp.Server, *Registry)
	// invoke runs the tool on JSON arguments (the mirror).
	invoke func(ctx context.Context, c *Call, args any) (any, error)
}

// Def is the tool's definition: name, title, description, input and
// output schemas, annotations.
func (t *Tool) Def() *mcp.Tool { return t.def }

// Registry holds the tools, in the order they were added.
type Registry struct {
	tools []*Tool
	// internal is told about failures that are not the caller's (they are
	// answered as "internal error" without detail).
	internal func(ctx context.Context, tool string, err error)
}

// Tools lists the registered tools.
func (r *Registry) Tools() []*Tool { return slices.Clone(r.tools) }

// Lookup finds a tool by name.
func (r *Registry) Lookup(name string) (*Tool, bool) {
	for _, t := range r.tools {
		if t.Name == name {
			return t, true
		}
	}
	return nil, false
}

// schemaOptions map the types whose JSON is not what their Go kind says.
var schemaOptions = &jsonschema.ForOptions{TypeSchemas: map[reflect.Type]*jsonschema.Schema{
	// Money is an exact JSON number of USD at the wire.
	reflect.TypeFor[money.Micros](): {Type: "number"},
	// Raw JSON fields carry pipeline graphs.
	reflect.TypeFor[json.RawMessage](): {Type: "object", Description: "a pipeline graph: {nodes: [...], edges: [...]} (docs/pipelines.md)"},
}}

func schemaFor[T any]() *jsonschema.Schema {
	s, err := jsonschema.For[T](schemaOptions)
	if err != nil {
		panic(fmt.Sprintf("tools: schema of %v: %v", reflect.TypeFor[T](), err))
	}
	return s
}

// Add registers fn as a tool. Its input schema is derived from In, its
// output schema from Out (both structs).
func Add[In, Out any](r *Registry, m Meta, fn func(context.Context, *Call, In) (Out, error)) {
	in, out := schemaFor[In](), schemaFor[Out]()
	if m.Refine != nil {
		m.Refine(in)
	}
	resolved, err := in.Resolve(nil)
	if err != nil {
		panic(fmt.Sprintf("tools: %s: input schema: %v", m.Name, err))
	}
	def := &mcp.Tool{
		Name: m.Name, Title: m.Title, Description: m.Description, InputSchema: in, OutputSchema: out,
		Annotations: &mcp.ToolAnnotations{Title: m.Title, ReadOnlyHint: m.ReadOnly, DestructiveHint: &m.Destructive,
			IdempotentHint: m.Idempotent, OpenWorldHint: &m.OpenWorld},
	}
	t := &Tool{Meta: m, def: def, input: resolved}
	t.addTo = func(s *mcp.Server, r *Registry) {
		mcp.AddTool(s, def, func(ctx context.Context, req *mcp.CallToolRequest, args In) (*mcp.CallToolResult, Out, error) {
			var zero Out
			c, err := callOf(req)
			if err == nil {
				err = checkStorable(req.Params.Arguments)
			}
			if err == nil {
				err = authorize(t, c)
			}
			if err != nil {
				return nil, zero, r.toolError(ctx, t, err)
			}
			res, err := fn(ctx, c, args)
			if err != nil {
				return nil, zero, r.toolError(ctx, t, err)
			}
			return nil, res, nil
		})
	}
	t.invoke = func(ctx context.Context, c *Call, args any) (any, error) {
		var in In
		if err := remarshal(args, &in); err != nil {
			return nil, errs.Invalidf("invalid arguments for %s: %v", t.Name, err)
		}
		return fn(ctx, c, in)
	}
	r.tools = append(r.tools, t)
}

// Invoke runs a tool for the HTTP mirror: args is the JSON body. Bad
// arguments are an Invalid error naming the field, a missing scope a
// Forbidden one; what the tool returns is returned as it is.
func (r *Registry) Invoke(ctx context.Context, t *Tool, p accounts.Principal, args []byte) (any, error) {
	c := &Call{Principal: p}
	if err := authorize(t, c); err != nil {
		return nil, err
	}
	if err := checkStorable(args); err != nil {
		return nil, err
	}
	if len(bytes.TrimSpace(args)) == 0 {
		args = []byte("{}") // no body: no arguments
	}
	var obj map[string]any
	dec := json.NewDecoder(bytes.NewReader(args))
	dec.UseNumber()
	if err := dec.Decode(&obj); err != nil || obj == nil || dec.More() {
		return nil, errs.Invalidf("the request body must be one JSON object: the arguments of %s (send {} for none)", t.Name)
	}
	if err := t.input.Validate(jsonValues(obj)); err != nil {
		return nil, errs.Invalidf("invalid arguments for %s: %s", t.Name, explain(err))
	}
	return t.invoke(ctx, c, obj)
}

// authorize refuses a caller without the tool's scope.
func authorize(t *Tool, c *Call) error {
	if t.Scope != "" && !c.Principal.Has(t.Scope) {
		return &errs.Error{Kind: errs.Forbidden, Msg: fmt.Sprintf("this API key lacks the %s permission, which %s needs; use a key (or connection) that holds it", t.Scope, t.Name),
			Extra: map[string]any{"missingPermissions": []string{t.Scope}}}
	}
	return nil
}

// checkStorable refuses arguments PostgreSQL could not store (NUL
// characters, invalid UTF-8), as every JSON endpoint does.
func checkStorable(raw []byte) error {
	if len(raw) == 0 {
		return nil
	}
	if why := pgtext.JSONProblem(raw); why != "" {
		return errs.Invalidf("the arguments %s; they cannot be stored", why)
	}
	return nil
}

// jsonValues turns json.Number into float64, the form the validator reads.
func jsonValues(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			x[k] = jsonValues(e)
		}
	case []any:
		for i, e := range x {
			x[i] = jsonValues(e)
		}
	case json.Number:
		if f, err := x.Float64(); err == nil {
			return f
		}
	}
	return v
}

// remarshal decodes a validated argument object into its Go type.
func remarshal(args any, into any) error {
	b, err := json.Marshal(args)
	if err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	return dec.Decode(into)
}

// explain makes a schema validation error name the argument it is about:
// "validating /properties/name: type: …" becomes "name: type: …".
func explain(err error) string {
	msg := err.Error()
	for _, p := range []string{"validating root: ", "validating "} {
		msg = strings.TrimPrefix(msg, p)
	}
	msg = strings.ReplaceAll(msg, "/properties/", "/")
	return strings.TrimPrefix(msg, "/")
}

// toolError is the tool error the MCP server answers for err: one
// sentence saying what went wrong and what to do.
func (r *Registry) toolError(ctx context.Context, t *Tool, err error) error {
	e, ok := errs.As(err)
	if !ok {
		if store.Unavailable(err) {
			return fmt.Errorf("%s cannot answer now: the service's database is unavailable; nothing you sent was wrong, try again shortly", t.Name)
		}
		if r.internal != nil {
			r.internal(ctx, t.Name, err)
		}
		return fmt.Errorf("internal error in %s; nothing you sent was wrong, try again shortly", t.Name)
	}
	msg := e.Msg
	if problems, ok := e.Extra["problems"]; ok {
		b, _ := json.Marshal(problems)
		msg += "; problems: " + string(b)
	}
	if e.Kind == errs.PaymentRequired {
		msg += fmt.Sprintf(" (a human can buy credit at %v)", e.Extra["topUpUrl"])
	}
	if e.Kind == errs.Unavailable && e.RetryAfter > 0 {
		msg += fmt.Sprintf(" (retry after %s)", e.RetryAfter)
	}
	return errors.New(msg)
}

// principalKey carries the authenticated caller into an MCP request.
const principalKey = "conduit.principal"

// callOf is the Call of an MCP request: its own principal, which the
// HTTP layer authenticated for this very request (TokenInfo.Extra), and
// progress notifications when the client sent a progress token.
func callOf(req *mcp.CallToolRequest) (*Call, error) {
	extra := req.GetExtra()
	if extra == nil || extra.TokenInfo == nil {
		return nil, errs.Forbiddenf("this request carries no credentials; connect with Authorization: Bearer <key>")
	}
	p, ok := extra.TokenInfo.Extra[principalKey].(accounts.Principal)
	if !ok {
		return nil, errs.Forbiddenf("this request carries no credentials; connect with Authorization: Bearer <key>")
	}
	c := &Call{Principal: p}
	if token := req.Params.GetProgressToken(); token != nil {
		c.progress = func(ctx context.Context, done, total float64, message string) {
			_ = req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: token, Progress: done, Total: total, Message: message})
		}
	}
	return c, nil
}
