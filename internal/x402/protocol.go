// Package x402 implements the x402 v2 payment protocol for a resource
// server: the wire types, the standard-base64 JSON header codec, the
// challenge a 402 carries, matching a presented payment to what was
// offered, the EVM exact-scheme (EIP-3009) signature check, and the
// facilitator interface with its HTTP client.
package x402

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"conduit/internal/money"
)

// Version is the protocol version this package speaks.
const Version = 2

// Header names (HTTP treats them case-insensitively).
const (
	HeaderPaymentRequired  = "PAYMENT-REQUIRED"
	HeaderPaymentSignature = "PAYMENT-SIGNATURE"
	HeaderPaymentResponse  = "PAYMENT-RESPONSE"
)

// SchemeExact is the only scheme offered.
const SchemeExact = "exact"

// ResourceInfo describes what is being paid for.
type ResourceInfo struct {
	URL         string `json:"url"`
	Description string `json:"description,omitempty"`
	MimeType    string `json:"mimeType,omitempty"`
}

// PaymentRequirements is one way to pay (one entry of accepts).
type PaymentRequirements struct {
	Scheme  string `json:"scheme"`
	Network string `json:"network"`
	// Amount is in the asset's atomic units, as a decimal string.
	Amount            string         `json:"amount"`
	Asset             string         `json:"asset"`
	PayTo             string         `json:"payTo"`
	MaxTimeoutSeconds int            `json:"maxTimeoutSeconds"`
	Extra             map[string]any `json:"extra,omitempty"`
}

// PaymentRequired is the 402 challenge.
type PaymentRequired struct {
	X402Version int                   `json:"x402Version"`
	Error       string                `json:"error,omitempty"`
	Resource    ResourceInfo          `json:"resource"`
	Accepts     []PaymentRequirements `json:"accepts"`
	Extensions  map[string]any        `json:"extensions,omitempty"`
}

// PaymentPayload is what a client presents in PAYMENT-SIGNATURE.
type PaymentPayload struct {
	X402Version int                 `json:"x402Version"`
	Resource    *ResourceInfo       `json:"resource,omitempty"`
	Accepted    PaymentRequirements `json:"accepted"`
	Payload     json.RawMessage     `json:"payload"`
	Extensions  map[string]any      `json:"extensions,omitempty"`
}

// SettleResponse is a settlement's outcome (PAYMENT-RESPONSE).
type SettleResponse struct {
	Success      bool   `json:"success"`
	ErrorReason  string `json:"errorReason,omitempty"`
	ErrorMessage string `json:"errorMessage,omitempty"`
	Payer        string `json:"payer,omitempty"`
	Transaction  string `json:"transaction"`
	Network      string `json:"network"`
	Amount       string `json:"amount,omitempty"`
}

// VerifyResponse is a verification's outcome.
type VerifyResponse struct {
	IsValid        bool   `json:"isValid"`
	InvalidReason  string `json:"invalidReason,omitempty"`
	InvalidMessage string `json:"invalidMessage,omitempty"`
	Payer          string `json:"payer,omitempty"`
}

// MaxHeaderBytes bounds a decoded header; payloads are a few KB.
const MaxHeaderBytes = 64 << 10

// EncodeHeader is standard base64 (padded, +/) of compact JSON, as the
// official clients expect.
func EncodeHeader(v any) (string, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return "", err
	}
	return base64.StdEncoding.EncodeToString(b), nil
}

// ErrMalformed wraps every decoding failure of a presented header.
var ErrMalformed = errors.New("malformed x402 header")

