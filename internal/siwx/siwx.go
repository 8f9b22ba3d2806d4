// Package siwx is Sign-In-With-X (CAIP-122) as the x402 "sign-in-with-x"
// extension uses it, server side: the challenge a 402 carries, reading a
// client's proof, rebuilding the exact message it signed (EIP-4361 for
// EVM, the Solana sign-in text for Solana) and checking its signature,
// origin and freshness. Whether a nonce was issued and is unused is the
// caller's business (it needs shared storage).
package siwx

import (
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/ethereum/go-ethereum/accounts"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/mr-tron/base58"
)

// ExtensionKey names the challenge in PaymentRequired.extensions.
const ExtensionKey = "sign-in-with-x"

// Signature types of the proof.
const (
	TypeEIP191  = "eip191"
	TypeEd25519 = "ed25519"
)

// Info is what the server asks to be signed.
type Info struct {
	Domain         string   `json:"domain"`
	URI            string   `json:"uri"`
	Version        string   `json:"version"`
	Nonce          string   `json:"nonce"`
	IssuedAt       string   `json:"issuedAt"`
	ExpirationTime string   `json:"expirationTime,omitempty"`
	NotBefore      string   `json:"notBefore,omitempty"`
	RequestID      string   `json:"requestId,omitempty"`
	Statement      string   `json:"statement,omitempty"`
	Resources      []string `json:"resources,omitempty"`
}

// Chain is a network the server accepts a proof from.
type Chain struct {
	ChainID         string `json:"chainId"`
	Type            string `json:"type"`
	SignatureScheme string `json:"signatureScheme,omitempty"`
}

// Challenge is extensions["sign-in-with-x"] of a 402.
type Challenge struct {
	Info            Info           `json:"info"`
	SupportedChains []Chain        `json:"supportedChains"`
	Schema          map[string]any `json:"schema,omitempty"`
}

// Proof is the client's SIGN-IN-WITH-X payload: the challenge's info
// echoed, plus the chain, the address and the signature.
type Proof struct {
	Info
	ChainID         string `json:"chainId"`
	Type            string `json:"type"`
	Address         string `json:"address"`
	Signature       string `json:"signature"`
	SignatureScheme string `json:"signatureScheme,omitempty"`
}

// Error is a refused proof; Reason is safe to show the caller.
type Error struct{ Reason string }

func (e *Error) Error() string { return "sign-in refused: " + e.Reason }

func refuse(format string, args ...any) error { return &Error{Reason: fmt.Sprintf(format, args...)} }

// timeFormat is JavaScript's toISOString, which the clients use.
const timeFormat = "2006-01-02T15:04:05.000Z"

// schema is the proof's JSON Schema (draft 2020-12), as the extension
// publishes it.
var schema = map[string]any{
	"$schema":  "https://json-schema.org/draft/2020-12/schema",
	"type":     "object",
	"required": []string{"domain", "address", "uri", "version", "chainId", "type", "nonce", "issuedAt", "signature"},
	"properties": map[string]any{
		"domain": map[string]any{"type": "string"}, "address": map[string]any{"type": "string"},
		"uri": map[string]any{"type": "string"}, "version": map[string]any{"type": "string"},
		"chainId": map[string]any{"type": "string"}, "type": map[string]any{"type": "string", "enum": []string{TypeEIP191, TypeEd25519}},
		"nonce": map[string]any{"type": "string"}, "issuedAt": map[string]any{"type": "string"},
		"expirationTime": map[string]any{"type": "string"}, "notBefore": map[string]any{"type": "string"},
		"requestId": map[string]any{"type": "string"}, "statement": map[string]any{"type": "string"},
		"resources": map[string]any{"type": "array", "items": map[string]any{"type": "string"}},
		"signature": map[string]any{"type": "string"}, "signatureScheme": map[string]any{"type": "string"},
	},
}

// statementOK is the EIP-4361 statement alphabet: printable ASCII without
// the characters its grammar reserves.
var statementOK = regexp.MustCompile(`^[ !#$&'()*+,\-./0-9:;=?@A-Z\[\]_a-z~]*$`)

