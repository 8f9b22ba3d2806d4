package frontend

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/gin-gonic/gin"
	"github.com/mr-tron/base58"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"conduit/internal/enclaves"
	"conduit/internal/errs"
	"conduit/internal/logging"
	"conduit/internal/signer"
	"conduit/internal/store"
	"conduit/workflows"
)

// Attestation and enclave-held signing (docs/enclaves.md, "Attestation
// routes" and "Signing"). The enclave's agent lives with the provider in
// the worker, so every document and signature is asked of the enclave's
// lifecycle workflow as an update (attest, sign), which refuses unless
// the enclave is DEPLOYED; the worker verifies the document before the
// enclave signs. The deprecated raw-key signer needs no enclave and signs
// here.

func (s *Server) mountEnclaveSigning(one *gin.RouterGroup, read, write gin.HandlerFunc) {
	one.GET("/attestation", read, s.enclaveAttestation(false))
	one.GET("/attestation/verify", read, s.enclaveAttestation(true))
	one.GET("/signer", read, s.enclaveSigner)
	one.PUT("/signer/raw-key", write, s.putRawKey)
	one.DELETE("/signer/raw-key", write, s.deleteRawKey)
	one.POST("/sign/transaction", write, s.signTransaction)
	one.POST("/sign/message", write, s.signMessage)
	one.POST("/sign/typed-data", write, s.signTypedData)
}

// agentUpdate asks the enclave's workflow for update name with arg and
// decodes the answer into out. Errors are the signer's: not DEPLOYED is a
// 409 naming the state, an agent that cannot be reached a 503, a request
// the signer refused a 400.
func (s *Server) agentUpdate(ctx context.Context, e enclaves.Enclave, name string, arg, out any) error {
	if e.Status != enclaves.Deployed {
		return signer.NotRunning(e.Status)
	}
	waitCtx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	h, err := s.deps.Temporal.UpdateWorkflow(waitCtx, client.UpdateWorkflowOptions{
		WorkflowID: workflows.EnclaveWorkflowID(e.ID), UpdateName: name, Args: []any{arg}, WaitForStage: client.WorkflowUpdateStageCompleted,
	})
	if err == nil {
		err = h.Get(waitCtx, out)
	}
	var app *temporal.ApplicationError
	var nf *serviceerror.NotFound
	var busy *serviceerror.ResourceExhausted
	switch {
	case err == nil:
		return nil
	case errors.As(err, &busy):
		// Temporal bounds the updates in flight per workflow.
		return &APIError{Status: http.StatusTooManyRequests, Code: "SIGNER_BUSY", RetryAfter: time.Second,
			Message: "the enclave is answering as many requests as it takes at once; try again in a moment"}
	case errors.As(err, &app) && app.Type() == signer.ErrTypeInvalid:
		return errs.Invalidf("%s", app.Message())
	case errors.As(err, &app) && app.Type() == workflows.ErrEnclaveConflict:
		var cur string
		_ = app.Details(&cur)
		return signer.NotRunning(enclaves.Status(cur))
	case errors.As(err, &nf):
		// The lifecycle ended between the read and the update.
		if e, err = s.deps.Store.Enclave(ctx, e.ID); err != nil {
			return err
		}
		return signer.NotRunning(e.Status)
	default:
		logging.From(ctx).Warn("an enclave's agent did not answer", "enclave", e.ID, "update", name, "err", err)
		detail := "the enclave did not answer in time"
		if errors.As(err, &app) {
			detail = app.Message()
		}
		return signer.Unreachable(detail)
	}
}

// freshNonce is a random 32-byte nonce.
func freshNonce() []byte {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	return b
}

