// Package app composes the platform from its parts: it opens the store,
// dials Temporal, builds the worker and the frontend and runs them until the
// context ends. The binaries and the test harness share it, so tests run the
// same wiring as production.
package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"time"

	"go.temporal.io/sdk/client"

	"conduit/activities"
	"conduit/frontend"
	"conduit/internal/accounts"
	"conduit/internal/checkout"
	"conduit/internal/config"
	"conduit/internal/humans"
	"conduit/internal/library"
	"conduit/internal/mail"
	"conduit/internal/mail/outbox"
	"conduit/internal/models"
	"conduit/internal/oauth"
	"conduit/internal/payments"
	"conduit/internal/quota"
	"conduit/internal/store"
	"conduit/internal/telemetry"
	"conduit/internal/temporalx"
	"conduit/internal/ticket"
	"conduit/internal/zkagg"
	"conduit/internal/zkagg/enqueue"
	"conduit/internal/zkpassport"
	"conduit/worker"
	"conduit/workflows"
)

// Roles says which parts this process runs.
type Roles struct {
	Frontend bool
	Worker   bool
	// DevTools adds the frontend's dev-only routes (minting play tokens).
	// The dev command and the test harness ask for them; the production
	// commands never do.
	DevTools bool
}

// Platform holds the connections every role shares.
type Platform struct {
	Config   *config.Config
	Log      *slog.Logger
	Store    *store.Store
	Temporal client.Client
	Catalog  *models.Catalog
	Payments *payments.Service
	Media    *Media
	// Library is the media library (docs/media.md).
	Library *library.Service
	// OAuth is the tool server's authorization server, nil while
	// oauth.secret is not set.
	OAuth *oauth.Provider
	// Enclaves is nil while enclaves.enabled is off.
	Enclaves *Enclaves
	// Checkout sells credit packs by card (nil provider: off).
	Checkout *checkout.Service
	// Proofs are the zkVerify relay and KYC proofs (app/proofs.go).
	Proofs *Proofs
	// ZKEnqueue implements workflows.ActivityZKEnqueue (a proof job
	// joining its domain's aggregation) in place of the aggregation's own; tests stand in with it.
	ZKEnqueue any
	// ZKContract is the proof aggregation contract on the embedded EVM
	// network (its Chain nil without one).
	ZKContract *zkagg.Contract
	// ZKPassport verifies zkPassport requests (app/zk.go).
	ZKPassport *zkpassport.Service
	// Telemetry is the process's metrics and traces (internal/telemetry).
	Telemetry *telemetry.Telemetry
	// MetricsListener, when set before Run, serves /metrics instead of
	// one Run opens on metrics.addr (the harness picks a free port).
	MetricsListener net.Listener
	stopPoolWatch   func()
}