// NewChallenge builds a challenge for resourceURL, valid for ttl, offered
// on networks (eip155:* → eip191, solana:* → ed25519).
func NewChallenge(resourceURL string, networks []string, statement string, now time.Time, ttl time.Duration) (Challenge, error) {
	u, err := url.Parse(resourceURL)
	if err != nil || u.Hostname() == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return Challenge{}, fmt.Errorf("siwx: resource URL %q is not an absolute http(s) URL", resourceURL)
	}
	if !statementOK.MatchString(statement) || strings.Contains(statement, "\n") {
		return Challenge{}, fmt.Errorf("siwx: the statement %q has characters EIP-4361 does not allow", statement)
	}
	var n [16]byte
	if _, err := rand.Read(n[:]); err != nil {
		return Challenge{}, err
	}
	ch := Challenge{
		Info: Info{
			Domain: u.Hostname(), URI: resourceURL, Version: "1", Nonce: hex.EncodeToString(n[:]),
			IssuedAt: now.UTC().Format(timeFormat), ExpirationTime: now.Add(ttl).UTC().Format(timeFormat),
			Statement: statement, Resources: []string{resourceURL},
		},
		Schema: schema,
	}
	for _, nw := range networks {
		typ := TypeEIP191
		if strings.HasPrefix(nw, "solana:") {
			typ = TypeEd25519
		}
		ch.SupportedChains = append(ch.SupportedChains, Chain{ChainID: nw, Type: typ})
	}
	return ch, nil
}

// maxHeader bounds a proof header.
const maxHeader = 8 << 10

var caip2 = regexp.MustCompile(`^[-a-z0-9]{3,8}:[-_a-zA-Z0-9]{1,32}$`)

// ParseHeader reads a SIGN-IN-WITH-X header: base64 (standard or URL,
// padded or not) JSON with the schema's required fields.
func ParseHeader(h string) (Proof, error) {
	h = strings.TrimSpace(h)
	if h == "" || len(h) > maxHeader {
		return Proof{}, refuse("malformed proof: the header is empty or too large")
	}
	var raw []byte
	var err error
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if raw, err = enc.DecodeString(h); err == nil {
			break
		}
	}
	if err != nil {
		return Proof{}, refuse("malformed proof: not base64")
	}
	var p Proof
	if err := json.Unmarshal(raw, &p); err != nil {
		return Proof{}, refuse("malformed proof: not a JSON object of the sign-in fields")
	}
	for name, v := range map[string]string{"domain": p.Domain, "address": p.Address, "uri": p.URI, "version": p.Version,
		"chainId": p.ChainID, "type": p.Type, "nonce": p.Nonce, "issuedAt": p.IssuedAt, "signature": p.Signature} {
		if v == "" {
			return Proof{}, refuse("malformed proof: %s is missing", name)
		}
	}
	if p.Type != TypeEIP191 && p.Type != TypeEd25519 {
		return Proof{}, refuse("malformed proof: type must be eip191 or ed25519")
	}
	if !caip2.MatchString(p.ChainID) {
		return Proof{}, refuse("malformed proof: chainId is not a CAIP-2 chain id")
	}
	return p, nil
}

// Expect is what a proof must match.
type Expect struct {
	// Domain is the host the challenge named (no port); Origin is
	// scheme://host[:port] the uri must belong to.
	Domain, Origin string
	// Networks are the chains accepted.
	Networks []string
	// MaxAge bounds how old issuedAt may be.
	MaxAge time.Duration
}

// clockSkew is how far in the future issuedAt may be: clients' clocks
// drift.
const clockSkew = 30 * time.Second

