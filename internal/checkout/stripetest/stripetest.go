// Package stripetest is a stand-in for the part of Stripe's API this
// service calls, for tests: an httptest server that answers
// POST /v1/checkout/sessions as Stripe does (form-encoded parameters,
// bearer secret key, Stripe-Version header, JSON Checkout Session object
// with livemode false, Stripe's error shape for a missing parameter), and
// builds the checkout.session.completed event Stripe sends when a session
// is paid.
package stripetest

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/stripe/stripe-go/v85"
)

// Key is the secret key the stand-in accepts.
const Key = "sk_test_conduit_stand_in_key"

// Server is the stand-in Stripe API.
type Server struct {
	*httptest.Server
	mu       sync.Mutex
	sessions map[string]map[string]any
	// Requests are the form bodies received, in order.
	Requests []url.Values
	// IdempotencyKeys are the Idempotency-Key headers received.
	IdempotencyKeys []string
}

// New starts the stand-in; Close stops it.
func New() *Server {
	s := &Server{sessions: map[string]map[string]any{}}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	return s
}

func stripeError(w http.ResponseWriter, status int, typ, msg, param string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	e := map[string]any{"type": typ, "message": msg}
	if param != "" {
		e["param"], e["code"] = param, "parameter_missing"
	}
	_ = json.NewEncoder(w).Encode(map[string]any{"error": e})
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("Authorization") != "Bearer "+Key {
		stripeError(w, http.StatusUnauthorized, "invalid_request_error", "Invalid API Key provided: sk_test_****", "")
		return
	}
	if r.Method != http.MethodPost || r.URL.Path != "/v1/checkout/sessions" {
		stripeError(w, http.StatusNotFound, "invalid_request_error", "Unrecognized request URL ("+r.Method+": "+r.URL.Path+").", "")
		return
	}
	if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/x-www-form-urlencoded") {
		stripeError(w, http.StatusBadRequest, "invalid_request_error", "Invalid request: expected a form-encoded body", "")
		return
	}
	if err := r.ParseForm(); err != nil {
		stripeError(w, http.StatusBadRequest, "invalid_request_error", "Invalid request body", "")
		return
	}
	f := r.PostForm
	s.mu.Lock()
	s.Requests = append(s.Requests, f)
	s.IdempotencyKeys = append(s.IdempotencyKeys, r.Header.Get("Idempotency-Key"))
	s.mu.Unlock()
	for _, p := range []string{"mode", "success_url", "line_items[0][quantity]", "line_items[0][price_data][currency]",
		"line_items[0][price_data][unit_amount]", "line_items[0][price_data][product_data][name]"} {
		if f.Get(p) == "" {
			stripeError(w, http.StatusBadRequest, "invalid_request_error", "Missing required param: "+p+".", p)
			return
		}
	}
	if f.Get("mode") != "payment" {
		stripeError(w, http.StatusBadRequest, "invalid_request_error", "This stand-in plays payment mode only.", "mode")
		return
	}
	qty, err1 := strconv.ParseInt(f.Get("line_items[0][quantity]"), 10, 64)
	unit, err2 := strconv.ParseInt(f.Get("line_items[0][price_data][unit_amount]"), 10, 64)
	if err1 != nil || err2 != nil || qty < 1 || unit < 50 {
		stripeError(w, http.StatusBadRequest, "invalid_request_error", "Invalid integer or an amount below the minimum of 50 cents.", "line_items[0][price_data][unit_amount]")
		return
	}
	now := time.Now().Unix()
	expires := now + 24*3600
	if e := f.Get("expires_at"); e != "" {
		v, err := strconv.ParseInt(e, 10, 64)
		if err != nil || v < now+1800-60 || v > now+24*3600+60 {
			stripeError(w, http.StatusBadRequest, "invalid_request_error", "The `expires_at` timestamp must be between 30 minutes and 24 hours from now.", "expires_at")
			return
		}
		expires = v
	}
	metadata := map[string]string{}
	for k, v := range f {
		if strings.HasPrefix(k, "metadata[") && strings.HasSuffix(k, "]") {
			metadata[k[len("metadata["):len(k)-1]] = v[0]
		}
	}
	id := "cs_test_" + random(24)
	var clientRef any
	if v := f.Get("client_reference_id"); v != "" {
		clientRef = v
	}
	cs := map[string]any{
		"id": id, "object": "checkout.session", "amount_subtotal": unit * qty, "amount_total": unit * qty,
		"cancel_url": nullable(f.Get("cancel_url")), "client_reference_id": clientRef, "created": now,
		"currency": f.Get("line_items[0][price_data][currency]"), "expires_at": expires, "livemode": false, "metadata": metadata,
		"mode": "payment", "payment_intent": nil, "payment_status": "unpaid", "status": "open",
		"success_url": f.Get("success_url"), "url": "https://checkout.stripe.com/c/pay/" + id + "#fid" + random(16),
	}
	s.mu.Lock()
	s.sessions[id] = cs
	s.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Request-Id", "req_"+random(14))
	w.Header().Set("Stripe-Version", r.Header.Get("Stripe-Version"))
	_ = json.NewEncoder(w).Encode(cs)
}

func nullable(v string) any {
	if v == "" {
		return nil
	}
	return v
}

func random(n int) string {
	b := make([]byte, n/2)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// Completed is the checkout.session.completed event Stripe sends once
// session id is paid (the event body, unsigned), or an error when the
// stand-in opened no such session.
func (s *Server) Completed(id string) ([]byte, error) {
	s.mu.Lock()
	cs, ok := s.sessions[id]
	s.mu.Unlock()
	if !ok {
		return nil, fmt.Errorf("no session %s", id)
	}
	paid := map[string]any{}
	for k, v := range cs {
		paid[k] = v
	}
	paid["payment_status"], paid["status"], paid["url"], paid["payment_intent"] = "paid", "complete", nil, "pi_"+random(24)
	return json.Marshal(map[string]any{
		"id": "evt_" + random(24), "object": "event", "api_version": stripe.APIVersion, "created": time.Now().Unix(),
		"data": map[string]any{"object": paid}, "livemode": false, "pending_webhooks": 1,
		"request": map[string]any{"id": nil, "idempotency_key": nil}, "type": "checkout.session.completed",
	})
}
