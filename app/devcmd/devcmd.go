// Package devcmd is the dev command: the embedded stack plus the whole
// platform in one process. Only the dev entry point imports it, so the
// production binary never links the Temporal server.
package devcmd

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/crypto"

	"conduit/app"
	"conduit/frontend"
	"conduit/internal/codec"
	"conduit/internal/config"
	"conduit/internal/devstack"
	"conduit/internal/devstack/apt"
	"conduit/internal/enclaves/provider/local"
	"conduit/internal/payments"
	"conduit/internal/telemetry"
	"conduit/workflows"
)

// Command returns the `dev` subcommand. Its embedded networks run under
// the play network ids, never a main network's, so nothing signed for them
// can pass for a real payment.
func Command() app.Command {
	return app.Command{
		Summary: "start everything on embedded defaults (PostgreSQL, Temporal + UI, worker, API)",
		Run:     run,
		// Enclaves (and the tasks that call them) are on whenever the
		// sandbox can run here: localEnclaves turns them off, saying why,
		// when it cannot.
		// /metrics on a loopback port of its own (config.DevMetricsAddr).
		Defaults: map[string]any{"metrics.addr": config.DevMetricsAddr, "enclaves.enabled": true, "x402.network": config.PlayNetwork, "x402.solana_network": config.PlaySolanaNetwork,
			"x402.solana_rpc_addr": DefaultSolanaRPCAddr},
	}
}

// DefaultSolanaRPCAddr is where the dev command serves the embedded Solana
// network's JSON-RPC: solana-test-validator's port, so wallets and tools
// that know "localhost" find it.
const DefaultSolanaRPCAddr = "127.0.0.1:8899"

func run(ctx context.Context, env *app.Env, _ []string) error {
	cfg := env.Config
	// Claim the API address first so a busy port fails before anything starts.
	ln, err := app.Listen(cfg)
	if err != nil {
		return err
	}
	defer ln.Close()

	dataDir, err := filepath.Abs(cfg.Dev.DataDir)
	if err != nil {
		return err
	}
	started := time.Now()
	if err := localCodec(cfg, dataDir); err != nil {
		return err
	}
	stack, err := devstack.Start(ctx, stackOptions(cfg, dataDir, env.Log))
	if err != nil {
		return err
	}
	defer stack.Stop()
	cfg.Database.URL = stack.DatabaseURL
	cfg.Temporal.Address = stack.TemporalAddress
	if cfg.Temporal.UIURL == "" && stack.TemporalUI != "" {
		cfg.Temporal.UIURL = "http://" + stack.TemporalUI
	}
	if err := localPayments(cfg, dataDir); err != nil {
		return err
	}
	if err := localMedia(cfg, dataDir); err != nil {
		return err
	}
	if err := localOAuth(cfg, dataDir); err != nil {
		return err
	}
	if err := localCheckout(cfg, dataDir); err != nil {
		return err
	}
	if err := localMail(cfg, dataDir); err != nil {
		return err
	}
	renderTools(cfg, env.Log)
	registry, enclavesOff, err := localEnclaves(cfg, dataDir, env.Log)
	if err != nil {
		return err
	}
	if registry != nil {
		defer registry.Close()
	}

	p, err := app.Open(ctx, cfg, env.Log)
	if err != nil {
		return err
	}
	defer p.Close()
	// A busy metrics port turns metrics off; it does not stop the dev stack.
	if cfg.Metrics.Addr != "" {
		if p.MetricsListener, err = telemetry.Listen(cfg.Metrics.Addr); err != nil {
			env.Log.Warn("metrics are off", "reason", err)
			p.MetricsListener, cfg.Metrics.Addr = nil, ""
		}
	}

	key, err := bootstrap(ctx, p.Accounts(), dataDir)
	if err != nil {
		return err
	}
	password, err := bootstrapLogin(ctx, p.Humans(), dataDir)
	if err != nil {
		return err
	}
	var encl strings.Builder
	if registry == nil {
		fmt.Fprintf(&encl, "  enclaves      off, and scheduled tasks with them: %s\n", enclavesOff)
	} else {
		fmt.Fprintf(&encl, "  enclaves      %s/api/enclaves, tasks %s/api/tasks (registry for your images: %s; push one with\n",
			cfg.BaseURL(), cfg.BaseURL(), registry.Host)
		fmt.Fprintf(&encl, "                go run . enclave push app.tar %s/app:1 — a docker save tarball or an OCI layout dir)\n", registry.Host)
		fmt.Fprintf(&encl, "                github sources: cloned from %s, built with the go on PATH, pushed to %s\n",
			cfg.Enclaves.GitBaseURL, cfg.Enclaves.BuildRegistry)
	}
	banner(env, p, dataDir, stack, key, password, encl.String(), time.Since(started))
	return p.Run(ctx, app.Roles{Frontend: true, Worker: true, DevTools: true}, ln)
}

