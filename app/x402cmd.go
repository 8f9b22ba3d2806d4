package app

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/gagliardetto/solana-go"
	"github.com/gagliardetto/solana-go/rpc"

	"conduit/internal/x402"
)

// x402Command: `x402 pay` performs a whole 402 → pay → retry exchange
// against any URL; `x402 mint` credits play tokens on a dev server's
// embedded network.
func x402Command() Command {
	return Command{
		Summary: "x402 pay -url URL [-key HEX] [-bearer KEY] [-method POST] [-body JSON] | x402 mint -api URL -to ADDR -usd N",
		Run: func(ctx context.Context, env *Env, args []string) error {
			if len(args) == 0 {
				return fmt.Errorf("x402 needs a subcommand: pay or mint")
			}
			switch args[0] {
			case "pay":
				return payCmd(ctx, env, args[1:])
			case "mint":
				return mintCmd(ctx, env, args[1:])
			default:
				return fmt.Errorf("unknown x402 subcommand %q (pay, mint)", args[0])
			}
		},
	}
}

func payCmd(ctx context.Context, env *Env, args []string) error {
	fs := flag.NewFlagSet("x402 pay", flag.ContinueOnError)
	url := fs.String("url", "", "the paid endpoint (required)")
	key := fs.String("key", os.Getenv("CONDUIT_PAYER_KEY"), "payer's private key: 0x hex pays on the EVM network, base58 on Solana (or CONDUIT_PAYER_KEY)")
	bearer := fs.String("bearer", "", "optional API key sent as Authorization: Bearer")
	method := fs.String("method", http.MethodPost, "HTTP method")
	body := fs.String("body", "", "request body (JSON)")
	rpcURL := fs.String("rpc", envOr("CONDUIT_SOLANA_RPC", DefaultSolanaRPC), "Solana JSON-RPC asked for a recent blockhash when the offer carries none (or CONDUIT_SOLANA_RPC)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *url == "" || *key == "" {
		return fmt.Errorf("x402 pay needs -url and -key (or CONDUIT_PAYER_KEY)")
	}
	res, err := Pay(ctx, http.DefaultClient, *method, *url, []byte(*body), *key, *bearer, *rpcURL)
	if err != nil {
		return err
	}
	fmt.Fprintf(env.Stdout, "status %d\n", res.Status)
	if res.Settlement != nil {
		fmt.Fprintf(env.Stdout, "settled %s on %s by %s\n", res.Settlement.Transaction, res.Settlement.Network, res.Settlement.Payer)
	}
	fmt.Fprintf(env.Stdout, "%s\n", res.Body)
	return nil
}

// PaidResponse is the answer to a paid retry.
type PaidResponse struct {
	Status     int
	Body       []byte
	Settlement *x402.SettleResponse
}

// DefaultSolanaRPC is the dev command's Solana JSON-RPC.
const DefaultSolanaRPC = "http://127.0.0.1:8899"

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

