package frontend

import (
	"encoding/base64"
	"encoding/hex"
	"net/http"
	"time"

	"github.com/gin-gonic/gin"

	"conduit/internal/enclaves"
	"conduit/internal/enclaves/lifecycle"
	"conduit/internal/errs"
	"conduit/internal/signer"
)

// Attestation and enclave-held signing (docs/enclaves.md, "Attestation
// routes" and "Signing"): each handler decodes, calls the enclave service
// (internal/enclaves/lifecycle/signing.go, where the rules are) and
// encodes the answer.

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
// in full; verify takes the caller's nonce.
func (s *Server) enclaveAttestation(verify bool) gin.HandlerFunc {
	return func(c *gin.Context) {
		e := currentEnclave(c)
		nonce, given := c.GetQuery("nonce")
		a, err := s.enclaveService().Attest(c.Request.Context(), e, nonce, verify && given)
		if err != nil {
			fail(c, err)
			return
		}
		out := s.attestationJSON(e, a.Evidence)
		out["verification"].(gin.H)["nonceSource"] = a.NonceSource
		out["verification"].(gin.H)["verifiedAt"] = time.Now().UTC().Format(time.RFC3339Nano)
		c.JSON(http.StatusOK, out)
	}
}

// deprecated marks an answer of the raw-key signer.
func deprecated(c *gin.Context) {
	c.Header("Warning", signer.Warning)
	c.Header("X-Signer-State", string(signer.Deprecated))
}

// enclaveSigner: GET /api/enclaves/{id}/signer[?verify=false]: the
// signer's state now (lifecycle.Service.Signer says how it is decided).
func (s *Server) enclaveSigner(c *gin.Context) {
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
	v, err := s.enclaveService().Signer(c.Request.Context(), e, verify)
	if err != nil {
		fail(c, err)
		return
	}
	out := gin.H{"enclaveId": e.ID, "status": e.Status, "signer": v.Status}
	if k := v.Raw; k != nil {
		deprecated(c)
		out["evmAddress"], out["solanaPublicKey"] = nilIfEmpty(k.EVMAddress()), nilIfEmpty(k.SolanaPublicKey())
	}
	if ev := v.Evidence; ev != nil {
		if v.Verified {
			out["verification"] = gin.H{"trustLevel": ev.Report.TrustLevel, "verificationStatus": ev.Report.VerificationStatus,
				"integrityScore": ev.Report.IntegrityScore, "checks": ev.Report.Checks}
		}
		if f := ev.Fields; f != nil && ev.State == signer.AttestationVerified {
			out["evmAddress"], out["solanaPublicKey"] = nilIfEmpty(f.EVMAddress), nilIfEmpty(f.SolanaPublicKey)
		}
	}
	c.JSON(http.StatusOK, out)
}

// putRawKey: PUT /api/enclaves/{id}/signer/raw-key {evmPrivateKey?,
// solanaPrivateKey?}. Configures the deprecated raw-key signer.
func (s *Server) putRawKey(c *gin.Context) {
	e := currentEnclave(c)
	var body signer.RawKeyInput
	if err := decodeJSON(c, &body); err != nil {
		fail(c, err)
		return
	}
	k, err := s.enclaveService().PutRawKey(c.Request.Context(), e, body)
	if err != nil {
		fail(c, err)
		return
	}
	deprecated(c)
	c.JSON(http.StatusOK, gin.H{"enclaveId": e.ID, "signer": signer.NewStatus(signer.Deprecated, lifecycle.DeprecatedNote),
		"evmAddress": nilIfEmpty(k.EVMAddress()), "solanaPublicKey": nilIfEmpty(k.SolanaPublicKey())})
}

// deleteRawKey: DELETE /api/enclaves/{id}/signer/raw-key. The enclave
// signs again.
func (s *Server) deleteRawKey(c *gin.Context) {
	if err := s.enclaveService().DeleteRawKey(c.Request.Context(), currentEnclave(c)); err != nil {
		fail(c, err)
		return
	}
	c.Status(http.StatusNoContent)
}

// signed answers a signature: its chain fields, the signer and the
// attestation that preceded it (none for the deprecated raw-key signer,
// whose answers carry its warning).
func signed(c *gin.Context, sg lifecycle.Signature, err error) {
	if err != nil {
		fail(c, err)
		return
	}
	out := gin.H(sg.Fields)
	ev := sg.Evidence
	if ev == nil {
		deprecated(c)
		out["signer"] = gin.H{"state": signer.Deprecated, "address": sg.Signer, "warning": signer.Warning}
		out["attestation"] = nil
		c.JSON(http.StatusOK, out)
		return
	}
	c.Header("X-Signer-State", string(signer.AttestationVerified))
	att := gin.H{"verificationStatus": ev.Report.VerificationStatus, "trustLevel": ev.Report.TrustLevel,
		"integrityScore": ev.Report.IntegrityScore, "nonce": hex.EncodeToString(ev.Nonce),
		"document": base64.StdEncoding.EncodeToString(ev.Document)}
	if ev.Fields != nil {
		att["timestamp"] = ev.Fields.Timestamp.UTC().Format(time.RFC3339Nano)
	}
	out["signer"] = gin.H{"state": signer.AttestationVerified, "address": sg.Signer}
	out["attestation"] = att
	c.JSON(http.StatusOK, out)
}

// signTransaction: POST /api/enclaves/{id}/sign/transaction.
func (s *Server) signTransaction(c *gin.Context) {
	var body lifecycle.TransactionRequest
	if err := decodeJSON(c, &body); err != nil {
		fail(c, err)
		return
	}
	sg, err := s.enclaveService().SignTransaction(c.Request.Context(), currentEnclave(c), body)
	signed(c, sg, err)
}

// signMessage: POST /api/enclaves/{id}/sign/message. EVM: EIP-191
// personal_sign (v 27/28); Solana: ed25519 over the raw bytes.
func (s *Server) signMessage(c *gin.Context) {
	var body lifecycle.MessageRequest
	if err := decodeJSON(c, &body); err != nil {
		fail(c, err)
		return
	}
	sg, err := s.enclaveService().SignMessage(c.Request.Context(), currentEnclave(c), body)
	signed(c, sg, err)
}

// signTypedData: POST /api/enclaves/{id}/sign/typed-data {types,
// primaryType, domain, message} (or the ethers form {domain, types,
// value}). EIP-712, v 27/28.
func (s *Server) signTypedData(c *gin.Context) {
	b, err := readBody(c)
	if err != nil {
		fail(c, err)
		return
	}
	sg, err := s.enclaveService().SignTypedData(c.Request.Context(), currentEnclave(c), b)
	signed(c, sg, err)
}
