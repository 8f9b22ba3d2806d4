// Package frontend is the thin HTTP layer: the Gin router, its middleware
// and one file per API area. It parses, validates, starts or queries
// workflows and writes the spec's exact wire format.
package frontend

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"strings"

	"github.com/gin-gonic/gin"
	"github.com/ulule/limiter/v3"
	"go.temporal.io/sdk/client"

	"conduit/internal/accounts"
	"conduit/internal/apikey"
	"conduit/internal/checkout"
	"conduit/internal/config"
	"conduit/internal/errs"
	"conduit/internal/humans"
	"conduit/internal/kyc"
	"conduit/internal/library"
	"conduit/internal/models"
	"conduit/internal/oauth"
	"conduit/internal/paycall"
	"conduit/internal/payments"
	"conduit/internal/pipelines"
	"conduit/internal/quota"
	"conduit/internal/runs"
	"conduit/internal/store"
	"conduit/internal/telemetry"
	"conduit/internal/tools"
	"conduit/internal/topup"
	"conduit/internal/zkagg"
	"conduit/internal/zkpassport"
	"conduit/internal/zkverify"
)

// Deps are what the handlers need.
type Deps struct {
	Config   *config.Config
	Store    *store.Store
	Temporal client.Client
	Accounts *accounts.Service
	Catalog  *models.Catalog
	Deltas   *store.DeltaHub
	Payments *payments.Service
	Media    paycall.Media
	// Library is the media library (nil or off: its routes answer 503).
	Library *library.Service
	// OAuth is the tool server's authorization server; nil while OAuth is
	// not configured (its endpoints answer 503, API keys still work).
	OAuth *oauth.Provider
	// Humans signs people in (the consent page, the dashboard).
	Humans *humans.Service
	// Checkout sells credit packs by card (its routes answer 503 when
	// its provider is nil).
	Checkout *checkout.Service
	Log      *slog.Logger
	// Enclaves configures the enclave routes (off: they answer 503).
	Enclaves Enclaves
	// Redaction is the redaction proxies, their audit log and the PII
	// vault (redact.go; nil: their routes answer 503).
	Redaction *Redaction
	// DevTools mounts the dev-only routes (POST /dev/x402/mint). Only the
	// dev command and the test harness set it; the production binary never
	// does.
	DevTools bool
	// Usage are the sources of GET /api/account/usage beyond the counted
	// resources (enclaves, tasks, API keys, pipelines): the media
	// library's bytes plug in here (a quota.Source).
	Usage []quota.Source
	// ZKVerify is the zkVerify relay (nil: its routes answer 503).
	ZKVerify *zkverify.Service
	// KYC is KYC proofs (nil: their routes answer 503).
	KYC *kyc.Service
	// ZKAgg answers proof aggregations (zkagg.go; nil: 503).
	ZKAgg *zkagg.Service
	// ZKPassport runs zkPassport requests (zkpassport.go; nil: 503).
	ZKPassport *zkpassport.Service
}

// ChatPath is the chat-completions route.
const ChatPath = "/api/pipelines/:id/chat/completions"

// ModelsPath is OpenAI's models list beside ChatPath.
const ModelsPath = "/api/pipelines/:id/models"

// Server is the API server.
type Server struct {
	deps       Deps
	pipes      *pipelines.Service
	runs       *runs.Service
	topups     *topup.Service
	tools      *tools.Registry
	mcp        *toolServer
	router     *gin.Engine
	wallets    *limiter.Limiter
	payPerCall *paycall.Service
	// addresses is the per-address budget every paid route shares;
	// unpaidImages the smaller one of image fetches for video requests
	// without a payment.
	addresses    gin.HandlerFunc
	unpaidImages *limiter.Limiter
	// signins counts sign-in attempts per address and per email;
	// registerLimit bounds client registrations per address.
	signins       *limiter.Limiter
	registerLimit gin.HandlerFunc
	// crossOrigin refuses form posts from other sites.
	crossOrigin *http.CrossOriginProtection
	// spa is the dashboard app (spa.go).
	spa *spa
	// pingPostgres and pingTemporal are the readiness checks (health.go).
	pingPostgres, pingTemporal func(context.Context) error
}

func init() { gin.SetMode(gin.ReleaseMode) }