// decodeHeader reads standard base64 JSON into v, strictly: URL-safe
// base64, oversized input, trailing data and non-objects are refused.
func decodeHeader(h string, v any) error {
	h = strings.TrimSpace(h)
	if h == "" {
		return fmt.Errorf("%w: empty", ErrMalformed)
	}
	if len(h) > base64.StdEncoding.EncodedLen(MaxHeaderBytes) {
		return fmt.Errorf("%w: larger than %d bytes", ErrMalformed, MaxHeaderBytes)
	}
	raw, err := base64.StdEncoding.Strict().DecodeString(h)
	if err != nil {
		return fmt.Errorf("%w: not standard base64", ErrMalformed)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("%w: not the expected JSON object: %v", ErrMalformed, err)
	}
	if dec.More() {
		return fmt.Errorf("%w: trailing data after the JSON object", ErrMalformed)
	}
	return nil
}

// DecodePaymentPayload reads a PAYMENT-SIGNATURE header and checks the
// fields every scheme needs.
func DecodePaymentPayload(h string) (PaymentPayload, error) {
	var p PaymentPayload
	if err := decodeHeader(h, &p); err != nil {
		return p, err
	}
	switch {
	case p.X402Version != Version:
		return p, fmt.Errorf("%w: x402Version must be %d", ErrMalformed, Version)
	case p.Accepted.Scheme == "" || p.Accepted.Network == "":
		return p, fmt.Errorf("%w: accepted must name a scheme and a network", ErrMalformed)
	case len(p.Payload) == 0 || p.Payload[0] != '{':
		return p, fmt.Errorf("%w: payload must be an object", ErrMalformed)
	}
	return p, nil
}

// DecodePaymentRequired reads a PAYMENT-REQUIRED header (clients, tests).
func DecodePaymentRequired(h string) (PaymentRequired, error) {
	var p PaymentRequired
	err := decodeHeader(h, &p)
	return p, err
}

// DecodeSettleResponse reads a PAYMENT-RESPONSE header (clients, tests).
func DecodeSettleResponse(h string) (SettleResponse, error) {
	var s SettleResponse
	err := decodeHeader(h, &s)
	return s, err
}

// Offer is one network this deployment accepts payment on.
type Offer struct {
	Network string
	Asset   string
	PayTo   string
	// Extra: EVM {name, version} of the token's EIP-712 domain; Solana
	// {feePayer}.
	Extra map[string]any
}

// DefaultMaxTimeoutSeconds is how long a signed payment stays usable.
const DefaultMaxTimeoutSeconds = 300

// Challenge builds the 402 body for a price. The token has 6 decimals, so
// an amount in micro-USD is already in atomic units. Offers keep their
// order: the first network first.
func Challenge(resource ResourceInfo, price money.Micros, offers []Offer, reason string) PaymentRequired {
	pr := PaymentRequired{X402Version: Version, Error: reason, Resource: resource, Accepts: []PaymentRequirements{}}
	for _, o := range offers {
		pr.Accepts = append(pr.Accepts, PaymentRequirements{
			Scheme: SchemeExact, Network: o.Network, Amount: fmt.Sprint(int64(price)), Asset: o.Asset, PayTo: o.PayTo,
			MaxTimeoutSeconds: DefaultMaxTimeoutSeconds, Extra: o.Extra,
		})
	}
	return pr
}

// ErrNoMatch: the payment does not answer any offer of the challenge.
var ErrNoMatch = errors.New("no matching payment requirements")

// Match finds the offered requirements the payment answers: same scheme,
// network, amount, asset and recipient (addresses compared without case on
// EVM). The server then settles against its own requirements, never the
// client's copy.
func Match(p PaymentPayload, offered []PaymentRequirements) (PaymentRequirements, error) {
	a := p.Accepted
	for _, r := range offered {
		if a.Scheme == r.Scheme && a.Network == r.Network && a.Amount == r.Amount &&
			sameAddress(r.Network, a.Asset, r.Asset) && sameAddress(r.Network, a.PayTo, r.PayTo) {
			return r, nil
		}
	}
	return PaymentRequirements{}, ErrNoMatch
}

func sameAddress(network, a, b string) bool {
	if strings.HasPrefix(network, "eip155:") {
		return strings.EqualFold(a, b)
	}
	return a == b
}