// stackOptions is what the dev command asks of the embedded stack.
func stackOptions(cfg *config.Config, dataDir string, log *slog.Logger) devstack.Options {
	return devstack.Options{
		TemporalCodecEndpoint: cfg.BaseURL() + frontend.CodecPath,
		DataDir:               dataDir,
		DatabaseURL:           cfg.Database.URL,
		TemporalAddress:       cfg.Temporal.Address,
		Namespace:             cfg.Temporal.Namespace,
		PostgresPort:          cfg.Dev.PostgresPort,
		TemporalPort:          cfg.Dev.TemporalPort,
		TemporalUIPort:        cfg.Dev.TemporalUIPort,
		TimerResolution:       100 * time.Millisecond,
		InstallPostgres:       cfg.Dev.InstallPostgres,
		TemporalLog:           temporalLog(cfg.Dev.TemporalLog),
		TemporalStore:         cfg.Dev.TemporalStore,
		TemporalShards:        cfg.Dev.TemporalShards,
		SearchAttributes:      workflows.SearchAttributes(),
		Log:                   log,
	}
}

func banner(env *app.Env, p *app.Platform, dataDir string, s *devstack.Stack, key, password, enclaves string, took time.Duration) {
	w := env.Stdout
	fmt.Fprintf(w, "\nconduit dev is up (%s)\n", took.Round(time.Millisecond))
	fmt.Fprintf(w, "  API           %s   (health: %s/healthz)\n", env.Config.BaseURL(), env.Config.BaseURL())
	fmt.Fprintf(w, "  dashboard     %s%s   (sign in with the dev login below)\n", env.Config.BaseURL(), frontend.DashboardPath)
	fmt.Fprintf(w, "  MCP tools     %s%s   (mirror: %s%s; docs/mcp.md)\n", env.Config.BaseURL(), frontend.MCPPath, env.Config.BaseURL(), frontend.ToolsPath)
	if s.TemporalUI != "" {
		fmt.Fprintf(w, "  Temporal UI   http://%s\n", s.TemporalUI)
	}
	fmt.Fprintf(w, "  Temporal      %s (namespace %s)\n", s.TemporalAddress, env.Config.Temporal.Namespace)
	fmt.Fprintf(w, "  PostgreSQL    %s\n", redact(s.DatabaseURL))
	fmt.Fprintf(w, "  data folder   %s\n", dataDir)
	fmt.Fprintf(w, "  dev API key   %s   (also in %s)\n", key, filepath.Join(dataDir, KeyFile))
	fmt.Fprintf(w, "  dev login     %s / %s   (at %s%s; password also in %s)\n", DevEmail, password, env.Config.BaseURL(), frontend.SignInPath, filepath.Join(dataDir, PasswordFile))
	if co := p.Checkout; co.Enabled() {
		mode := ""
		if !co.Provider.Livemode() {
			mode = ", TEST MODE"
		}
		fmt.Fprintf(w, "  credit packs  %s%s (card checkout: %s%s)\n", env.Config.BaseURL(), frontend.CreditsPagePath, co.Provider.Name(), mode)
	}
	if env.Config.Mail.Sender == "mailbox" {
		fmt.Fprintf(w, "  mailbox       %s%s (what sign-up mailed: verification links; dev command only)\n", env.Config.BaseURL(), frontend.MailboxPath)
	}
	if p.OAuth != nil {
		fmt.Fprintf(w, "  tool server   %s (OAuth: %s)\n", p.OAuth.Resource(), p.OAuth.ResourceMetadataURL())
	}
	if pay := p.Payments; pay.Enabled() && pay.Chain != nil {
		fmt.Fprintf(w, "  x402 top-up   %s%s\n", env.Config.BaseURL(), payments.TopUpPath)
		fmt.Fprintf(w, "  x402 networks %s (%s EVM chain, token %s)\n", pay.Network, playOrLocal(pay.Network), pay.Chain.Token.Hex())
		if pay.SolanaNetwork != "" {
			fmt.Fprintf(w, "                %s (%s Solana ledger, mint %s)\n", pay.SolanaNetwork, playOrLocal(pay.SolanaNetwork), pay.SolanaMint)
			if pay.SolanaRPC != "" {
				fmt.Fprintf(w, "  Solana RPC    %s (point a Solana wallet or client here; docs/payments.md)\n", pay.SolanaRPC)
			}
		}
		fmt.Fprintf(w, "  x402 mint     POST %s%s {address, usd} (play tokens; dev command only)\n", env.Config.BaseURL(), frontend.DevMintPath)
		if p.Media.Err == nil {
			for _, path := range []string{frontend.VideoPath, frontend.SpeechPath, frontend.MusicPath} {
				fmt.Fprintf(w, "  x402 %-8s %s%s (GET for the menu)\n", path[len("/api/x402/"):], env.Config.BaseURL(), path)
			}
		}
	}
	fmt.Fprint(w, enclaves)
	fmt.Fprintf(w, "Press Ctrl-C to stop everything; data is kept for the next start.\n\n")
}

