// Package relayertest plays a zkVerify relayer (Kurier's REST API) over
// httptest, for tests of the relay adapter: the API key is a path segment;
// register-vk answers a hash and, for a key registered before, an error
// whose body still carries it; submit-proof answers a jobId and
// optimisticVerify; job-status moves one status per read through the
// relayer's order, with the fields each status carries.
package relayertest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"time"

	"github.com/ethereum/go-ethereum/crypto"
)

// Proofs with these values behave so.
const (
	// RejectedProof fails optimistic verification at submit-proof.
	RejectedProof = "rejected"
	// FailingProof is accepted, then fails on chain after Submitted.
	FailingProof = "fails-on-chain"
)

var order = []string{"Queued", "Valid", "Submitted", "IncludedInBlock", "Finalized", "AggregationPending", "Aggregated", "AggregationPublished"}

var statusIDs = map[string]int{"Queued": 0, "Valid": 1, "Submitted": 2, "IncludedInBlock": 3, "Finalized": 4,
	"AggregationPending": 5, "Aggregated": 6, "AggregationPublished": 7}

// Server is the fake relayer.
type Server struct {
	*httptest.Server
	APIKey string

	mu   sync.Mutex
	keys map[string]bool
	jobs map[string]*job
	// Submitted are the submit-proof bodies received, in order.
	Submitted []map[string]any
}

type job struct {
	id, proofType, statement string
	chainID                  *int64
	step                     int
	fails                    bool
	created                  time.Time
}

// New starts a fake relayer; its base URL is URL + "/api/v1".
func New(apiKey string) *Server {
	s := &Server{APIKey: apiKey, keys: map[string]bool{}, jobs: map[string]*job{}}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /api/v1/register-vk/{key}", s.auth(s.registerVK))
	mux.HandleFunc("POST /api/v1/submit-proof/{key}", s.auth(s.submitProof))
	mux.HandleFunc("GET /api/v1/job-status/{key}/{jobId}", s.auth(s.jobStatus))
	s.Server = httptest.NewServer(mux)
	return s
}

// BaseURL is the API's base.
func (s *Server) BaseURL() string { return s.URL + "/api/v1" }

func write(w http.ResponseWriter, status int, body any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(body)
}

func (s *Server) auth(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if r.PathValue("key") != s.APIKey {
			write(w, http.StatusUnauthorized, map[string]any{"code": "UNAUTHORIZED", "message": "Invalid API key"})
			return
		}
		h(w, r)
	}
}

func (s *Server) registerVK(w http.ResponseWriter, r *http.Request) {
	var in struct {
		ProofType string          `json:"proofType"`
		VK        json.RawMessage `json:"vk"`
	}
	if err := json.NewDecoder(r.Body).Decode(&in); err != nil || in.ProofType == "" || len(in.VK) == 0 {
		write(w, http.StatusBadRequest, map[string]any{"code": "INVALID_REQUEST", "message": "proofType and vk are required"})
		return
	}
	hash := crypto.Keccak256Hash([]byte(in.ProofType), in.VK).Hex()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.keys[hash] {
		write(w, http.StatusBadRequest, map[string]any{"code": "REGISTER_VK_FAILED", "message": "Verification key already registered", "meta": map[string]any{"vkHash": hash}})
		return
	}
	s.keys[hash] = true
	write(w, http.StatusOK, map[string]any{"vkHash": hash, "meta": map[string]any{"vkHash": hash}})
}

func (s *Server) submitProof(w http.ResponseWriter, r *http.Request) {
	var raw map[string]any
	if err := json.NewDecoder(r.Body).Decode(&raw); err != nil {
		write(w, http.StatusBadRequest, map[string]any{"message": "invalid JSON"})
		return
	}
	b, _ := json.Marshal(raw)
	var in struct {
		ProofType    string `json:"proofType"`
		VKRegistered bool   `json:"vkRegistered"`
		ChainID      *int64 `json:"chainId"`
		ProofData    struct {
			Proof json.RawMessage `json:"proof"`
			VK    string          `json:"vk"`
		} `json:"proofData"`
	}
	_ = json.Unmarshal(b, &in)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.Submitted = append(s.Submitted, raw)
	if in.ProofType == "" || len(in.ProofData.Proof) == 0 || in.ProofData.VK == "" {
		write(w, http.StatusBadRequest, map[string]any{"message": "proofType, proofData.proof and proofData.vk are required"})
		return
	}
	if in.VKRegistered && !s.keys[in.ProofData.VK] {
		write(w, http.StatusBadRequest, map[string]any{"message": "Verification key not registered"})
		return
	}
	var proof string
	_ = json.Unmarshal(in.ProofData.Proof, &proof)
	if proof == RejectedProof {
		write(w, http.StatusBadRequest, map[string]any{"code": "OPTIMISTIC_VERIFY_FAILED", "message": "Optimistic verification failed", "optimisticVerify": "failed"})
		return
	}
	id := fmt.Sprintf("%08x-2e04-4c1b-9a1e-%012x", len(s.jobs)+1, time.Now().UnixNano()&0xffffffffffff)
	s.jobs[id] = &job{id: id, proofType: in.ProofType, chainID: in.ChainID, fails: proof == FailingProof, created: time.Now().UTC(),
		statement: crypto.Keccak256Hash(in.ProofData.Proof).Hex()}
	write(w, http.StatusOK, map[string]any{"jobId": id, "optimisticVerify": "success"})
}

func (s *Server) jobStatus(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	j, ok := s.jobs[r.PathValue("jobId")]
	if !ok {
		write(w, http.StatusNotFound, map[string]any{"message": "Job not found"})
		return
	}
	last := 4 // Finalized ends a verify-only job
	if j.chainID != nil {
		last = len(order) - 1
	}
	if j.step < last {
		j.step++
	}
	status := order[j.step]
	out := map[string]any{"jobId": j.id, "status": status, "statusId": statusIDs[status], "proofType": j.proofType,
		"createdAt": j.created.Format(time.RFC3339), "updatedAt": time.Now().UTC().Format(time.RFC3339)}
	if j.chainID != nil {
		out["chainId"] = *j.chainID
	}
	if j.fails && j.step > 2 {
		out["status"], out["statusId"], out["error"] = "Failed", -1, "Proof verification failed on chain"
		write(w, http.StatusOK, out)
		return
	}
	if j.step >= 2 {
		out["txHash"] = crypto.Keccak256Hash([]byte("tx" + j.id)).Hex()
	}
	if j.step >= 3 {
		out["blockHash"] = crypto.Keccak256Hash([]byte("block" + j.id)).Hex()
	}
	if j.step >= 5 {
		out["aggregationId"] = 42
		out["statement"] = j.statement
	}
	if j.step >= 6 {
		details := map[string]any{"root": j.statement, "leaf": j.statement, "leafIndex": 0, "numberOfLeaves": 1, "merkleProof": []string{}}
		if j.step == 7 {
			details["receipt"], details["receiptBlockHash"] = j.statement, crypto.Keccak256Hash([]byte("receipt"+j.id)).Hex()
		}
		out["aggregationDetails"] = details
	}
	write(w, http.StatusOK, out)
}

// Jobs is how many jobs were accepted.
func (s *Server) Jobs() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.jobs)
}