// Open connects to PostgreSQL (migrating it) and to Temporal.
func Open(ctx context.Context, cfg *config.Config, log *slog.Logger) (*Platform, error) {
	tuneRuntime(log)
	tel, err := OpenTelemetry(ctx, cfg, log)
	if err != nil {
		return nil, err
	}
	st, err := store.Open(ctx, cfg.Database.URL, cfg.Database.MaxConns, log, tel.TracePool)
	if err != nil {
		_ = tel.Shutdown(ctx)
		return nil, err
	}
	catalog, err := models.NewCatalog(cfg.Models)
	if err != nil {
		st.Close()
		return nil, err
	}
	pay, err := payments.New(cfg.X402, st)
	if err != nil {
		st.Close()
		return nil, err
	}
	if pay.Err != nil && cfg.X402.Enabled {
		log.Warn("x402 is enabled but not ready; the paid endpoints answer 503", "reason", pay.Err)
	}
	med, err := openMedia(ctx, cfg)
	if err != nil {
		pay.Close()
		st.Close()
		return nil, err
	}
	if med.Err != nil && pay.Enabled() {
		log.Warn("pay-per-call is off; the render endpoints answer 503", "reason", med.Err)
	}
	tc, err := temporalx.Connect(ctx, cfg.Temporal, log,
		func(o *client.Options) error { return tel.ClientOptions(o, log) })
	if err != nil {
		pay.Close()
		st.Close()
		return nil, err
	}
	p := &Platform{Config: cfg, Log: log, Store: st, Temporal: tc, Catalog: catalog, Payments: pay, Media: med,
		Telemetry: tel, stopPoolWatch: telemetry.WatchPool(st.Stat)}
	p.Library = med.library(p, tc)
	p.ZKContract = &zkagg.Contract{Chain: pay.Chain}
	if p.ZKPassport, err = p.openZKPassport(); err != nil {
		tc.Close()
		pay.Close()
		st.Close()
		return nil, err
	}
	p.Checkout = openCheckout(cfg, st, tc, log)
	if p.Enclaves, err = openEnclaves(cfg); err != nil {
		tc.Close()
		pay.Close()
		st.Close()
		return nil, err
	}
	if p.Proofs, err = p.openProofs(ctx); err != nil {
		tc.Close()
		pay.Close()
		st.Close()
		return nil, err
	}
	if err := cfg.OAuth.Ready(); err != nil {
		log.Info("OAuth is off: assistants connect with API keys only", "reason", err)
	} else if p.OAuth, err = NewOAuth(cfg, st); err != nil {
		tc.Close()
		pay.Close()
		st.Close()
		return nil, err
	}
	return p, nil
}

// NewOAuth builds the authorization server the configuration describes.
func NewOAuth(cfg *config.Config, st *store.Store) (*oauth.Provider, error) {
	o := cfg.OAuth
	return oauth.New(oauth.Config{Issuer: cfg.BaseURL(), Secret: []byte(o.Secret),
		AccessTokenTTL: o.AccessTokenTTL, RefreshTokenTTL: o.RefreshTokenTTL, CodeTTL: o.CodeTTL}, st)
}

// Close releases the connections.
func (p *Platform) Close() {
	p.Proofs.close()
	p.Temporal.Close()
	p.Payments.Close()
	if p.stopPoolWatch != nil {
		p.stopPoolWatch()
	}
	p.Store.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = p.Telemetry.Shutdown(ctx)
}

// OpenTelemetry sets up the process's metrics and traces from metrics.*
// and tracing.* (internal/telemetry).
func OpenTelemetry(ctx context.Context, cfg *config.Config, log *slog.Logger) (*telemetry.Telemetry, error) {
	t := cfg.Tracing
	return telemetry.Start(ctx, telemetry.Options{TracingEndpoint: t.Endpoint, TracingInsecure: t.Insecure, SampleRatio: t.SampleRatio,
		Instrument: Instrument, Log: log})
}

// Instrument puts the tracing instrumentation in place without an
// exporter, so a test package records spans (frontend's trace test sets
// it before its platform starts).
var Instrument bool

// Listen opens the API's listener, with a clear sentence when the address is
// taken or unusable.
func Listen(cfg *config.Config) (net.Listener, error) {
	ln, err := net.Listen("tcp", cfg.HTTP.Addr)
	if err != nil {
		return nil, fmt.Errorf("the API cannot listen on %s (set %s_HTTP_ADDR to a free address): %w", cfg.HTTP.Addr, config.EnvPrefix, rootCause(err))
	}
	return ln, nil
}

// Run starts the requested roles and blocks until ctx ends (or the API
// server fails), then stops them in order: stop taking requests, then drain
// the worker.
func (p *Platform) Run(ctx context.Context, roles Roles, ln net.Listener) error {
	// What Run starts ends with it, on an error or a panic too: the delta
	// hub holds a pooled connection that the caller's Close waits for.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if err := p.serveMetrics(ctx); err != nil {
		return err
	}
	var w *worker.Worker
	if roles.Worker {
		var err error
		if w, err = p.StartWorker(ctx); err != nil {
			return err
		}
		defer w.Stop()
		// Messages whose delivery was never started (the account
		// command has no Temporal client) are started by the sweep.
		go p.Outbox().Run(ctx, outbox.SweepAge)
	}
	if !roles.Frontend {
		<-ctx.Done()
		return nil
	}
	deps := p.FrontendDeps()
	deps.Deltas = p.Store.NewDeltaHub(ctx, p.Log)
	deps.DevTools = roles.DevTools
	return frontend.New(deps).Serve(ctx, ln)
}