// playOrLocal names a local network: "play" under the play network ids,
// "local" under any other the configuration chose.
func playOrLocal(network string) string {
	if network == config.PlayNetwork || network == config.PlaySolanaNetwork {
		return "play"
	}
	return "local"
}

// redact hides the password of a database URL.
func redact(raw string) string {
	if u, err := url.Parse(raw); err == nil {
		return u.Redacted()
	}
	return "(unparseable URL)"
}

func temporalLog(level string) string {
	if level == "off" {
		return ""
	}
	return level
}

// localPayments turns agent payments on with the local facilitator and
// networks unless a facilitator is configured; the facilitator's key is
// kept in the data folder so the receiving address stays the same.
func localPayments(cfg *config.Config, dataDir string) error {
	if cfg.X402.Facilitator != "" {
		return nil
	}
	b, err := kept(dataDir, "x402-facilitator.key", func() (string, error) {
		k, err := crypto.GenerateKey()
		if err != nil {
			return "", err
		}
		return hexutil.Encode(crypto.FromECDSA(k)), nil
	})
	if err != nil {
		return err
	}
	cfg.X402.Enabled, cfg.X402.Facilitator, cfg.X402.LocalKey = true, "local", b
	return nil
}

// kept returns the secret kept in the data folder under name, making it
// with fresh the first time (owner-only), so restarts keep the same keys.
func kept(dataDir, name string, fresh func() (string, error)) (string, error) {
	path := filepath.Join(dataDir, name)
	b, err := os.ReadFile(path)
	if err == nil {
		return strings.TrimSpace(string(b)), nil
	}
	if !errors.Is(err, os.ErrNotExist) {
		return "", err
	}
	v, err := fresh()
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(dataDir, 0o700); err != nil {
		return "", err
	}
	return v, os.WriteFile(path, []byte(v), 0o600)
}

// localOAuth gives the authorization server its token secret, kept in
// the data folder so tokens survive restarts, unless oauth.secret is set.
func localOAuth(cfg *config.Config, dataDir string) error {
	if cfg.OAuth.Secret != "" {
		return nil
	}
	b, err := kept(dataDir, "oauth-secret", func() (string, error) {
		buf := make([]byte, 32)
		_, err := rand.Read(buf)
		return hex.EncodeToString(buf), err
	})
	if err != nil {
		return err
	}
	cfg.OAuth.Secret = b
	return nil
}

// localMail lets sign-up mail its verification links into the local
// mailbox page unless mail.sender names a sender, with a link secret kept
// in the data folder unless signup.secret is set.
func localMail(cfg *config.Config, dataDir string) error {
	if cfg.Mail.Sender == "" {
		cfg.Mail.Sender = "mailbox"
	}
	if cfg.SignUp.Secret != "" {
		return nil
	}
	b, err := kept(dataDir, "signup-secret", func() (string, error) {
		buf := make([]byte, 32)
		_, err := rand.Read(buf)
		return hex.EncodeToString(buf), err
	})
	if err != nil {
		return err
	}
	cfg.SignUp.Secret = b
	return nil
}

// localCheckout sells credit packs through the local TEST MODE checkout
// unless checkout.provider names one, with a webhook secret kept in the
// data folder (whsec_…, like Stripe's).
func localCheckout(cfg *config.Config, dataDir string) error {
	if cfg.Checkout.Provider == "" {
		cfg.Checkout.Provider = "local"
	}
	if cfg.Checkout.WebhookSecret != "" {
		return nil
	}
	b, err := kept(dataDir, "checkout-webhook-secret", func() (string, error) {
		buf := make([]byte, 32)
		_, err := rand.Read(buf)
		return "whsec_" + hex.EncodeToString(buf), err
	})
	if err != nil {
		return err
	}
	cfg.Checkout.WebhookSecret = b
	return nil
}

// localCodec seals workflow payloads with a key generated once and kept in
// the data folder, unless temporal.codec_keys names keys.
func localCodec(cfg *config.Config, dataDir string) error {
	if cfg.Temporal.CodecKeys != "" {
		return nil
	}
	b, err := kept(dataDir, "temporal-codec.key", func() (string, error) { return codec.NewKey("dev"), nil })
	if err != nil {
		return err
	}
	cfg.Temporal.CodecKeys = b
	return nil
}

