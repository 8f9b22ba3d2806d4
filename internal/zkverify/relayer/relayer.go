// Package relayer is a client of a zkVerify relayer's REST API (Kurier,
// formerly the Horizen relayer): register-vk, submit-proof and job-status,
// with the API key as a path segment. Proof types we cannot verify here
// (risc0 and sp1 STARK receipts; ultraplonk, ultrahonk and ezkl, which have
// no Go verifier) are verified by the relayer's chain, never by us.
package relayer

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// Client calls one relayer.
type Client struct {
	// BaseURL ends in /api/v1 (no trailing slash needed).
	BaseURL string
	APIKey  string
	HTTP    *http.Client
}

// New is a client with a bounded HTTP timeout.
func New(baseURL, apiKey string) *Client {
	return &Client{BaseURL: strings.TrimRight(baseURL, "/"), APIKey: apiKey, HTTP: &http.Client{Timeout: 30 * time.Second}}
}

// Error is a relayer's refusal (a 4xx: retrying cannot help) or failure.
type Error struct {
	Status int
	Msg    string
}

func (e *Error) Error() string { return fmt.Sprintf("relayer answered %d: %s", e.Status, e.Msg) }

// Permanent: a 4xx refusal will be refused again (activities.Classify).
func (e *Error) Permanent() bool {
	return e.Status >= 400 && e.Status < 500 && e.Status != http.StatusTooManyRequests
}

// RegisterVK is register-vk's body.
type RegisterVK struct {
	ProofType    string          `json:"proofType"`
	ProofOptions json.RawMessage `json:"proofOptions,omitempty"`
	VK           json.RawMessage `json:"vk"`
}

// Registered is register-vk's answer; a key registered before answers an
// error whose body still carries the hash (vkHash or meta.vkHash).
type Registered struct {
	VKHash            string `json:"vkHash"`
	AlreadyRegistered bool   `json:"alreadyRegistered,omitempty"`
}

// RegisterVK registers a key and answers its hash, a key already
// registered included.
func (c *Client) RegisterVK(ctx context.Context, in RegisterVK) (Registered, error) {
	var out struct {
		VKHash string `json:"vkHash"`
		Meta   struct {
			VKHash string `json:"vkHash"`
		} `json:"meta"`
	}
	err := c.do(ctx, http.MethodPost, "register-vk", nil, in, &out)
	hash := out.VKHash
	if hash == "" {
		hash = out.Meta.VKHash
	}
	var re *Error
	if err != nil && errors.As(err, &re) && hash != "" {
		return Registered{VKHash: hash, AlreadyRegistered: true}, nil
	}
	if err != nil {
		return Registered{}, err
	}
	if hash == "" {
		return Registered{}, errors.New("relayer answered register-vk without a vkHash")
	}
	return Registered{VKHash: hash}, nil
}

// ProofData is submit-proof's proofData.
type ProofData struct {
	Proof         json.RawMessage `json:"proof"`
	PublicSignals json.RawMessage `json:"publicSignals,omitempty"`
	VK            string          `json:"vk"`
}

// SubmitProof is submit-proof's body.
type SubmitProof struct {
	ProofType    string          `json:"proofType"`
	VKRegistered bool            `json:"vkRegistered"`
	ChainID      *int64          `json:"chainId,omitempty"`
	ProofOptions json.RawMessage `json:"proofOptions,omitempty"`
	ProofData    ProofData       `json:"proofData"`
}

// Submitted is submit-proof's answer.
type Submitted struct {
	JobID            string `json:"jobId"`
	OptimisticVerify string `json:"optimisticVerify"`
}

// SubmitProof submits a proof; an optimisticVerify other than "success"
// is a refusal.
func (c *Client) SubmitProof(ctx context.Context, in SubmitProof) (Submitted, error) {
	var out Submitted
	if err := c.do(ctx, http.MethodPost, "submit-proof", nil, in, &out); err != nil {
		return out, err
	}
	if out.JobID == "" {
		return out, &Error{Status: http.StatusBadGateway, Msg: "submit-proof answered no jobId"}
	}
	return out, nil
}

// AggregationDetails are a job's aggregation's, once aggregated.
type AggregationDetails struct {
	Receipt          string   `json:"receipt,omitempty"`
	ReceiptBlockHash string   `json:"receiptBlockHash,omitempty"`
	Root             string   `json:"root,omitempty"`
	Leaf             string   `json:"leaf,omitempty"`
	LeafIndex        int      `json:"leafIndex"`
	NumberOfLeaves   int      `json:"numberOfLeaves"`
	MerkleProof      []string `json:"merkleProof"`
}

// JobStatus is job-status's answer.
type JobStatus struct {
	JobID              string              `json:"jobId"`
	Status             string              `json:"status"`
	StatusID           int                 `json:"statusId"`
	ProofType          string              `json:"proofType"`
	ChainID            *int64              `json:"chainId,omitempty"`
	CreatedAt          string              `json:"createdAt,omitempty"`
	UpdatedAt          string              `json:"updatedAt,omitempty"`
	TxHash             string              `json:"txHash,omitempty"`
	BlockHash          string              `json:"blockHash,omitempty"`
	AggregationID      *uint64             `json:"aggregationId,omitempty"`
	Statement          string              `json:"statement,omitempty"`
	AggregationDetails *AggregationDetails `json:"aggregationDetails,omitempty"`
	Error              string              `json:"error,omitempty"`
}

// JobStatus reads a job's status.
func (c *Client) JobStatus(ctx context.Context, jobID string) (JobStatus, error) {
	var out JobStatus
	err := c.do(ctx, http.MethodGet, "job-status", []string{jobID}, nil, &out)
	return out, err
}

// do calls base/op/{apiKey}[/extra…] with a JSON body; a non-2xx answer is
// an *Error, its body decoded into out all the same (register-vk's hash).
func (c *Client) do(ctx context.Context, method, op string, extra []string, body, out any) error {
	u := c.BaseURL + "/" + op + "/" + url.PathEscape(c.APIKey)
	for _, e := range extra {
		u += "/" + url.PathEscape(e)
	}
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, u, rd)
	if err != nil {
		return err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.HTTP.Do(req)
	if err != nil {
		// The URL carries the API key: the error names the operation only.
		return fmt.Errorf("relayer %s could not be reached: %w", op, errors.Unwrap(err))
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return fmt.Errorf("relayer %s: reading the answer: %w", op, err)
	}
	decodeErr := json.Unmarshal(b, out)
	if resp.StatusCode/100 != 2 {
		var msg struct {
			Message string `json:"message"`
			Error   string `json:"error"`
		}
		_ = json.Unmarshal(b, &msg)
		m := msg.Message
		if m == "" {
			m = msg.Error
		}
		if m == "" {
			m = http.StatusText(resp.StatusCode)
		}
		return &Error{Status: resp.StatusCode, Msg: m}
	}
	if decodeErr != nil {
		return &Error{Status: http.StatusBadGateway, Msg: op + " answered something other than JSON"}
	}
	return nil
}
