// Package svmrpc serves the embedded Solana network over the standard
// Solana JSON-RPC API, so that unmodified Solana clients and wallets (the
// official x402 client among them) can read the mint, balances and recent
// blockhashes and look settled payments up. The result shapes are
// solana-go's rpc types, which mirror the validator's answers; account data
// is encoded with the SPL token program's layouts.
package svmrpc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"sync"
	"time"

	"conduit/internal/x402"

	"github.com/gagliardetto/solana-go"
	"github.com/gagliardetto/solana-go/rpc/jsonrpc"
)

// Ledger is what the RPC reads of the embedded network's token ledger.
type Ledger interface {
	// Balance is owner's balance of mint, and whether owner has a token
	// account for it.
	Balance(ctx context.Context, mint, owner string) (amount uint64, exists bool, err error)
	// Holders lists the owners that have a token account for mint.
	Holders(ctx context.Context, mint string) ([]string, error)
	// Supply is the total held of mint.
	Supply(ctx context.Context, mint string) (uint64, error)
	// Transaction is the settled transaction with this signature: its
	// fully signed wire bytes and when it was settled.
	Transaction(ctx context.Context, signature string) (tx []byte, at time.Time, found bool, err error)
}

// Network is the embedded network as the RPC shows it.
type Network struct {
	Clock  *x402.SVMClock
	Ledger Ledger
	// Mint is the play token (an SPL token with Decimals decimals) and
	// MintAuthority the key shown as its mint authority.
	Mint          solana.PublicKey
	MintAuthority solana.PublicKey
	Decimals      uint8
	// FeePayer is the facilitator's fee payer: the one system account
	// with lamports, since the ledger charges no fees.
	FeePayer solana.PublicKey
	// Payees hold token accounts from genesis, even before their first
	// payment: the official client does not create the destination
	// account, so a payee's must exist.
	Payees []solana.PublicKey

	// atas remembers which owner an associated token account belongs to:
	// the address is a one-way derivation, so it is found by deriving the
	// holders' addresses.
	atas sync.Map // solana.PublicKey → solana.PublicKey
}

// Rent-exempt minimums of the validator's default rent (3480 lamports per
// byte-year, two years, plus the 128-byte account overhead).
const (
	mintSize            = 82
	tokenAccountSize    = 165
	feePayerLamports    = 1_000 * solana.LAMPORTS_PER_SOL
	lamportsPerSig      = 5000
	maxRequestBodyBytes = 1 << 20
	maxBatch            = 100
)

// RentExempt is getMinimumBalanceForRentExemption's answer for size bytes
// (at most maxRentSize; beyond, the product wraps).
func RentExempt(size uint64) uint64 { return (size + 128) * 3480 * 2 }

// maxRentSize is the largest size whose rent-exempt minimum fits a uint64.
const maxRentSize = math.MaxUint64/(3480*2) - 128

// Handler serves JSON-RPC 2.0 requests (single or batched) on POST.
func (n *Network) Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Any origin, as the validator allows: browser wallets and dapps
		// call it from their own pages, and nothing it serves changes
		// state.
		w.Header().Set("Access-Control-Allow-Origin", "*")
		if r.Method == http.MethodOptions {
			w.Header().Set("Access-Control-Allow-Methods", "POST, OPTIONS")
			w.Header().Set("Access-Control-Allow-Headers", "Content-Type, solana-client")
			w.WriteHeader(http.StatusOK)
			return
		}
		if r.Method != http.MethodPost {
			w.Header().Set("Allow", "POST, OPTIONS")
			http.Error(w, "Used HTTP Method is not allowed. POST or OPTIONS is required", http.StatusMethodNotAllowed)
			return
		}
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxRequestBodyBytes))
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		if err != nil {
			var tooLarge *http.MaxBytesError
			if errors.As(err, &tooLarge) {
				writeJSON(w, errorResponse(nil, &jsonrpc.RPCError{Code: errInvalidRequest.Code,
					Message: fmt.Sprintf("%s: a request body holds at most %d bytes", errInvalidRequest.Message, maxRequestBodyBytes)}))
				return
			}
			writeJSON(w, errorResponse(nil, errParse))
			return
		}
		writeJSON(w, n.serve(r.Context(), body))
	})
}