// renderTools makes sure the embedded renderers' programs are there,
// installing them like PostgreSQL when allowed; without them the platform
// still starts, and renders fail uncharged.
func renderTools(cfg *config.Config, log *slog.Logger) {
	if _, err := exec.LookPath(cfg.Media.FFmpeg); err == nil {
		return
	}
	if cfg.Dev.InstallPostgres {
		err := apt.Install(log, "ffmpeg", "espeak-ng", "fonts-dejavu-core")
		if err == nil {
			return
		}
		if !errors.Is(err, apt.ErrCannot) {
			log.Warn("installing the renderers' packages failed", "err", err)
		}
	}
	log.Warn("ffmpeg was not found: pay-per-call renders will fail (uncharged) until it is installed (Debian/Ubuntu: apt-get install ffmpeg espeak-ng fonts-dejavu-core)")
}

// localMedia gives pay-per-call its signing secret (kept in the data folder
// so claim tickets and file URLs survive restarts) and keeps rendered files
// in the data folder, unless configured otherwise.
func localMedia(cfg *config.Config, dataDir string) error {
	if cfg.Media.Blob.Backend == "local" && cfg.Media.Blob.Dir == "" {
		cfg.Media.Blob.Dir = filepath.Join(dataDir, "blobs")
	}
	if cfg.Media.Secret != "" {
		return nil
	}
	b, err := kept(dataDir, "media-secret", func() (string, error) {
		buf := make([]byte, 32)
		_, err := rand.Read(buf)
		return hex.EncodeToString(buf), err
	})
	if err != nil {
		return err
	}
	cfg.Media.Secret = b
	return nil
}

// localEnclaves, when enclaves.enabled (the dev command's default) and
// the sandbox can run, keeps the enclaves' files in the data folder and
// serves an embedded OCI registry on loopback (dev.registry_port; blobs in
// the data folder) to push images to, and that github builds push to
// (enclaves.build_registry, unless set). When they are off it says why.
func localEnclaves(cfg *config.Config, dataDir string, log *slog.Logger) (*local.Registry, string, error) {
	if !cfg.Enclaves.Enabled {
		return nil, "enclaves.enabled (CONDUIT_ENCLAVES_ENABLED) is false", nil
	}
	if why := sandboxMissing(cfg, log); why != "" {
		cfg.Enclaves.Enabled = false
		return nil, why, nil
	}
	if !filepath.IsAbs(cfg.Enclaves.DataDir) {
		cfg.Enclaves.DataDir = filepath.Join(dataDir, "enclaves")
	}
	if !filepath.IsAbs(cfg.Enclaves.AttestationDir) {
		cfg.Enclaves.AttestationDir = filepath.Join(dataDir, "attestation")
	}
	reg, err := local.StartRegistry(local.RegistryOptions{
		Addr:    fmt.Sprintf("127.0.0.1:%d", cfg.Dev.RegistryPort),
		BlobDir: filepath.Join(dataDir, "registry"),
	})
	if err != nil {
		return nil, "", err
	}
	// github sources are built and pushed to the same registry unless
	// another is configured.
	if cfg.Enclaves.BuildRegistry == "" {
		cfg.Enclaves.BuildRegistry = reg.Host + "/builds"
	}
	return reg, "", nil
}

// sandboxMissing says why the local provider's sandbox (bubblewrap) cannot
// run here, "" when it can. Bubblewrap is installed like PostgreSQL when
// the dev command may install packages (root on Debian/Ubuntu), and then
// asked to make a sandbox, since containers may forbid the namespaces.
func sandboxMissing(cfg *config.Config, log *slog.Logger) string {
	const bwrap = "bwrap" // as the local provider runs it
	if _, err := exec.LookPath(bwrap); err != nil && cfg.Dev.InstallPostgres {
		if err := apt.Install(log, "bubblewrap"); err != nil && !errors.Is(err, apt.ErrCannot) {
			log.Warn("installing bubblewrap failed", "err", err)
		}
	}
	if _, err := exec.LookPath(bwrap); err != nil {
		return "bubblewrap is not installed (Debian/Ubuntu: apt-get install bubblewrap), so the local sandbox cannot run"
	}
	if out, err := exec.Command(bwrap, "--ro-bind", "/", "/", "--unshare-pid", "--dev", "/dev", "--proc", "/proc", "true").CombinedOutput(); err != nil {
		return fmt.Sprintf("bubblewrap cannot make a sandbox on this machine (%s), so the local sandbox cannot run", strings.TrimSpace(string(out)+" "+err.Error()))
	}
	return ""
}