// Verify checks a proof and returns the signing address, normalized (EVM
// lowercase hex, Solana base58 as is).
func Verify(p Proof, want Expect, now time.Time) (string, error) {
	if p.Domain != want.Domain {
		return "", refuse("domain mismatch: the proof is for %q", p.Domain)
	}
	if p.URI != want.Origin && !strings.HasPrefix(p.URI, want.Origin+"/") {
		return "", refuse("uri does not belong to this origin")
	}
	supported := false
	for _, n := range want.Networks {
		supported = supported || n == p.ChainID
	}
	if !supported {
		return "", refuse("unsupported chain %s", p.ChainID)
	}
	issued, err := time.Parse(time.RFC3339Nano, p.IssuedAt)
	switch {
	case err != nil:
		return "", refuse("malformed proof: issuedAt is not an RFC 3339 time")
	case issued.After(now.Add(clockSkew)):
		return "", refuse("issuedAt is in the future")
	case now.Sub(issued) > want.MaxAge:
		return "", refuse("issuedAt is older than %s", humanDuration(want.MaxAge))
	}
	if p.ExpirationTime != "" {
		exp, err := time.Parse(time.RFC3339Nano, p.ExpirationTime)
		if err != nil {
			return "", refuse("malformed proof: expirationTime is not an RFC 3339 time")
		}
		if !now.Before(exp) {
			return "", refuse("expired")
		}
	}
	if p.NotBefore != "" {
		nb, err := time.Parse(time.RFC3339Nano, p.NotBefore)
		if err != nil {
			return "", refuse("malformed proof: notBefore is not an RFC 3339 time")
		}
		if now.Before(nb) {
			return "", refuse("not yet valid")
		}
	}
	switch {
	case strings.HasPrefix(p.ChainID, "eip155:") && p.Type == TypeEIP191:
		return verifyEVM(p)
	case strings.HasPrefix(p.ChainID, "solana:") && p.Type == TypeEd25519:
		return verifySolana(p)
	}
	return "", refuse("unsupported chain %s for type %s", p.ChainID, p.Type)
}

func humanDuration(d time.Duration) string {
	if d%time.Minute == 0 {
		return strconv.Itoa(int(d/time.Minute)) + " minutes"
	}
	return d.String()
}

func verifyEVM(p Proof) (string, error) {
	if !common.IsHexAddress(p.Address) {
		return "", refuse("malformed proof: address is not an EVM address")
	}
	msg, err := SIWEMessage(p)
	if err != nil {
		return "", err
	}
	sig, err := hexBytes(p.Signature)
	if err != nil || len(sig) != 65 {
		return "", refuse("signature does not match address: not a 65-byte hex signature")
	}
	if sig[64] >= 27 {
		sig[64] -= 27
	}
	pub, err := crypto.SigToPub(accounts.TextHash([]byte(msg)), sig)
	if err != nil || crypto.PubkeyToAddress(*pub) != common.HexToAddress(p.Address) {
		return "", refuse("signature does not match address")
	}
	return strings.ToLower(p.Address), nil
}

func verifySolana(p Proof) (string, error) {
	pub, err := base58.Decode(p.Address)
	if err != nil || len(pub) != ed25519.PublicKeySize {
		return "", refuse("malformed proof: address is not a base58 Solana public key")
	}
	sig, err := base58.Decode(p.Signature)
	if err != nil || len(sig) != ed25519.SignatureSize {
		return "", refuse("signature does not match address: not a base58 Ed25519 signature")
	}
	msg, err := SIWSMessage(p)
	if err != nil {
		return "", err
	}
	if !ed25519.Verify(pub, []byte(msg), sig) {
		return "", refuse("signature does not match address")
	}
	return p.Address, nil
}

func hexBytes(s string) ([]byte, error) {
	return hex.DecodeString(strings.TrimPrefix(strings.TrimPrefix(s, "0x"), "0X"))
}

// SIWEMessage is the EIP-4361 message the EVM client signed. The address
// is used as sent (the client sends it EIP-55 checksummed; the message
// must be byte for byte what was signed).
func SIWEMessage(p Proof) (string, error) {
	chain, ok := strings.CutPrefix(p.ChainID, "eip155:")
	if _, err := strconv.ParseUint(chain, 10, 64); !ok || err != nil {
		return "", refuse("malformed proof: %s is not an eip155 chain", p.ChainID)
	}
	var b strings.Builder
	b.WriteString(p.Domain + " wants you to sign in with your Ethereum account:\n")
	b.WriteString(p.Address + "\n\n")
	if p.Statement != "" {
		b.WriteString(p.Statement + "\n")
	}
	b.WriteString("\n")
	tail(&b, p.Info, chain)
	return b.String(), nil
}