// attestationJSON is the attestation record (spec §2.8): the document and
// its decoded fields, the verification, and the endpoints.
func (s *Server) attestationJSON(e enclaves.Enclave, ev signer.Evidence) gin.H {
	doc := gin.H{"document": base64.StdEncoding.EncodeToString(ev.Document)}
	pcrs := gin.H{"0": nil, "1": nil, "2": nil, "8": nil}
	if f := ev.Fields; f != nil {
		for k, v := range f.PCRs {
			pcrs[k] = v
		}
		bundle := make([]string, len(f.CABundle))
		for i, c := range f.CABundle {
			bundle[i] = base64.StdEncoding.EncodeToString(c)
		}
		doc["moduleId"] = f.ModuleID
		doc["digest"] = f.Digest
		doc["timestamp"] = f.Timestamp.UTC().Format(time.RFC3339Nano)
		doc["certificate"] = base64.StdEncoding.EncodeToString(f.Certificate)
		doc["cabundle"] = bundle
		doc["publicKey"] = b64OrNil(f.PublicKey)
		doc["userData"] = b64OrNil(f.UserData)
		doc["nonce"] = hexOrNil(f.Nonce)
	}
	doc["pcrs"] = pcrs
	out := gin.H{
		"enclaveId":           e.ID,
		"status":              e.Status,
		"attestationDocument": doc,
		"verification": gin.H{
			"trustLevel": ev.Report.TrustLevel, "verificationStatus": ev.Report.VerificationStatus,
			"integrityScore": ev.Report.IntegrityScore, "checks": ev.Report.Checks,
			"nonce": hex.EncodeToString(ev.Nonce),
		},
		"endpoints": gin.H{
			"verificationUrl": s.url("/api/enclaves/" + e.ID + "/attestation/verify"),
			"apiEndpoint":     endpointURL(e.Endpoint),
			"webhookUrl":      nil,
		},
	}
	if f := ev.Fields; f != nil && ev.State == signer.AttestationVerified {
		out["signingKeys"] = gin.H{"evmAddress": nilIfEmpty(f.EVMAddress), "solanaPublicKey": nilIfEmpty(f.SolanaPublicKey)}
	}
	return out
}

func endpointURL(ep string) any {
	if ep == "" {
		return nil
	}
	return "http://" + ep
}

func b64OrNil(b []byte) any {
	if b == nil {
		return nil
	}
	return base64.StdEncoding.EncodeToString(b)
}

func hexOrNil(b []byte) any {
	if b == nil {
		return nil
	}
	return hex.EncodeToString(b)
}

// enclaveAttestation: GET /api/enclaves/{id}/attestation and
// /attestation/verify?nonce=. Both fetch a fresh document and verify it
// in full; verify takes the caller's nonce. A document that does not
// verify is an answer (verificationStatus failed), not an error.
func (s *Server) enclaveAttestation(verify bool) gin.HandlerFunc {
	return func(c *gin.Context) {
		e := currentEnclave(c)
		nonce := freshNonce()
		source := "platform"
		if verify {
			if v, ok := c.GetQuery("nonce"); ok {
				n, err := signer.ParseNonce(v)
				if err != nil {
					fail(c, err)
					return
				}
				nonce, source = n, "caller"
			}
		}
		var ev signer.Evidence
		if err := s.agentUpdate(c.Request.Context(), e, workflows.EnclaveAttest, nonce, &ev); err != nil {
			fail(c, err)
			return
		}
		out := s.attestationJSON(e, ev)
		out["verification"].(gin.H)["nonceSource"] = source
		out["verification"].(gin.H)["verifiedAt"] = time.Now().UTC().Format(time.RFC3339Nano)
		c.JSON(http.StatusOK, out)
	}
}