// serveMetrics serves /metrics on its own listener (metrics.addr, or the
// one set in MetricsListener) until ctx ends; none without either.
func (p *Platform) serveMetrics(ctx context.Context) error {
	ln := p.MetricsListener
	if ln == nil && p.Config.Metrics.Addr != "" {
		var err error
		if ln, err = telemetry.Listen(p.Config.Metrics.Addr); err != nil {
			return err
		}
	}
	if ln == nil {
		return nil
	}
	p.Log.Info("metrics listening", "addr", ln.Addr().String(), "path", telemetry.MetricsPath)
	go func() {
		if err := telemetry.Serve(ctx, ln); err != nil {
			p.Log.Error("the metrics endpoint stopped", "error", err)
		}
	}()
	return nil
}

// StartWorker registers the search attributes runs carry, then starts the
// worker on every task queue.
func (p *Platform) StartWorker(ctx context.Context) (*worker.Worker, error) {
	if err := temporalx.EnsureSearchAttributes(ctx, p.Temporal, p.Config.Temporal.Namespace, workflows.SearchAttributes()); err != nil {
		return nil, err
	}
	t := p.Config.Temporal
	encl, err := p.enclaveActivities()
	if err != nil {
		return nil, err
	}
	renders := p.Media.activities(p)
	w := worker.New(p.Temporal, worker.Deps{Store: p.Store, Catalog: p.Catalog, Deltas: p.Store, Facilitator: p.Payments.Facilitator,
		Renders: renders, Library: p.Media.libraryActivities(p, renders), Enclaves: encl, Tasks: p.taskActivities(encl), Metering: p.metering(encl), Mail: &activities.Mail{Store: p.Store, Sender: mailSender(p.Config)}, Log: p.Log, Pollers: t.Pollers, RenderConcurrency: t.RenderConcurrency, StopTimeout: t.StopTimeout,
		LibraryConcurrency: p.Config.Media.Library.Concurrency, ZKVerify: p.Proofs.activities(p), ZKEnqueue: p.ZKEnqueue, KYC: p.Proofs.kycActivities(p),
		ZKAgg: &activities.ZKAgg{Store: p.Store, Contract: p.ZKContract,
			Admission: &enqueue.Enqueuer{Store: p.Store, Temporal: p.Temporal, Config: p.Config.ZKAgg}},
		ZKPassport: &activities.ZKPassport{Store: p.Store}})

	return w, w.Start()
}

// FrontendDeps are the frontend's dependencies from this platform.
func (p *Platform) FrontendDeps() frontend.Deps {
	return frontend.Deps{Config: p.Config, Store: p.Store, Temporal: p.Temporal, Accounts: p.Accounts(), Catalog: p.Catalog, Payments: p.Payments,
		Media: p.Media.Media, Library: p.Library, OAuth: p.OAuth, Humans: p.Humans(), Log: p.Log,
		Enclaves: p.enclaveFrontend(), Checkout: p.Checkout, Usage: p.usageSources(), Redaction: p.redaction(),
		ZKVerify: p.Proofs.ZKVerify, KYC: p.Proofs.KYC,
		ZKAgg: &zkagg.Service{Store: p.Store, Contract: p.ZKContract}, ZKPassport: p.ZKPassport}

}