// SIWSMessage is the Solana sign-in message the Solana client signed: one
// empty line without a statement (not two as in EIP-4361), and the chain
// id's reference only.
func SIWSMessage(p Proof) (string, error) {
	ref, ok := strings.CutPrefix(p.ChainID, "solana:")
	if !ok || ref == "" {
		return "", refuse("malformed proof: %s is not a solana chain", p.ChainID)
	}
	var b strings.Builder
	b.WriteString(p.Domain + " wants you to sign in with your Solana account:\n")
	b.WriteString(p.Address + "\n\n")
	if p.Statement != "" {
		b.WriteString(p.Statement + "\n\n")
	}
	tail(&b, p.Info, ref)
	return b.String(), nil
}

// tail writes the fields both messages share, in their order.
func tail(b *strings.Builder, in Info, chain string) {
	fmt.Fprintf(b, "URI: %s\nVersion: %s\nChain ID: %s\nNonce: %s\nIssued At: %s", in.URI, in.Version, chain, in.Nonce, in.IssuedAt)
	if in.ExpirationTime != "" {
		b.WriteString("\nExpiration Time: " + in.ExpirationTime)
	}
	if in.NotBefore != "" {
		b.WriteString("\nNot Before: " + in.NotBefore)
	}
	if in.RequestID != "" {
		b.WriteString("\nRequest ID: " + in.RequestID)
	}
	if len(in.Resources) > 0 {
		b.WriteString("\nResources:")
		for _, r := range in.Resources {
			b.WriteString("\n- " + r)
		}
	}
}

// chainOf finds chainID among the challenge's chains.
func chainOf(ch Challenge, chainID string) (Chain, error) {
	for _, c := range ch.SupportedChains {
		if c.ChainID == chainID {
			return c, nil
		}
	}
	return Chain{}, errors.New("siwx: the challenge does not offer " + chainID)
}

// SignEVM answers a challenge as the official EVM client does: the
// EIP-55 address, the EIP-4361 message, an EIP-191 personal_sign.
func SignEVM(ch Challenge, chainID string, key *ecdsa.PrivateKey) (Proof, error) {
	c, err := chainOf(ch, chainID)
	if err != nil {
		return Proof{}, err
	}
	p := Proof{Info: ch.Info, ChainID: c.ChainID, Type: c.Type, Address: crypto.PubkeyToAddress(key.PublicKey).Hex()}
	msg, err := SIWEMessage(p)
	if err != nil {
		return Proof{}, err
	}
	sig, err := crypto.Sign(accounts.TextHash([]byte(msg)), key)
	if err != nil {
		return Proof{}, err
	}
	sig[64] += 27
	p.Signature = "0x" + hex.EncodeToString(sig)
	return p, nil
}

// SignSolana answers a challenge as the official Solana client does.
func SignSolana(ch Challenge, chainID string, key ed25519.PrivateKey) (Proof, error) {
	c, err := chainOf(ch, chainID)
	if err != nil {
		return Proof{}, err
	}
	p := Proof{Info: ch.Info, ChainID: c.ChainID, Type: c.Type, Address: base58.Encode(key.Public().(ed25519.PublicKey))}
	msg, err := SIWSMessage(p)
	if err != nil {
		return Proof{}, err
	}
	p.Signature = base58.Encode(ed25519.Sign(key, []byte(msg)))
	return p, nil
}

// EncodeHeader is the SIGN-IN-WITH-X header value of a proof.
func EncodeHeader(p Proof) (string, error) {
	b, err := json.Marshal(p)
	if err != nil {
		return "", err
	}
	return base64.StdEncoding.EncodeToString(b), nil
}