// rawKey is the enclave's deprecated raw-key signer, when one is
// configured.
func (s *Server) rawKey(ctx context.Context, id string) (*signer.RawKey, error) {
	row, err := s.deps.Store.EnclaveRawKey(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if s.deps.Enclaves.Secrets == nil {
		return nil, errors.New("an enclave's raw key is kept but no key to open it is configured (enclaves.secret_keys)")
	}
	plain, err := s.deps.Enclaves.Secrets.Open(row.Sealed, signer.RawKeyPurpose(id))
	if err != nil {
		return nil, err
	}
	k, err := signer.UnmarshalRawKey(plain)
	if err != nil {
		return nil, err
	}
	return &k, nil
}

// deprecated marks an answer of the raw-key signer.
func deprecated(c *gin.Context) {
	c.Header("Warning", signer.Warning)
	c.Header("X-Signer-State", string(signer.Deprecated))
}

// enclaveSigner: GET /api/enclaves/{id}/signer[?verify=false]. The
// signer's state now: deprecated when a raw key is configured; else a
// fresh attestation decides (attestation_verified or attestation_failed;
// connected with verify=false, which only asks the agent for a document);
// disconnected when the enclave is not DEPLOYED or its agent does not
// answer.
func (s *Server) enclaveSigner(c *gin.Context) {
	ctx := c.Request.Context()
	e := currentEnclave(c)
	verify := true
	switch c.DefaultQuery("verify", "true") {
	case "true", "1":
	case "false", "0":
		verify = false
	default:
		fail(c, errs.Invalidf("verify must be true or false"))
		return
	}
	out := gin.H{"enclaveId": e.ID, "status": e.Status}
	k, err := s.rawKey(ctx, e.ID)
	if err != nil {
		fail(c, err)
		return
	}
	if k != nil {
		deprecated(c)
		st := signer.NewStatus(signer.Deprecated, "a raw key configured outside the enclave signs instead of the enclave; nothing attests it")
		out["signer"] = st
		out["evmAddress"], out["solanaPublicKey"] = nilIfEmpty(k.EVMAddress()), nilIfEmpty(k.SolanaPublicKey())
		c.JSON(http.StatusOK, out)
		return
	}
	var ev signer.Evidence
	err = s.agentUpdate(ctx, e, workflows.EnclaveAttest, freshNonce(), &ev)
	if de, ok := errs.As(err); ok && de.Code == signer.CodeDisconnected {
		out["signer"] = de.Extra["signer"]
		c.JSON(http.StatusOK, out)
		return
	}
	if err != nil {
		fail(c, err)
		return
	}
	var st signer.Status
	switch {
	case !verify:
		st = signer.NewStatus(signer.Connected, "the enclave's agent answered with an attestation document; it was not verified (verify=false)")
	case ev.State == signer.AttestationVerified:
		st = signer.NewStatus(signer.AttestationVerified, "")
	default:
		st = signer.NewStatus(signer.AttestationFailed, signer.Failed(ev.Report).Error())
		st.FailedChecks = signer.FailedChecks(ev.Report)
	}
	out["signer"] = st
	if verify {
		out["verification"] = gin.H{"trustLevel": ev.Report.TrustLevel, "verificationStatus": ev.Report.VerificationStatus,
			"integrityScore": ev.Report.IntegrityScore, "checks": ev.Report.Checks}
	}
	if f := ev.Fields; f != nil && ev.State == signer.AttestationVerified {
		out["evmAddress"], out["solanaPublicKey"] = nilIfEmpty(f.EVMAddress), nilIfEmpty(f.SolanaPublicKey)
	}
	c.JSON(http.StatusOK, out)
}

// putRawKey: PUT /api/enclaves/{id}/signer/raw-key {evmPrivateKey?,
// solanaPrivateKey?}. Configures the deprecated raw-key signer: the keys
// are sealed at rest and never returned.
func (s *Server) putRawKey(c *gin.Context) {
	e := currentEnclave(c)
	var body signer.RawKeyInput
	if err := decodeJSON(c, &body); err != nil {
		fail(c, err)
		return
	}
	k, err := body.Parse()
	if err != nil {
		fail(c, err)
		return
	}
	sec := s.deps.Enclaves.Secrets
	if sec == nil {
		fail(c, errs.Invalidf("a raw key cannot be kept: no key to seal it is configured (enclaves.secret_keys)"))
		return
	}
	plain, err := k.Marshal()
	if err != nil {
		fail(c, err)
		return
	}
	sealed, err := sec.Seal(plain, signer.RawKeyPurpose(e.ID))
	if err != nil {
		fail(c, err)
		return
	}
	if err := s.deps.Store.SetEnclaveRawKey(c.Request.Context(), e.ID, store.EnclaveRawKey{Sealed: sealed, EVMAddress: k.EVMAddress(), SolanaPublicKey: k.SolanaPublicKey()}); err != nil {
		fail(c, err)
		return
	}
	deprecated(c)
	c.JSON(http.StatusOK, gin.H{"enclaveId": e.ID, "signer": signer.NewStatus(signer.Deprecated, "a raw key configured outside the enclave signs instead of the enclave; nothing attests it"),
		"evmAddress": nilIfEmpty(k.EVMAddress()), "solanaPublicKey": nilIfEmpty(k.SolanaPublicKey())})
}

// deleteRawKey: DELETE /api/enclaves/{id}/signer/raw-key. The enclave
// signs again.
func (s *Server) deleteRawKey(c *gin.Context) {
	e := currentEnclave(c)
	ok, err := s.deps.Store.DeleteEnclaveRawKey(c.Request.Context(), e.ID)
	if err != nil {
		fail(c, err)
		return
	}
	if !ok {
		fail(c, errs.NotFoundf("enclave %q has no raw-key signer", e.ID))
		return
	}
	c.Status(http.StatusNoContent)
}

// signature is what a signer produced for one request.
type signature struct {
	sig    []byte
	signer string // the EVM address or Solana key that signed
	index  int    // a Solana transaction's signer slot
	// evidence is the attestation that preceded the signature (nil for
	// the raw-key signer).
	evidence *signer.Evidence
}

// sign has the enclave's signer sign r: the raw-key signer when one is
// configured (with the warning), else the enclave after a verified
// attestation bound to r.
func (s *Server) sign(c *gin.Context, e enclaves.Enclave, r signer.Request) (signature, error) {
	ctx := c.Request.Context()
	if err := r.Validate(); err != nil {
		return signature{}, err
	}
	k, err := s.rawKey(ctx, e.ID)
	if err != nil {
		return signature{}, err
	}
	if k != nil {
		sig, who, idx, err := k.Sign(r)
		if err != nil {
			return signature{}, err
		}
		deprecated(c)
		return signature{sig: sig, signer: who, index: idx}, nil
	}
	var out signer.Signed
	if err := s.agentUpdate(ctx, e, workflows.EnclaveSign, r, &out); err != nil {
		return signature{}, err
	}
	if out.Evidence.State != signer.AttestationVerified || len(out.Signature) == 0 {
		return signature{}, signer.Failed(out.Evidence.Report)
	}
	if !signer.CommitsTo(out.Evidence.Nonce, r) {
		return signature{}, errors.New("the attestation before signing is not bound to the request")
	}
	c.Header("X-Signer-State", string(signer.AttestationVerified))
	return signature{sig: out.Signature, signer: out.Signer, index: out.SignerIndex, evidence: &out.Evidence}, nil
}

// signedJSON is what every signing answer carries besides its result.
func signedJSON(sg signature, out gin.H) gin.H {
	if sg.evidence == nil {
		out["signer"] = gin.H{"state": signer.Deprecated, "address": sg.signer, "warning": signer.Warning}
		out["attestation"] = nil
		return out
	}
	ev := sg.evidence
	att := gin.H{"verificationStatus": ev.Report.VerificationStatus, "trustLevel": ev.Report.TrustLevel,
		"integrityScore": ev.Report.IntegrityScore, "nonce": hex.EncodeToString(ev.Nonce),
		"document": base64.StdEncoding.EncodeToString(ev.Document)}
	if ev.Fields != nil {
		att["timestamp"] = ev.Fields.Timestamp.UTC().Format(time.RFC3339Nano)
	}
	out["signer"] = gin.H{"state": signer.AttestationVerified, "address": sg.signer}
	out["attestation"] = att
	return out
}

// signTxBody is POST /sign/transaction. unsignedTransaction is accepted
// for transaction (the name some SDKs send).
type signTxBody struct {
	Chain               string          `json:"chain"`
	Transaction         json.RawMessage `json:"transaction"`
	UnsignedTransaction json.RawMessage `json:"unsignedTransaction"`
}

func chainOf(s string) (string, error) {
	switch s {
	case "", "evm":
		return "evm", nil
	case "solana":
		return "solana", nil
	}
	e := errs.Invalidf("chain: must be evm or solana")
	e.Extra = map[string]any{"problems": []map[string]string{{"field": "chain", "message": "must be evm or solana"}}}
	return "", e
}

// signTransaction: POST /api/enclaves/{id}/sign/transaction.
func (s *Server) signTransaction(c *gin.Context) {
	e := currentEnclave(c)
	var body signTxBody
	if err := decodeJSON(c, &body); err != nil {
		fail(c, err)
		return
	}
	chain, err := chainOf(body.Chain)
	if err != nil {
		fail(c, err)
		return
	}
	raw := body.Transaction
	if len(raw) == 0 {
		raw = body.UnsignedTransaction
	} else if len(body.UnsignedTransaction) != 0 {
		fail(c, errs.Invalidf("transaction and unsignedTransaction name the same thing; send one"))
		return
	}
	if chain == "solana" {
		s.signSolanaTransaction(c, e, raw)
		return
	}
	tx, err := signer.ParseEVMTransaction(raw)
	if err != nil {
		fail(c, err)
		return
	}
	if want, ok := signer.ExpectedFrom(raw); ok {
		// Checked before anything is signed: the enclave's address, or the
		// raw key's when that signer is configured.
		k, err := s.rawKey(c.Request.Context(), e.ID)
		if err != nil {
			fail(c, err)
			return
		}
		addr := e.WalletAddress
		if k != nil {
			addr = k.EVMAddress()
		}
		if !strings.EqualFold(addr, want.Hex()) {
			fail(c, errs.Invalidf("transaction.from: is %s, but this enclave signs as %s; nothing was signed", want.Hex(), addr))
			return
		}
	}
	sg, err := s.sign(c, e, signer.Request{Purpose: signer.PurposeEVMHash, Payload: tx.Hash()})
	if err != nil {
		fail(c, err)
		return
	}
	signed, hash, from, err := tx.WithSignature(sg.sig)
	if err != nil {
		fail(c, err)
		return
	}
	if from != common.HexToAddress(sg.signer) {
		fail(c, errors.New("the signed transaction does not recover to the signer"))
		return
	}
	c.JSON(http.StatusOK, signedJSON(sg, gin.H{"chain": "evm", "signedTransaction": hexutil.Encode(signed),
		"transactionHash": hash.Hex(), "from": from.Hex(), "signature": hexutil.Encode(sg.sig)}))
}

func (s *Server) signSolanaTransaction(c *gin.Context, e enclaves.Enclave, raw json.RawMessage) {
	var b64 string
	if err := json.Unmarshal(raw, &b64); err != nil || len(bytes.TrimSpace(raw)) == 0 {
		fail(c, errs.Invalidf("transaction: a Solana transaction is a base64 string"))
		return
	}
	tx, err := signer.ParseSolanaTransaction(b64)
	if err != nil {
		fail(c, err)
		return
	}
	msg, err := tx.Message()
	if err != nil {
		fail(c, errs.Invalidf("transaction: %v", err))
		return
	}
	sg, err := s.sign(c, e, signer.Request{Purpose: signer.PurposeSolanaTransaction, Payload: msg})
	if err != nil {
		fail(c, err)
		return
	}
	signed, err := tx.WithSignature(sg.index, sg.sig)
	if err != nil {
		fail(c, err)
		return
	}
	c.JSON(http.StatusOK, signedJSON(sg, gin.H{"chain": "solana", "signedTransaction": signed,
		"signature": base58.Encode(sg.sig), "from": sg.signer}))
}

// signMessageBody is POST /sign/message.
type signMessageBody struct {
	Chain    string `json:"chain"`
	Message  string `json:"message"`
	Encoding string `json:"encoding"`
}

// signMessage: POST /api/enclaves/{id}/sign/message. EVM: EIP-191
// personal_sign (v 27/28); Solana: ed25519 over the raw bytes.
func (s *Server) signMessage(c *gin.Context) {
	e := currentEnclave(c)
	var body signMessageBody
	if err := decodeJSON(c, &body); err != nil {
		fail(c, err)
		return
	}
	chain, err := chainOf(body.Chain)
	if err != nil {
		fail(c, err)
		return
	}
	msg, err := signer.MessageBytes(body.Message, body.Encoding)
	if err != nil {
		fail(c, err)
		return
	}
	if chain == "solana" {
		sg, err := s.sign(c, e, signer.Request{Purpose: signer.PurposeSolanaMessage, Payload: msg})
		if err != nil {
			fail(c, err)
			return
		}
		c.JSON(http.StatusOK, signedJSON(sg, gin.H{"chain": "solana", "signature": base58.Encode(sg.sig), "publicKey": sg.signer}))
		return
	}
	hash := signer.PersonalHash(msg)
	sg, err := s.sign(c, e, signer.Request{Purpose: signer.PurposeEVMHash, Payload: hash})
	if err != nil {
		fail(c, err)
		return
	}
	c.JSON(http.StatusOK, signedJSON(sg, gin.H{"chain": "evm", "signature": hexutil.Encode(signer.WalletSignature(sg.sig)),
		"address": sg.signer, "messageHash": hexutil.Encode(hash)}))
}

// signTypedData: POST /api/enclaves/{id}/sign/typed-data {types,
// primaryType, domain, message} (or the ethers form {domain, types,
// value}). EIP-712, v 27/28.
func (s *Server) signTypedData(c *gin.Context) {
	e := currentEnclave(c)
	b, err := readBody(c)
	if err != nil {
		fail(c, err)
		return
	}
	hash, _, err := signer.TypedDataHash(b)
	if err != nil {
		fail(c, err)
		return
	}
	sg, err := s.sign(c, e, signer.Request{Purpose: signer.PurposeEVMHash, Payload: hash})
	if err != nil {
		fail(c, err)
		return
	}
	c.JSON(http.StatusOK, signedJSON(sg, gin.H{"chain": "evm", "signature": hexutil.Encode(signer.WalletSignature(sg.sig)),
		"address": sg.signer, "digest": hexutil.Encode(hash)}))
}
