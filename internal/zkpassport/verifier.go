package zkpassport

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// Verifier checks what no Go code here can: the UltraHonk proofs against
// zkPassport's circuit registry and the certificate registry root. The
// production implementation is HTTPVerifier, a sidecar running
// zkPassport's own verifier (the SDK's verify on bb.js).
type Verifier interface {
	Verify(ctx context.Context, in SidecarRequest) (SidecarResult, error)
}

// SidecarRequest is the body of zkPassport's proof verifier service
// (zkpassport/zkpassport-proof-verifier, POST /verify).
type SidecarRequest struct {
	Proofs        []Proof         `json:"proofs"`
	OriginalQuery json.RawMessage `json:"originalQuery"`
	QueryResult   any             `json:"queryResult"`
	ServiceConfig ServiceConfig   `json:"serviceConfig"`
}

// SidecarResult is its answer.
type SidecarResult struct {
	Verified             bool            `json:"verified"`
	UniqueIdentifier     string          `json:"uniqueIdentifier,omitempty"`
	UniqueIdentifierType json.RawMessage `json:"uniqueIdentifierType,omitempty"`
	QueryResultErrors    json.RawMessage `json:"queryResultErrors,omitempty"`
	Error                string          `json:"error,omitempty"`
}

// HTTPVerifier calls the sidecar at URL (its base; /verify is appended).
type HTTPVerifier struct {
	URL    string
	Client *http.Client
}

// NewHTTPVerifier is the sidecar client with a timeout.
func NewHTTPVerifier(url string, timeout time.Duration) *HTTPVerifier {
	return &HTTPVerifier{URL: strings.TrimRight(url, "/"), Client: &http.Client{Timeout: timeout}}
}

// Verify posts the bundle. The service answers 200 {verified: true, …}
// or 400 {verified: false, error, queryResultErrors?}: both are results.
// Anything else (another status, a body that is not its answer, no
// answer) is an error: the level is then not checked.
func (v *HTTPVerifier) Verify(ctx context.Context, in SidecarRequest) (SidecarResult, error) {
	body, err := json.Marshal(in)
	if err != nil {
		return SidecarResult{}, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, v.URL+"/verify", bytes.NewReader(body))
	if err != nil {
		return SidecarResult{}, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := v.Client.Do(req)
	if err != nil {
		return SidecarResult{}, fmt.Errorf("the zkPassport verifier did not answer: %w", err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return SidecarResult{}, fmt.Errorf("reading the zkPassport verifier's answer: %w", err)
	}
	if resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusBadRequest {
		return SidecarResult{}, fmt.Errorf("the zkPassport verifier answered HTTP %d", resp.StatusCode)
	}
	var out struct {
		SidecarResult
		Verified *bool `json:"verified"`
	}
	if err := json.Unmarshal(raw, &out); err != nil || out.Verified == nil {
		return SidecarResult{}, fmt.Errorf("the zkPassport verifier's answer (HTTP %d) is not a verification result", resp.StatusCode)
	}
	res := out.SidecarResult
	res.Verified = *out.Verified && resp.StatusCode == http.StatusOK
	return res, nil
}
