package app_test

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/crypto"
	"go.temporal.io/sdk/client"

	"conduit/app/apptest/wait"
	"conduit/frontend"
	"conduit/internal/config"
	"conduit/internal/devstack/pg"
	"conduit/workflows"
)

// The production binary (cmd/conduit, built here) never mounts the dev
// tools, whatever its configuration, and refuses the local facilitator
// under a main network's id unless the dev-only override says otherwise.
// It runs against the test platform's PostgreSQL and Temporal.
func TestProductionBinaryHasNoDevToolsAndGuardsMainNetworks(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "conduit")
	build := exec.Command("go", "build", "-o", bin, "./cmd/conduit")
	build.Dir = ".."
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building the production binary: %v\n%s", err, out)
	}
	key, _ := crypto.GenerateKey()
	local := []string{
		"CONDUIT_DATABASE_URL=" + env.Config.Database.URL,
		"CONDUIT_TEMPORAL_ADDRESS=" + env.Config.Temporal.Address,
		"CONDUIT_TEMPORAL_NAMESPACE=" + env.Config.Temporal.Namespace,
		"CONDUIT_X402_ENABLED=true",
		"CONDUIT_X402_FACILITATOR=local",
		"CONDUIT_X402_LOCAL_KEY=" + hexutil.Encode(crypto.FromECDSA(key)),
	}

	t.Run("no mint route, even with the local facilitator on test networks", func(t *testing.T) {
		api, stop := startProduction(t, bin, append(local, "CONDUIT_X402_NETWORK=eip155:84532", "CONDUIT_X402_SOLANA_NETWORK="+config.PlaySolanaNetwork))
		defer stop()
		// Payments are on, with the local facilitator...
		if code := post(t, api+"/api/billing/credits/x402", `{}`); code != http.StatusPaymentRequired {
			t.Fatalf("top-up: %d, want 402 (payments on)", code)
		}
		// ...and still nobody can mint its tokens.
		if code := post(t, api+frontend.DevMintPath, `{"address":"0x000000000000000000000000000000000000dEaD","usd":1000}`); code != http.StatusNotFound {
			t.Fatalf("POST %s: %d, want 404", frontend.DevMintPath, code)
		}
		// Nor is there a mailbox page.
		if resp, err := http.Get(api + frontend.MailboxPath); err != nil || resp.StatusCode != http.StatusNotFound {
			t.Fatalf("GET %s: %v %v, want 404", frontend.MailboxPath, resp, err)
		} else {
			resp.Body.Close()
		}
	})

	t.Run("the local facilitator refuses eip155:8453 in one sentence", func(t *testing.T) {
		cmd := exec.Command(bin, "frontend")
		cmd.Env = append(os.Environ(), append(local, "CONDUIT_HTTP_ADDR=127.0.0.1:0", "CONDUIT_X402_NETWORK=eip155:8453", "CONDUIT_X402_SOLANA_NETWORK="+config.PlaySolanaNetwork)...)
		out, err := cmd.CombinedOutput()
		if err == nil {
			t.Fatal("the production binary started the local facilitator on eip155:8453")
		}
		lines := strings.Split(strings.TrimSpace(string(out)), "\n")
		want := "x402.facilitator (CONDUIT_X402_FACILITATOR) is local on a main network (x402.network eip155:8453)"
		if len(lines) != 2 || lines[0] != "conduit: configuration error:" || !strings.HasPrefix(lines[1], want) ||
			!strings.Contains(lines[1], "x402.allow_local_on_main_network (CONDUIT_X402_ALLOW_LOCAL_ON_MAIN_NETWORK)") {
			t.Fatalf("want one sentence naming the setting, got:\n%s", out)
		}
	})

	t.Run("the TEST MODE card checkout is refused in one sentence", func(t *testing.T) {
		for _, role := range []string{"frontend", "worker", "all"} {
			// Bounded: a binary that wrongly starts must fail the test, not hang it.
			ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, bin, role)
			cmd.Env = append(os.Environ(), append(local, "CONDUIT_HTTP_ADDR=127.0.0.1:0", "CONDUIT_X402_NETWORK=eip155:84532",
				"CONDUIT_X402_SOLANA_NETWORK="+config.PlaySolanaNetwork,
				"CONDUIT_CHECKOUT_PROVIDER=local", "CONDUIT_CHECKOUT_WEBHOOK_SECRET=whsec_0123456789abcdef")...)
			out, err := cmd.CombinedOutput()
			if err == nil {
				t.Fatalf("conduit %s started with the local card checkout", role)
			}
			lines := strings.Split(strings.TrimSpace(string(out)), "\n")
			want := "conduit: checkout.provider (CONDUIT_CHECKOUT_PROVIDER) is local outside the dev command"
			if len(lines) != 1 || !strings.HasPrefix(lines[0], want) {
				t.Fatalf("conduit %s: want one sentence naming the setting, got:\n%s", role, out)
			}
		}
	})

	t.Run("help is asked for and answered", func(t *testing.T) {
		for _, args := range [][]string{{"help"}, {"--help"}, {"help", "enclave"}, {"enclave", "--help"}, {"enclave", "help"}, {"task", "-h"}} {
			out, err := exec.Command(bin, args...).CombinedOutput()
			if err != nil || !strings.Contains(string(out), "usage: conduit") {
				t.Errorf("conduit %s: %v\n%s", strings.Join(args, " "), err, out)
			}
		}
		out, _ := exec.Command(bin, "enclave", "--help").CombinedOutput()
		if !strings.Contains(string(out), "CONDUIT_TEMPORAL_CODEC_KEYS") || !strings.Contains(string(out), "CONDUIT_TEMPORAL_ADDRESS") {
			t.Errorf("enclave --help does not name the variables it needs:\n%s", out)
		}
		if err := exec.Command(bin, "help", "nosuch").Run(); err == nil {
			t.Error("help for an unknown command succeeded")
		}
	})

	t.Run("resume without the codec keys refuses before acting", func(t *testing.T) {
		// A lifecycle whose payloads are sealed (started by the platform's
		// own client), on a queue no worker polls: nothing may reach it.
		id := "enc_cli" + itoa(int(time.Now().UnixNano()%1e9))
		run, err := env.Platform.Temporal.ExecuteWorkflow(context.Background(), client.StartWorkflowOptions{
			ID: workflows.EnclaveWorkflowID(id), TaskQueue: "nobody-polls-" + id,
		}, workflows.WfEnclave, map[string]string{"secret": "sealed"})
		if err != nil {
			t.Fatal(err)
		}
		defer func() {
			_ = env.Platform.Temporal.TerminateWorkflow(context.Background(), run.GetID(), "", "test over")
		}()
		cmd := exec.Command(bin, "enclave", "resume", id)
		cmd.Env = append(os.Environ(), "CONDUIT_TEMPORAL_ADDRESS="+env.Config.Temporal.Address, "CONDUIT_TEMPORAL_NAMESPACE="+env.Config.Temporal.Namespace)
		out, err := cmd.CombinedOutput()
		if err == nil || !strings.Contains(string(out), "CONDUIT_TEMPORAL_CODEC_KEYS") || !strings.Contains(string(out), "nothing was done") {
			t.Fatalf("resume without keys: %v\n%s", err, out)
		}
		// Nothing reached the workflow: its history is still its start.
		it := env.Platform.Temporal.GetWorkflowHistory(context.Background(), run.GetID(), "", false, 0)
		n := 0
		for it.HasNext() {
			ev, err := it.Next()
			if err != nil {
				t.Fatal(err)
			}
			if ev.GetWorkflowExecutionUpdateAcceptedEventAttributes() != nil || ev.GetWorkflowExecutionUpdateAdmittedEventAttributes() != nil {
				t.Fatalf("an update reached the workflow: %v", ev)
			}
			n++
		}
		if n == 0 {
			t.Fatal("no history read")
		}
	})

	t.Run("the dev mailbox is refused in one sentence", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, bin, "all")
		cmd.Env = append(os.Environ(), append(local, "CONDUIT_HTTP_ADDR=127.0.0.1:0", "CONDUIT_X402_NETWORK=eip155:84532",
			"CONDUIT_X402_SOLANA_NETWORK="+config.PlaySolanaNetwork, "CONDUIT_MAIL_SENDER=mailbox")...)
		out, err := cmd.CombinedOutput()
		lines := strings.Split(strings.TrimSpace(string(out)), "\n")
		want := "conduit: mail.sender (CONDUIT_MAIL_SENDER) is mailbox outside the dev command"
		if err == nil || len(lines) != 1 || !strings.HasPrefix(lines[0], want) {
			t.Fatalf("want one sentence naming the setting, got (%v):\n%s", err, out)
		}
	})

	t.Run("with the dev-only override it starts, still without dev tools", func(t *testing.T) {
		api, stop := startProduction(t, bin, append(local, "CONDUIT_X402_NETWORK=eip155:8453", "CONDUIT_X402_ALLOW_LOCAL_ON_MAIN_NETWORK=true"))
		defer stop()
		if code := post(t, api+"/api/billing/credits/x402", `{}`); code != http.StatusPaymentRequired {
			t.Fatalf("top-up: %d, want 402", code)
		}
		if code := post(t, api+frontend.DevMintPath, `{"address":"0x000000000000000000000000000000000000dEaD","usd":1}`); code != http.StatusNotFound {
			t.Fatalf("POST %s: %d, want 404", frontend.DevMintPath, code)
		}
	})
}