func writeJSON(w http.ResponseWriter, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		b, _ = json.Marshal(errorResponse(nil, errInternal))
	}
	_, _ = w.Write(b)
}

type request struct {
	JSONRPC string            `json:"jsonrpc"`
	ID      json.RawMessage   `json:"id"`
	Method  string            `json:"method"`
	Params  []json.RawMessage `json:"params"`
}

// serve answers one request or a batch, as the validator does: a parse
// error for bad JSON, an invalid-request error per malformed entry.
func (n *Network) serve(ctx context.Context, body []byte) any {
	var batch []json.RawMessage
	if err := json.Unmarshal(body, &batch); err == nil {
		if len(batch) == 0 {
			return errorResponse(nil, errInvalidRequest)
		}
		// One request may not buy unbounded work: a batch over the limit
		// is refused whole, as a single error.
		if len(batch) > maxBatch {
			return errorResponse(nil, &jsonrpc.RPCError{Code: errInvalidRequest.Code,
				Message: fmt.Sprintf("%s: a batch holds at most %d calls", errInvalidRequest.Message, maxBatch)})
		}
		out := make([]*jsonrpc.RPCResponse, 0, len(batch))
		for _, raw := range batch {
			out = append(out, n.one(ctx, raw))
		}
		return out
	}
	if !json.Valid(body) {
		return errorResponse(nil, errParse)
	}
	return n.one(ctx, body)
}

func (n *Network) one(ctx context.Context, raw json.RawMessage) *jsonrpc.RPCResponse {
	var req request
	if err := json.Unmarshal(raw, &req); err != nil || req.JSONRPC != "2.0" || req.Method == "" {
		return errorResponse(nil, errInvalidRequest)
	}
	id := any(json.RawMessage("null"))
	if len(req.ID) > 0 {
		id = req.ID
	}
	m, ok := n.methods()[req.Method]
	if !ok {
		return errorResponse(id, errMethodNotFound)
	}
	res, rerr := m(ctx, params(req.Params))
	if rerr != nil {
		return errorResponse(id, rerr)
	}
	b, err := json.Marshal(res)
	if err != nil {
		return errorResponse(id, errInternal)
	}
	return &jsonrpc.RPCResponse{JSONRPC: "2.0", Result: b, ID: id}
}

func errorResponse(id any, e *jsonrpc.RPCError) *jsonrpc.RPCResponse {
	if id == nil {
		id = json.RawMessage("null")
	}
	return &jsonrpc.RPCResponse{JSONRPC: "2.0", Error: e, ID: id}
}

// The validator's JSON-RPC errors (jsonrpc-core's codes and messages, and
// Solana's server errors).
var (
	errParse          = &jsonrpc.RPCError{Code: -32700, Message: "Parse error"}
	errInvalidRequest = &jsonrpc.RPCError{Code: -32600, Message: "Invalid request"}
	errMethodNotFound = &jsonrpc.RPCError{Code: -32601, Message: "Method not found"}
	errInternal       = &jsonrpc.RPCError{Code: -32603, Message: "Internal error"}
)

func invalidParams(msg string) *jsonrpc.RPCError {
	return &jsonrpc.RPCError{Code: -32602, Message: msg}
}

// The listener's connection limits: the API's defaults (http.* in
// internal/config). Every answer is small and written at once, so unlike
// the API's streams a whole-answer WriteTimeout fits.
const (
	readHeaderTimeout = 10 * time.Second
	readTimeout       = 30 * time.Second
	writeTimeout      = 30 * time.Second
	idleTimeout       = 60 * time.Second
	maxHeaderBytes    = 64 << 10
)

// Server is the http.Server that serves Handler, with the API's read,
// write and idle timeouts.
func (n *Network) Server() *http.Server {
	return &http.Server{
		Handler:           n.Handler(),
		ReadHeaderTimeout: readHeaderTimeout,
		ReadTimeout:       readTimeout,
		WriteTimeout:      writeTimeout,
		IdleTimeout:       idleTimeout,
		MaxHeaderBytes:    maxHeaderBytes,
	}
}
