package frontend

import (
	"errors"
	"net/http"
	"net/url"

	"github.com/gin-gonic/gin"

	"conduit/frontend/pages"
	"conduit/internal/errs"
	"conduit/internal/humans"
	"conduit/internal/oauth"
)

// The OAuth endpoints of the tool server's authorization server
// (docs/oauth.md). The protocol rules are internal/oauth's (on ory/fosite);
// here they are mounted, and the consent page is rendered for a signed-in
// human. The JSON endpoints answer in OAuth's own shapes (RFC 6749 §5.2).

// maxForm bounds an OAuth or sign-in form body.
const maxForm = 64 << 10

func (s *Server) mountOAuth(r *gin.Engine) {
	// Metadata, registration, token and revocation are called by clients,
	// some of them in browsers (the MCP Inspector): open to every origin,
	// which is safe because none of them reads a cookie.
	api := r.Group("", useShape(shapeOAuth), publicCORS, checkInput)
	for _, p := range []string{oauth.ServerMetadataPath, oauth.ResourceMetadataPath, oauth.ResourceMetadataPath + oauth.ResourcePath} {
		api.OPTIONS(p, preflight)
	}
	api.GET(oauth.ServerMetadataPath, s.serverMetadata)
	api.GET(oauth.ResourceMetadataPath, s.resourceMetadata)
	api.GET(oauth.ResourceMetadataPath+oauth.ResourcePath, s.resourceMetadata)
	for _, p := range []string{oauth.RegisterPath, oauth.TokenPath, oauth.RevokePath} {
		api.OPTIONS(p, preflight)
	}
	api.POST(oauth.RegisterPath, s.oauthOn, s.registerLimit, s.registerClient)
	api.POST(oauth.TokenPath, s.oauthOn, s.token)
	api.POST(oauth.RevokePath, s.oauthOn, s.revoke)

	// The authorization endpoint is a page for a human, behind sign-in.
	page := r.Group("", useShape(shapeOAuth), checkInput, s.oauthOn)
	page.GET(oauth.AuthorizePath, s.authorize)
	page.POST(oauth.AuthorizePath, s.decide)
}

// oauthOn answers 503 while OAuth is not configured (oauth.secret).
func (s *Server) oauthOn(c *gin.Context) {
	if s.deps.OAuth == nil {
		fail(c, &errs.Error{Kind: errs.Unavailable, Code: "temporarily_unavailable",
			Msg: "OAuth is not configured on this deployment (oauth.secret); use an API key"})
		return
	}
	c.Next()
}

func publicCORS(c *gin.Context) {
	c.Header("Access-Control-Allow-Origin", "*")
	c.Next()
}

func preflight(c *gin.Context) {
	c.Header("Access-Control-Allow-Methods", "GET, POST, OPTIONS")
	c.Header("Access-Control-Allow-Headers", "Content-Type, Authorization, MCP-Protocol-Version")
	c.Header("Access-Control-Max-Age", "600")
	c.Status(http.StatusNoContent)
}

// serverMetadata: GET /.well-known/oauth-authorization-server (RFC 8414).
func (s *Server) serverMetadata(c *gin.Context) {
	if s.deps.OAuth == nil {
		s.oauthOn(c)
		return
	}
	c.Header("Cache-Control", "public, max-age=300")
	c.JSON(http.StatusOK, s.deps.OAuth.ServerMetadata())
}

// resourceMetadata: GET /.well-known/oauth-protected-resource[/api/mcp]
// (RFC 9728): the tool server and the authorization server it trusts.
func (s *Server) resourceMetadata(c *gin.Context) {
	if s.deps.OAuth == nil {
		s.oauthOn(c)
		return
	}
	c.Header("Cache-Control", "public, max-age=300")
	c.JSON(http.StatusOK, s.deps.OAuth.ResourceMetadata())
}

// registerClient: POST /oauth/register (RFC 7591) → 201 with the client.
func (s *Server) registerClient(c *gin.Context) {
	body, err := readBody(c)
	if err != nil {
		fail(c, err)
		return
	}
	resp, err := s.deps.OAuth.Register(c.Request.Context(), body)
	if err != nil {
		// A refusal is Invalid with RFC 7591's code (internal/oauth).
		fail(c, err)
		return
	}
	c.JSON(http.StatusCreated, resp)
}

