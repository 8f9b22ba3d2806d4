package x402

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"conduit/internal/telemetry"
)

// Facilitator verifies and settles payments (the x402 facilitator API).
type Facilitator interface {
	Verify(ctx context.Context, p PaymentPayload, req PaymentRequirements) (VerifyResponse, error)
	Settle(ctx context.Context, p PaymentPayload, req PaymentRequirements) (SettleResponse, error)
	Supported(ctx context.Context) (Supported, error)
}

// SupportedKind is one scheme/network pair a facilitator handles.
type SupportedKind struct {
	X402Version int            `json:"x402Version"`
	Scheme      string         `json:"scheme"`
	Network     string         `json:"network"`
	Extra       map[string]any `json:"extra,omitempty"`
}

// Supported is GET /supported.
type Supported struct {
	Kinds      []SupportedKind     `json:"kinds"`
	Extensions []string            `json:"extensions"`
	Signers    map[string][]string `json:"signers"`
}

// HTTPFacilitator calls a facilitator over the standard HTTP API.
type HTTPFacilitator struct {
	BaseURL string
	// Headers are added to every call: the authentication a main-network
	// facilitator needs (for example Authorization: Bearer <key>).
	Headers map[string]string
	Client  *http.Client
}

// NewHTTPFacilitator builds a client; the base URL's trailing slash is
// dropped as the official clients do.
func NewHTTPFacilitator(baseURL string, headers map[string]string, timeout time.Duration) *HTTPFacilitator {
	return &HTTPFacilitator{BaseURL: strings.TrimRight(baseURL, "/"), Headers: headers, Client: &http.Client{Timeout: timeout, Transport: telemetry.Transport(nil)}}
}

type facilitatorRequest struct {
	X402Version         int                 `json:"x402Version"`
	PaymentPayload      PaymentPayload      `json:"paymentPayload"`
	PaymentRequirements PaymentRequirements `json:"paymentRequirements"`
}

// FacilitatorError is a facilitator that could not be asked (transport
// error, or an answer that is not the protocol's JSON).
type FacilitatorError struct {
	Status int
	Msg    string
}

func (e *FacilitatorError) Error() string {
	if e.Status == 0 {
		return "facilitator unreachable: " + e.Msg
	}
	return fmt.Sprintf("facilitator answered %d: %s", e.Status, e.Msg)
}

// Verify asks POST /verify.
func (f *HTTPFacilitator) Verify(ctx context.Context, p PaymentPayload, req PaymentRequirements) (VerifyResponse, error) {
	var out VerifyResponse
	err := f.call(ctx, http.MethodPost, "/verify", facilitatorRequest{Version, p, req}, &out, func() bool { return !out.IsValid && out.InvalidReason != "" })
	return out, err
}

// Settle asks POST /settle.
func (f *HTTPFacilitator) Settle(ctx context.Context, p PaymentPayload, req PaymentRequirements) (SettleResponse, error) {
	var out SettleResponse
	err := f.call(ctx, http.MethodPost, "/settle", facilitatorRequest{Version, p, req}, &out, func() bool { return !out.Success && out.ErrorReason != "" })
	return out, err
}

// Supported asks GET /supported.
func (f *HTTPFacilitator) Supported(ctx context.Context) (Supported, error) {
	var out Supported
	err := f.call(ctx, http.MethodGet, "/supported", nil, &out, func() bool { return false })
	return out, err
}

// call sends one request. A refusal may come back with a non-2xx status
// and the protocol's JSON body (as the official clients accept);
// isRefusal says whether the decoded body is one.
func (f *HTTPFacilitator) call(ctx context.Context, method, path string, body, out any, isRefusal func() bool) error {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, f.BaseURL+path, rd)
	if err != nil {
		return err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range f.Headers {
		req.Header.Set(k, v)
	}
	resp, err := f.Client.Do(req)
	if err != nil {
		return &FacilitatorError{Msg: err.Error()}
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return &FacilitatorError{Status: resp.StatusCode, Msg: err.Error()}
	}
	decodeErr := json.Unmarshal(raw, out)
	if resp.StatusCode/100 == 2 && decodeErr == nil {
		return nil
	}
	if decodeErr == nil && isRefusal() {
		return nil
	}
	msg := strings.TrimSpace(string(raw))
	if len(msg) > 300 {
		msg = msg[:300]
	}
	return &FacilitatorError{Status: resp.StatusCode, Msg: msg}
}