// startProduction runs `conduit frontend` with extra environment on a free
// port until /healthz answers 200; stop ends it with SIGTERM.
func startProduction(t *testing.T, bin string, extra []string) (api string, stop func()) {
	t.Helper()
	port, err := pg.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	api = "http://127.0.0.1:" + itoa(port)
	cmd := exec.Command(bin, "frontend")
	cmd.Env = append(append(os.Environ(), extra...), "CONDUIT_HTTP_ADDR=127.0.0.1:"+itoa(port))
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	stop = func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case err := <-exited:
			if err != nil {
				t.Errorf("conduit frontend did not stop cleanly: %v\n%s", err, out.String())
			}
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			t.Errorf("conduit frontend did not stop within 30s")
		}
	}
	answered := false
	defer func() {
		if !answered {
			stop()
			t.Logf("conduit frontend's output:\n%s", out.String())
		}
	}()
	wait.Eventually(t, 60*time.Second, "conduit frontend to answer /healthz", func() error {
		select {
		case err := <-exited:
			t.Fatalf("conduit frontend exited before answering: %v", err)
		default:
		}
		resp, err := http.Get(api + "/healthz")
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("status %d", resp.StatusCode)
		}
		return nil
	})
	answered = true
	return api, stop
}

func post(t *testing.T, url, body string) int {
	t.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}
