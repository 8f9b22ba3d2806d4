package awsfake

import (
	"bufio"
	"bytes"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"

	"github.com/ethereum/go-ethereum/crypto"
	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"

	"conduit/internal/attest"
	"conduit/internal/enclaves/provider/nitro/eif"
)

// Agent plays the parent instance's agent of the contract in docs/enclaves.md ("The AWS Nitro
// provider"). It answers only for an enclave whose instance the fake EC2 runs, reads the
// instance's user data, fetches the EIF it names from S3 and measures it — what the Nitro
// hypervisor would put in PCR0–2 — and signs documents with a leaf of a test CA (Authority),
// where a real NSM's chain ends at AWS's root. Its keys live in its memory, one pair per enclave.
type Agent struct {
	EC2       *EC2
	S3        *s3mem.Backend
	Authority *attest.Authority

	mu   sync.Mutex
	keys map[string]*agentKeys
	// tamper changes the PCRs the agent reports (an enclave running something else).
	tamper bool
}

type agentKeys struct {
	evm    *ecdsa.PrivateKey
	solana ed25519.PrivateKey
}

// Tamper makes the agent report PCR2 other than the EIF's (true) or the EIF's own (false).
func (a *Agent) Tamper(on bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.tamper = on
}

// EVMAddress is the address of the enclave's EVM key ("" before the enclave's first request).
func (a *Agent) EVMAddress(enclaveID string) string {
	a.mu.Lock()
	defer a.mu.Unlock()
	if k := a.keys[enclaveID]; k != nil {
		return crypto.PubkeyToAddress(k.evm.PublicKey).Hex()
	}
	return ""
}

func agentFail(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]string{"error": msg})
}

// userData reads KEY='value' lines after the header line.
func userData(data []byte) map[string]string {
	out := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), "=")
		if ok && len(v) >= 2 && v[0] == '\'' && v[len(v)-1] == '\'' {
			out[k] = strings.ReplaceAll(v[1:len(v)-1], `'\''`, "'")
		}
	}
	return out
}

// TagEnclaveID is the tag naming an instance's enclave (nitro.TagEnclaveID).
const TagEnclaveID = "conduit:enclave-id"

func (a *Agent) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	a.mu.Lock()
	defer a.mu.Unlock()
	var err error
	var body struct {
		EnclaveID string `json:"enclaveId"`
		Nonce     []byte `json:"nonce"`
		Key       string `json:"key"`
		Payload   []byte `json:"payload"`
	}
	if err = json.NewDecoder(r.Body).Decode(&body); err != nil {
		agentFail(w, http.StatusBadRequest, err.Error())
		return
	}
	var inst *Instance
	for _, in := range a.EC2.Instances() {
		if in.Tags[TagEnclaveID] == body.EnclaveID && in.State == "running" {
			in := in
			inst = &in
		}
	}
	if inst == nil || r.Header.Get("X-Conduit-Enclave-Id") != body.EnclaveID {
		agentFail(w, http.StatusConflict, "this instance does not run enclave "+body.EnclaveID)
		return
	}
	vars := userData(inst.UserData)
	if tok := vars["CONDUIT_AGENT_TOKEN"]; tok != "" && r.Header.Get("Authorization") != "Bearer "+tok {
		agentFail(w, http.StatusUnauthorized, "bad agent token")
		return
	}
	if a.keys == nil {
		a.keys = map[string]*agentKeys{}
	}
	k := a.keys[body.EnclaveID]
	if k == nil {
		evm, err := crypto.GenerateKey()
		if err != nil {
			agentFail(w, 500, err.Error())
			return
		}
		_, sol, _ := ed25519.GenerateKey(rand.Reader)
		k = &agentKeys{evm: evm, solana: sol}
		a.keys[body.EnclaveID] = k
	}
	switch r.URL.Path {
	case "/attest":
		obj, err := a.S3.GetObject(vars["CONDUIT_EIF_S3_BUCKET"], vars["CONDUIT_EIF_S3_KEY"], nil)
		if err != nil {
			agentFail(w, http.StatusServiceUnavailable, "the EIF is not in S3: "+err.Error())
			return
		}
		data, _ := io.ReadAll(obj.Contents)
		obj.Contents.Close()
		f, err := eif.Read(bytes.NewReader(data), int64(len(data)))
		if err != nil {
			agentFail(w, http.StatusInternalServerError, err.Error())
			return
		}
		pcrs, _ := f.PCRs(nil)
		if a.tamper {
			pcrs[2] = eif.Extend(pcrs[2])
		}
		ud, _ := attest.SigningKeys{EVM: &k.evm.PublicKey, Solana: k.solana.Public().(ed25519.PublicKey)}.UserData()
		signer, err := a.Authority.IssueLeaf(inst.ID + "-enc0123456789abcdef")
		if err != nil {
			agentFail(w, 500, err.Error())
			return
		}
		doc, err := signer.Sign(attest.Document{PCRs: map[int][]byte{0: pcrs[0], 1: pcrs[1], 2: pcrs[2]}, UserData: ud, Nonce: body.Nonce})
		if err != nil {
			agentFail(w, http.StatusBadRequest, err.Error())
			return
		}
		_ = json.NewEncoder(w).Encode(map[string][]byte{"document": doc})
	case "/sign":
		var sig []byte
		switch body.Key {
		case "evm":
			sig, err = crypto.Sign(body.Payload, k.evm)
		case "solana":
			sig = ed25519.Sign(k.solana, body.Payload)
		default:
			err = fmt.Errorf("unknown key %q", body.Key)
		}
		if err != nil {
			agentFail(w, http.StatusBadRequest, err.Error())
			return
		}
		_ = json.NewEncoder(w).Encode(map[string][]byte{"signature": sig})
	default:
		agentFail(w, http.StatusNotFound, "no such route")
	}
}

// World is a test's AWS: EC2, CloudWatch Logs and S3 servers, and one agent (at
// 127.0.0.1:AgentPort, every instance's private address) answering for every instance EC2 runs.
type World struct {
	EC2       *EC2
	Logs      *Logs
	S3        *s3mem.Backend
	Agent     *Agent
	EC2URL    string
	LogsURL   string
	S3URL     string
	AgentPort int
	closers   []func()
}

// Start starts a World knowing AMI ami, with bucket and log group made, whose agent signs under auth.
func Start(ami, bucket, logGroup string, auth *attest.Authority) (*World, error) {
	w := &World{EC2: NewEC2(ami), Logs: NewLogs(logGroup), S3: s3mem.New()}
	if err := w.S3.CreateBucket(bucket); err != nil {
		return nil, err
	}
	w.Agent = &Agent{EC2: w.EC2, S3: w.S3, Authority: auth}
	for _, s := range []struct {
		h   http.Handler
		url *string
	}{{w.EC2, &w.EC2URL}, {w.Logs, &w.LogsURL}, {gofakes3.New(w.S3).Server(), &w.S3URL}, {w.Agent, nil}} {
		srv := httptest.NewServer(s.h)
		w.closers = append(w.closers, srv.Close)
		if s.url != nil {
			*s.url = srv.URL
		} else {
			_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
			w.AgentPort, _ = strconv.Atoi(port)
		}
	}
	return w, nil
}

// Close stops the servers.
func (w *World) Close() {
	for _, c := range w.closers {
		c()
	}
}