// token: POST /oauth/token.
func (s *Server) token(c *gin.Context) {
	c.Request.Body = http.MaxBytesReader(c.Writer, c.Request.Body, maxForm)
	s.deps.OAuth.Token(c.Request.Context(), c.Writer, c.Request)
	c.Abort()
}

// revoke: POST /oauth/revoke (RFC 7009).
func (s *Server) revoke(c *gin.Context) {
	c.Request.Body = http.MaxBytesReader(c.Writer, c.Request.Body, maxForm)
	s.deps.OAuth.Revoke(c.Request.Context(), c.Writer, c.Request)
	c.Abort()
}

// authorize: GET /oauth/authorize. A bad request goes back to the client
// (or is answered here when even its redirect URI is unknown); a good one
// needs a signed-in human, who is sent to sign in first and then shown
// the consent page.
func (s *Server) authorize(c *gin.Context) {
	ctx := c.Request.Context()
	req, err := s.deps.OAuth.ParseAuthorize(ctx, c.Request)
	if err != nil {
		s.deps.OAuth.WriteError(ctx, c.Writer, req, err)
		c.Abort()
		return
	}
	h, session, err := s.signedIn(c)
	if errors.Is(err, humans.ErrNoSession) {
		c.Redirect(http.StatusSeeOther, SignInPath+"?next="+url.QueryEscape(c.Request.URL.RequestURI()))
		return
	}
	if err != nil {
		fail(c, err)
		return
	}
	grant, lacking, unused := req.Grantable(h.Principal())
	v := pages.ConsentView{
		ClientName: req.ClientName, ClientID: req.ClientID, RedirectHost: req.RedirectHost,
		Email: h.Login.Email, AccountID: h.Login.AccountID, CSRF: humans.CSRFToken(session),
		AccessTTL: s.deps.Config.OAuth.AccessTokenTTL.String(), Action: oauth.AuthorizePath,
	}
	// Each grantable scope is a box the human may untick (the tool
	// server's defaults are ticked; anything more they tick themselves).
	for _, sc := range grant {
		v.Grant = append(v.Grant, pages.ScopeView{Name: sc, Text: oauth.ScopeText(sc), Checked: oauth.Ticked(sc)})
	}
	for _, sc := range lacking {
		v.Lacking = append(v.Lacking, pages.ScopeView{Name: sc, Text: oauth.ScopeText(sc)})
	}
	for _, sc := range unused {
		v.Unused = append(v.Unused, pages.ScopeView{Name: sc, Text: oauth.ScopeText(sc)})
	}
	for k, vals := range req.Params {
		for _, val := range vals {
			v.Params = append(v.Params, pages.ParamView{Name: k, Value: val})
		}
	}
	renderPage(c, http.StatusOK, pages.Consent, v)
}

// decide: POST /oauth/authorize, the consent form. Same-origin, signed
// in, with the session's CSRF token; then approve → the code goes to the
// client for the scopes left ticked (grant=…), deny → error=access_denied.
func (s *Server) decide(c *gin.Context) {
	c.Request.Body = http.MaxBytesReader(c.Writer, c.Request.Body, maxForm)
	if err := s.crossOrigin.Check(c.Request); err != nil {
		failPage(c, "This form came from another site", errs.Forbiddenf("Go back to the application you were connecting and start again."))
		return
	}
	h, session, err := s.signedIn(c)
	if errors.Is(err, humans.ErrNoSession) {
		failPage(c, "You are signed out", errs.Unauthorizedf("Your sign-in ended before you answered. Go back to the application you were connecting and start again."))
		return
	}
	if err != nil {
		fail(c, err)
		return
	}
	if !humans.CheckCSRF(session, c.PostForm("csrf")) {
		failPage(c, "This form has expired", errs.Forbiddenf("Go back to the application you were connecting and start again."))
		return
	}
	ctx := c.Request.Context()
	req, err := s.deps.OAuth.ParseAuthorize(ctx, c.Request)
	if err != nil {
		s.deps.OAuth.WriteError(ctx, c.Writer, req, err)
		c.Abort()
		return
	}
	switch c.PostForm("decision") {
	case "approve":
		s.deps.OAuth.Approve(ctx, c.Writer, req, h.Principal(), h.Login.ID, c.PostFormArray("grant"))
	case "deny":
		s.deps.OAuth.Deny(ctx, c.Writer, req)
	default:
		failPage(c, "No answer given", errs.Invalidf("Choose Allow or Deny."))
		return
	}
	c.Abort()
}
