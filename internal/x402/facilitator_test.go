package x402

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// fakeFacilitator plays the facilitator HTTP API: bearer auth, /verify and
// /settle answering refusals with 200 + isValid:false (and, like some
// deployments, 400 + the same body), /supported.
func fakeFacilitator(t *testing.T) *httptest.Server {
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer fac-key" {
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = w.Write([]byte(`{"message":"unauthorized"}`))
			return
		}
		switch r.URL.Path {
		case "/facilitator/supported":
			_, _ = w.Write([]byte(`{"kinds":[{"x402Version":2,"scheme":"exact","network":"eip155:8453"},{"x402Version":2,"scheme":"exact","network":"solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp","extra":{"feePayer":"Fee1"}}],"extensions":[],"signers":{"eip155:*":["0xabc"]}}`))
		case "/facilitator/verify", "/facilitator/settle":
			var req facilitatorRequest
			if err := json.NewDecoder(r.Body).Decode(&req); err != nil || req.X402Version != 2 || req.PaymentRequirements.Amount == "" {
				w.WriteHeader(http.StatusBadRequest)
				_, _ = w.Write([]byte(`not json`))
				return
			}
			switch {
			case req.PaymentRequirements.Amount == "666" && r.URL.Path == "/facilitator/verify":
				w.WriteHeader(http.StatusBadRequest)
				_, _ = w.Write([]byte(`{"isValid":false,"invalidReason":"invalid_exact_evm_signature","payer":"0xp"}`))
			case req.PaymentRequirements.Amount == "666":
				_, _ = w.Write([]byte(`{"success":false,"errorReason":"invalid_exact_evm_insufficient_balance","transaction":"","network":"eip155:8453"}`))
			case r.URL.Path == "/facilitator/verify":
				_, _ = w.Write([]byte(`{"isValid":true,"payer":"0xp"}`))
			default:
				_, _ = w.Write([]byte(`{"success":true,"transaction":"0xtx","network":"eip155:8453","payer":"0xp"}`))
			}
		default:
			w.WriteHeader(http.StatusNotFound)
		}
	}))
}

func TestHTTPFacilitator(t *testing.T) {
	srv := fakeFacilitator(t)
	defer srv.Close()
	f := NewHTTPFacilitator(srv.URL+"/facilitator/", map[string]string{"Authorization": "Bearer fac-key"}, 5*time.Second)
	ctx := context.Background()
	req := PaymentRequirements{Scheme: "exact", Network: "eip155:8453", Amount: "5000000"}
	p := PaymentPayload{X402Version: 2, Accepted: req, Payload: json.RawMessage(`{}`)}

	sup, err := f.Supported(ctx)
	if err != nil || len(sup.Kinds) != 2 || sup.Kinds[1].Extra["feePayer"] != "Fee1" {
		t.Fatalf("%+v %v", sup, err)
	}
	if v, err := f.Verify(ctx, p, req); err != nil || !v.IsValid || v.Payer != "0xp" {
		t.Fatalf("%+v %v", v, err)
	}
	if s, err := f.Settle(ctx, p, req); err != nil || !s.Success || s.Transaction != "0xtx" {
		t.Fatalf("%+v %v", s, err)
	}
	req.Amount = "666"
	if v, err := f.Verify(ctx, p, req); err != nil || v.IsValid || v.InvalidReason != "invalid_exact_evm_signature" {
		t.Fatalf("refusal with 400: %+v %v", v, err)
	}
	if s, err := f.Settle(ctx, p, req); err != nil || s.Success || s.ErrorReason != "invalid_exact_evm_insufficient_balance" {
		t.Fatalf("%+v %v", s, err)
	}
	req.Amount = ""
	var fe *FacilitatorError
	if _, err := f.Verify(ctx, p, req); !errors.As(err, &fe) || fe.Status != 400 {
		t.Fatalf("garbage answer: %v", err)
	}
	noAuth := NewHTTPFacilitator(srv.URL+"/facilitator", nil, 5*time.Second)
	if _, err := noAuth.Supported(ctx); !errors.As(err, &fe) || fe.Status != 401 {
		t.Fatalf("unauthenticated: %v", err)
	}
	srv.Close()
	if _, err := f.Supported(ctx); !errors.As(err, &fe) || fe.Status != 0 {
		t.Fatalf("unreachable: %v", err)
	}
}