// New builds the router with every route of the API.
func New(d Deps) *Server {
	s := &Server{deps: d, pingPostgres: d.Store.Ping,
		pingTemporal: func(ctx context.Context) error {
			_, err := d.Temporal.CheckHealth(ctx, &client.CheckHealthRequest{})
			return err
		}}
	s.payPerCall = paycall.New(paycall.Service{Store: d.Store, Temporal: d.Temporal, Payments: d.Payments, Media: d.Media, BaseURL: d.Config.BaseURL(), Log: d.Log})
	s.pipes = &pipelines.Service{Store: d.Store, Catalog: d.Catalog, Library: d.Library, Limit: d.Config.Quota.Pipelines}
	s.runs = &runs.Service{Store: d.Store, Temporal: d.Temporal, Catalog: d.Catalog, Runs: d.Config.Runs, Library: d.Library,
		BaseURL: d.Config.BaseURL(), TopUpURL: s.topUpURL(), Deltas: d.Deltas}
	s.topups = &topup.Service{Payments: d.Payments, Accounts: d.Accounts, Store: d.Store, Temporal: d.Temporal, BaseURL: d.Config.BaseURL()}
	s.newToolServer(d)
	s.wallets = s.walletLimiter()
	s.addresses = s.addressLimiter()
	s.unpaidImages = s.unpaidImageLimiter()
	s.signins = s.signInLimiter()
	s.registerLimit = s.registrationLimiter()
	s.crossOrigin = http.NewCrossOriginProtection()
	r := gin.New()
	// The client address (per-address rate limits, the access log) is the
	// TCP peer, unless that peer is one of http.trusted_proxies: then its
	// X-Forwarded-For / X-Real-IP name the client. Gin walks the chain from
	// the right and stops at the first address that is not a trusted proxy.
	r.TrustedPlatform = ""
	r.ForwardedByClientIP = true
	r.RemoteIPHeaders = []string{"X-Forwarded-For", "X-Real-IP"}
	if err := r.SetTrustedProxies(d.Config.HTTP.Proxies()); err != nil {
		panic(err) // config.Validate refuses a malformed list
	}
	r.ContextWithFallback = true
	r.HandleMethodNotAllowed = true
	// A path with a trailing slash is an unknown path: a 404 in the error
	// shape with the security headers (NoRoute), not gin's bare 301, which
	// some clients follow as a GET without the body.
	r.RedirectTrailingSlash = false
	// The request's span first (the caller's traceparent continued, ours
	// answered), then its metrics, then its logger, which carries the
	// trace id (internal/telemetry).
	r.Use(telemetry.GinTrace(), telemetry.GinEcho(), telemetry.GinMetrics(), requestContext(d.Log), classifyWith(store.Classify), securityHeaders(d.Config.BaseURL()), connDeadlines(d.Config.HTTP.ReadTimeout, d.Config.HTTP.WriteTimeout), recovery(), s.challenged)
	r.NoRoute(func(c *gin.Context) {
		if s.spa.fallback(c) {
			return
		}
		msg := "no route for %s %s"
		if p := c.Request.URL.Path; len(p) > 1 && strings.HasSuffix(p, "/") {
			msg += " (paths take no trailing slash)"
		}
		writeError(c, errs.NotFoundf(msg, c.Request.Method, c.Request.URL.Path))
	})
	r.NoMethod(func(c *gin.Context) {
		writeError(c, errs.New(errs.MethodNotAllowed, "method %s is not allowed on %s", c.Request.Method, c.Request.URL.Path))
	})

	// Every route checks its path and query parameters at the edge
	// (checkInput), after its error shape is chosen: the plain shape here,
	// OpenAI's on chat completions below.
	edge := r.Group("", checkInput)
	edge.GET("/healthz", s.health)
	edge.GET("/livez", s.live)
	edge.GET("/api/zkpassport/keys", s.zkPassportKeys)
	edge.POST(payments.TopUpPath, s.paidRateLimit(), s.topUp)

	// Pay-per-call: the payment or the claim ticket is the credential.
	for _, k := range s.payPerCall.Kinds() {
		edge.GET(k.Path, s.getMedia(k.Name))
		edge.POST(k.Path, s.paidRateLimit(), s.postMedia(k.Name))
		edge.POST(k.Path+"/retry", s.paidRateLimit(), s.retryMedia(k.Name))
	}
	// Every challenge stores a nonce: the same per-address limit applies.
	edge.GET(PurchasesPath, s.paidRateLimit(), s.purchases)
	edge.GET(CreditsPagePath, s.creditsPage)
	edge.GET(FilesPath+"*key", s.serveFile)
	edge.HEAD(FilesPath+"*key", s.serveFile)
	if d.DevTools && d.Payments.Enabled() && d.Payments.Chain != nil {
		edge.POST(DevMintPath, s.devMint)
	}
	if d.DevTools && d.Config.Temporal.CodecKeys != "" {
		s.mountCodec(r)
	}

	// The dashboard app (docs/dashboard.md).
	s.mountDashboard(r)

	// Human sign-in and the OAuth authorization server (docs/oauth.md).
	edge.GET(SignInPath, s.signInPage)
	edge.POST(SignInPath, s.signIn)
	edge.POST(SignOutPath, s.signOut)
	s.mountOAuth(r)
	// The dashboard's session API (session.go).
	edge.GET(SessionPath, s.getSession)
	edge.POST(SessionPath, s.createSession)
	edge.DELETE(SessionPath, s.deleteSession)
	edge.POST(SignUpPath, s.signUp)
	edge.GET(accounts.VerifyPath, s.verifyEmail)
	if d.DevTools && d.Config.Mail.Sender == "mailbox" {
		edge.GET(MailboxPath, s.mailbox)
	}
	// Card payments for credit packs (checkout.go): the provider's webhook
	// (its signature is the credential) and the local TEST MODE checkout.
	edge.POST(StripeWebhookPath, s.stripeWebhook)
	edge.GET(checkout.LocalPagePath+":id", s.checkoutPage)
	edge.POST(checkout.LocalPagePath+":id", s.checkoutPay)
	edge.POST(CreditsCheckoutPath, s.creditsCheckout)

	// The route table: every /api route authenticates; each group names the
	// scope it needs (docs/accounts.md lists them).
	api := edge.Group("/api", s.authenticate)
	api.GET("/account/balance", s.balance)
	api.GET("/account/ledger", s.ledger)
	api.GET("/account/usage", s.usage)
	api.GET("/billing/packs", s.listPacks)
	api.POST("/billing/packs/checkout", s.openCheckout)
	api.GET("/catalog", requireScope(apikey.PipelinesRead), s.nodeCatalog)
	api.GET("/runs", requireScope(apikey.PipelinesRead), s.accountRuns)
	api.GET("/runs/:runId", requireScope(apikey.PipelinesRead), s.accountRun)
	api.POST("/redact/run", requireScope(apikey.RedactRun), s.redactRun)
	api.GET("/zkverify/aggregation/:aggregationId", s.getZKAggregation)
	api.POST("/zkpassport/request", s.createZKPassportRequest)
	api.POST("/zkpassport/verify", s.verifyZKPassport)
	api.GET("/zkpassport/verify", s.zkPassportStatus)

	keys := api.Group("/keys", requireScope(apikey.KeysManage))
	keys.POST("", s.createKey)
	keys.GET("", s.listKeys)
	keys.GET("/scopes", s.keyScopes)
	keys.GET("/:id", s.getKey)
	keys.PATCH("/:id", s.updateKey)
	keys.DELETE("/:id", s.deleteKey)

	pipes := api.Group("/pipelines")
	pipes.POST("", requireScope(apikey.PipelinesWrite), s.createPipeline)
	pipes.GET("", requireScope(apikey.PipelinesRead), s.listPipelines)
	one := pipes.Group("/:id", s.loadPipeline)
	one.GET("", requireScope(apikey.PipelinesRead), s.getPipeline)
	one.PUT("/draft", requireScope(apikey.PipelinesWrite), s.putDraft)
	one.POST("/publish", requireScope(apikey.PipelinesWrite), s.publish)
	one.POST("/rollback", requireScope(apikey.PipelinesWrite), s.rollback)
	one.GET("/versions", requireScope(apikey.PipelinesRead), s.listVersions)
	one.GET("/versions/:n", requireScope(apikey.PipelinesRead), s.getVersion)
	one.GET("/runs", requireScope(apikey.PipelinesRead), s.listRuns)
	one.POST("/invoke", requireScope(apikey.PipelinesRun), s.invoke)
	// The dashboard's Try it streams a run as chat completions do, signed
	// in by its session (with the CSRF token); the chat path itself takes
	// no cookie (auth.go, cookieAllowed).
	one.POST("/stream", requireScope(apikey.PipelinesRun), s.chatCompletions)
	one.GET("/invoke", requireScope(apikey.PipelinesRun), s.pollRun)

	// The media library (docs/media.md); another account's item or job is
	// a 404 like a missing one.
	lib := api.Group("/media")
	lib.GET("", requireScope(apikey.MediaRead), s.listMedia)
	lib.GET("/:id", requireScope(apikey.MediaRead), s.getMediaItem)
	lib.DELETE("/:id", requireScope(apikey.MediaWrite), s.deleteMediaItem)
	lib.GET("/jobs/:id", requireScope(apikey.MediaRead), s.getMediaJob)
	lib.POST("/import", requireScope(apikey.MediaWrite), s.importMedia)
	lib.POST("/assemble", requireScope(apikey.MediaWrite), s.assembleMedia)
	lib.POST("/edit", requireScope(apikey.MediaWrite), s.editMedia)
	s.mountEnclaves(api, requireScope(apikey.EnclavesRead), requireScope(apikey.EnclavesWrite), requireScope(apikey.LogsRead))
	s.mountAdmin(edge)
	s.mountTasks(api, requireScope(apikey.TasksRead), requireScope(apikey.TasksWrite))
	s.mountRedaction(r, api)
	s.mountZKVerify(api)
	s.mountKYC(edge, api)

	// The tool server and its mirror: each tool checks its own scope
	// (docs/mcp.md), so one connection can hold any mix.
	api.GET("/mcp", s.serveMCP)
	api.POST("/mcp", s.serveMCP)
	api.DELETE("/mcp", s.serveMCP)
	api.GET("/v1/tools", s.listTools)
	api.POST("/v1/tools/:name", s.callTool)

	// Cross-origin preflights for the tool server and its mirror carry no
	// credential, so they are answered before authentication.
	r.OPTIONS(MCPPath, toolPreflight)
	r.OPTIONS(ToolsPath, toolPreflight)
	r.OPTIONS(ToolsPath+"/:name", toolPreflight)

	// Chat completions speak OpenAI's error shape from the first check on.
	r.POST(ChatPath, useShape(shapeOpenAI), checkInput, s.authenticate,
		requireScope(apikey.PipelinesRun), s.loadPipeline, s.chatCompletions)
	for _, m := range []string{http.MethodGet, http.MethodHead, http.MethodPut, http.MethodPatch, http.MethodDelete} {
		r.Handle(m, ChatPath, useShape(shapeOpenAI), chatMethodNotAllowed)
	}
	// OpenAI-compatible tools list models (relative to the chat base URL)
	// before anything else: the account's published pipelines.
	chatModels := []gin.HandlerFunc{useShape(shapeOpenAI), checkInput, s.authenticate, requireScope(apikey.PipelinesRun), s.loadPipeline}
	r.GET(ModelsPath, append(chatModels, s.listModels)...)
	r.GET(ModelsPath+"/:model", append(chatModels, s.getModel)...)

	s.router = r
	return s
}

// Handler is the router, for tests and embedding.
func (s *Server) Handler() http.Handler { return s.router }

// Serve answers on ln until ctx ends, then shuts down gracefully: it stops
// accepting, lets in-flight requests finish within the configured timeout.
// The connection limits are in deadlines.go.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	srv := s.httpServer()
	srv.RegisterOnShutdown(s.mcp.closeSessions)
	srv.BaseContext = func(net.Listener) context.Context { return context.WithoutCancel(ctx) }
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	shutdownCtx, cancel := context.WithTimeout(context.Background(), s.deps.Config.HTTP.ShutdownTimeout)
	defer cancel()
	err := srv.Shutdown(shutdownCtx)
	if serveErr := <-errc; serveErr != nil && !errors.Is(serveErr, http.ErrServerClosed) {
		return serveErr
	}
	return err
}