// usageSources are the sources of GET /api/account/usage beside the
// counted resources: the media library's bytes, when media is on, and the
// PII vault's subjects and tokens.
func (p *Platform) usageSources() []quota.Source {
	var out []quota.Source
	if p.Library != nil {
		out = append(out, libraryUsage{p.Library})
	}
	out = append(out, p.piiUsage())
	if p.Proofs != nil {
		out = append(out, p.Proofs.ZKVerify, p.Proofs.KYC)
	}
	if p.ZKPassport != nil {
		out = append(out, p.ZKPassport)
	}
	return out
}

// libraryUsage reports the library's bytes against its quota.
type libraryUsage struct{ lib *library.Service }

func (l libraryUsage) Usage(ctx context.Context, account string) ([]quota.Item, error) {
	used, err := l.lib.Usage(ctx, account)
	if err != nil {
		return nil, err
	}
	item := quota.Item{Resource: quota.MediaBytes, Used: used}
	if q := l.lib.Config.QuotaBytes; q > 0 {
		item.Limit = &q
	}
	return []quota.Item{item}, nil
}

// Accounts is the account and key service on this platform's store; it
// takes OAuth access tokens as bearers too when OAuth is on, and signs
// sign-up verification links when sign-up is configured.
func (p *Platform) Accounts() *accounts.Service {
	a := &accounts.Service{Store: p.Store, BaseURL: p.Config.BaseURL(), KeyLimit: p.Config.Quota.APIKeys, Outbox: p.Outbox()}
	if p.OAuth != nil {
		a.Tokens = p.OAuth
	}
	a.VerifyLinks, a.SignUpOff = verifyLinks(p.Config)
	return a
}

// verifyLinks is sign-up's link signer, or why sign-up is off.
func verifyLinks(cfg *config.Config) (*ticket.Signer, error) {
	if err := cfg.SignUpReady(); err != nil {
		return nil, err
	}
	return accounts.NewVerifyLinks(cfg.SignUp.Secret, cfg.SignUp.VerifyTTL)
}

// Outbox starts the delivery of outbox messages (docs/accounts.md).
func (p *Platform) Outbox() *outbox.Dispatcher {
	return &outbox.Dispatcher{Store: p.Store, Temporal: p.Temporal, Log: p.Log}
}

// mailSender is the outbox's sender mail.sender names (nil: none, the
// deliveries wait and retry).
func mailSender(cfg *config.Config) mail.Sender {
	m := cfg.Mail
	switch m.Sender {
	case "smtp":
		return &mail.SMTP{Host: m.SMTPHost, Port: m.SMTPPort, User: m.SMTPUser, Password: m.SMTPPassword, From: m.From}
	case "mailbox":
		return mail.Mailbox{}
	}
	return nil
}

// Humans is the sign-in service on this platform's store.
func (p *Platform) Humans() *humans.Service {
	return &humans.Service{Store: p.Store, SessionTTL: p.Config.SignIn.SessionTTL, Accounts: p.Accounts()}
}

func rootCause(err error) error {
	for {
		u := errors.Unwrap(err)
		if u == nil {
			return err
		}
		err = u
	}
}

// openCheckout builds card payments for credit packs from checkout.*: the
// local TEST MODE checkout, Stripe, or off (docs/accounts.md).
func openCheckout(cfg *config.Config, st *store.Store, tc client.Client, log *slog.Logger) *checkout.Service {
	k := cfg.Checkout
	svc := &checkout.Service{Store: st, Temporal: tc, WebhookSecret: k.WebhookSecret, Tolerance: k.WebhookTolerance, SessionTTL: k.SessionTTL, Log: log}
	if err := k.Ready(); err != nil {
		log.Info("card payments for credit packs are off", "reason", err)
		return svc
	}
	switch k.Provider {
	case "local":
		log.Warn("card checkout is in TEST MODE (checkout.provider local): a fake card buys real credit; use stripe in production")
		svc.Provider = &checkout.Local{BaseURL: cfg.BaseURL(), Secret: k.WebhookSecret}
	case "stripe":
		svc.Provider = checkout.NewStripe(checkout.StripeOptions{SecretKey: k.StripeSecretKey, APIURL: k.StripeAPIURL})
	}
	return svc
}