// Pay asks url, and when it answers 402 signs its first offer on the key's
// network — EIP-3009 for a hex key, a Solana transfer for a base58 one, as
// the official clients do — and asks again with PAYMENT-SIGNATURE. A
// Solana payment's blockhash is the offer's extra.recentBlockhash, or the
// latest from solanaRPC.
func Pay(ctx context.Context, hc *http.Client, method, url string, body []byte, keyHex, bearer, solanaRPC string) (PaidResponse, error) {
	send := func(payment string) (*http.Response, []byte, error) {
		req, err := http.NewRequestWithContext(ctx, method, url, bytes.NewReader(body))
		if err != nil {
			return nil, nil, err
		}
		if len(body) > 0 {
			req.Header.Set("Content-Type", "application/json")
		}
		if bearer != "" {
			req.Header.Set("Authorization", "Bearer "+bearer)
		}
		if payment != "" {
			req.Header.Set(x402.HeaderPaymentSignature, payment)
		}
		resp, err := hc.Do(req)
		if err != nil {
			return nil, nil, err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		return resp, b, err
	}
	resp, b, err := send("")
	if err != nil {
		return PaidResponse{}, err
	}
	if resp.StatusCode != http.StatusPaymentRequired {
		return PaidResponse{Status: resp.StatusCode, Body: b}, nil
	}
	pr, err := x402.DecodePaymentRequired(resp.Header.Get(x402.HeaderPaymentRequired))
	if err != nil {
		return PaidResponse{}, fmt.Errorf("the 402 carries no usable PAYMENT-REQUIRED: %w", err)
	}
	// A base58 key pays on the Solana network, a hex key on the EVM one.
	solKey, solErr := solana.PrivateKeyFromBase58(keyHex)
	prefix := "eip155:"
	if solErr == nil {
		prefix = "solana:"
	}
	var offer *x402.PaymentRequirements
	for i := range pr.Accepts {
		if strings.HasPrefix(pr.Accepts[i].Network, prefix) && pr.Accepts[i].Scheme == x402.SchemeExact {
			offer = &pr.Accepts[i]
			break
		}
	}
	if offer == nil {
		return PaidResponse{}, fmt.Errorf("the server offers no %s exact payment", strings.TrimSuffix(prefix, ":"))
	}
	var p x402.PaymentPayload
	if solErr == nil {
		blockhash, err := recentBlockhash(ctx, *offer, solanaRPC)
		if err != nil {
			return PaidResponse{}, err
		}
		p, err = x402.SignSVM(*offer, solKey, blockhash)
	} else {
		var nonce [32]byte
		if _, err := rand.Read(nonce[:]); err != nil {
			return PaidResponse{}, err
		}
		p, err = x402.SignEVM(*offer, keyHex, nonce, time.Now())
	}
	if err != nil {
		return PaidResponse{}, err
	}
	p.Resource = &pr.Resource
	h, err := x402.EncodeHeader(p)
	if err != nil {
		return PaidResponse{}, err
	}
	resp, b, err = send(h)
	if err != nil {
		return PaidResponse{}, err
	}
	out := PaidResponse{Status: resp.StatusCode, Body: b}
	if sr, err := x402.DecodeSettleResponse(resp.Header.Get(x402.HeaderPaymentResponse)); err == nil {
		out.Settlement = &sr
	}
	return out, nil
}

func mintCmd(ctx context.Context, env *Env, args []string) error {
	fs := flag.NewFlagSet("x402 mint", flag.ContinueOnError)
	api := fs.String("api", env.Config.BaseURL(), "the dev server's base URL")
	to := fs.String("to", "", "EVM (0x) or Solana (base58) address to credit; empty: a new EVM wallet whose key is printed")
	usd := fs.String("usd", "10", "USD of play tokens")
	if err := fs.Parse(args); err != nil {
		return err
	}
	addr := *to
	if addr == "" {
		k, err := crypto.GenerateKey()
		if err != nil {
			return err
		}
		addr = crypto.PubkeyToAddress(k.PublicKey).Hex()
		fmt.Fprintf(env.Stdout, "new wallet %s, key %s\n", addr, hexutil.Encode(crypto.FromECDSA(k)))
	}
	payload, _ := json.Marshal(map[string]json.RawMessage{"address": json.RawMessage(fmt.Sprintf("%q", addr)), "usd": json.RawMessage(*usd)})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimRight(*api, "/")+"/dev/x402/mint", bytes.NewReader(payload))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("the dev server at %s is not reachable: %w", *api, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("minting failed (%d): %s", resp.StatusCode, b)
	}
	fmt.Fprintf(env.Stdout, "%s\n", b)
	return nil
}

// recentBlockhash is the blockhash a Solana payment is built on: the
// offer's extra.recentBlockhash, else the network's latest.
func recentBlockhash(ctx context.Context, offer x402.PaymentRequirements, rpcURL string) (solana.Hash, error) {
	if s, ok := offer.Extra["recentBlockhash"].(string); ok && s != "" {
		h, err := solana.HashFromBase58(s)
		if err != nil {
			return h, fmt.Errorf("the offer's extra.recentBlockhash %q is not a base58 hash: %w", s, err)
		}
		return h, nil
	}
	if rpcURL == "" {
		return solana.Hash{}, fmt.Errorf("paying on Solana needs a recent blockhash: pass -rpc with the network's Solana JSON-RPC URL")
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	res, err := rpc.New(rpcURL).GetLatestBlockhash(ctx, rpc.CommitmentFinalized)
	if err != nil {
		return solana.Hash{}, fmt.Errorf("the Solana RPC at %s gave no recent blockhash (set -rpc or CONDUIT_SOLANA_RPC): %w", rpcURL, err)
	}
	return res.Value.Blockhash, nil
}
