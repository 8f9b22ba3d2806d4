// Package siwx is Sign-In-With-X (CAIP-122) as the x402 "sign-in-with-x"
// extension uses it, server side: the challenge a 402 carries, reading a
// client's proof from the SIGN-IN-WITH-X header, rebuilding byte for byte
// the message the official TypeScript client (@x402/extensions
// sign-in-with-x) signed — EIP-4361 for EVM, the Solana sign-in text for
// Solana — and checking its signature, origin and freshness.
//
// Whether a nonce was issued by this server and is still unused is the
// caller's business (it needs shared storage): Verify checks everything
// else, and the caller then consumes Proof.Nonce.
//
// Client helpers (SignEVM, SignSolana, EncodeHeader) answer a challenge the
// way the official client does; tests and the CLI use them.
package siwx

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// ExtensionKey names the challenge in PaymentRequired.extensions.
const ExtensionKey = "sign-in-with-x"

// HeaderName is the request header carrying the proof (HTTP treats header
// names case-insensitively).
const HeaderName = "SIGN-IN-WITH-X"

// Signature types (CAIP-122 "type") of a chain and a proof.
const (
	TypeEIP191  = "eip191"
	TypeEd25519 = "ed25519"
)

// Info is what the server asks to be signed (the challenge's "info"; a
// proof echoes it). Optional fields are empty when absent.
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
	ChainID string `json:"chainId"`
	Type    string `json:"type"`
	// SignatureScheme is an optional hint: eip191, eip1271, eip6492, siws.
	SignatureScheme string `json:"signatureScheme,omitempty"`
}

// Challenge is extensions["sign-in-with-x"] of a 402.
type Challenge struct {
	Info            Info           `json:"info"`
	SupportedChains []Chain        `json:"supportedChains"`
	Schema          map[string]any `json:"schema"`
}

// Proof is the client's SIGN-IN-WITH-X payload: the challenge's info
// echoed, plus the chosen chain and its type, the address and the
// signature (EVM: 0x-hex, 65 bytes; Solana: base58, 64 bytes).
type Proof struct {
	Info
	ChainID         string `json:"chainId"`
	Type            string `json:"type"`
	Address         string `json:"address"`
	Signature       string `json:"signature"`
	SignatureScheme string `json:"signatureScheme,omitempty"`
}

// Error is a refused proof. Reason is stable and safe to show the client:
// one of the Reason* constants, "issuedAt is older than <max age>", or
// "malformed proof: <what>".
type Error struct{ Reason string }

func (e *Error) Error() string { return "sign-in refused: " + e.Reason }

// Stable refusal reasons.
const (
	ReasonDomainMismatch   = "domain mismatch"
	ReasonURIOrigin        = "uri does not belong to this origin"
	ReasonIssuedInFuture   = "issuedAt is in the future"
	ReasonExpired          = "expired"
	ReasonNotYetValid      = "not yet valid"
	ReasonUnsupportedChain = "unsupported chain"
	ReasonBadSignature     = "signature does not match address"
	// ReasonMalformed prefixes every refusal of a proof that cannot be
	// read or cannot be what the official client sends.
	ReasonMalformed = "malformed proof: "
)

// ReasonTooOld is the reason of a proof issued longer than maxAge ago,
// e.g. "issuedAt is older than 5 minutes".
func ReasonTooOld(maxAge time.Duration) string {
	return "issuedAt is older than " + humanDuration(maxAge)
}

func refuse(reason string) error { return &Error{Reason: reason} }

func malformed(format string, args ...any) error {
	return &Error{Reason: ReasonMalformed + fmt.Sprintf(format, args...)}
}

func humanDuration(d time.Duration) string {
	switch {
	case d == time.Minute:
		return "1 minute"
	case d > 0 && d%time.Minute == 0:
		return strconv.FormatInt(int64(d/time.Minute), 10) + " minutes"
	case d > 0 && d%time.Second == 0 && d < time.Minute:
		return strconv.FormatInt(int64(d/time.Second), 10) + " seconds"
	}
	return d.String()
}

// timeLayout is JavaScript's Date.prototype.toISOString, which the
// official server and clients use.
const timeLayout = "2006-01-02T15:04:05.000Z"

// FormatTime renders t as JavaScript's toISOString does: UTC, RFC 3339,
// always three fractional digits ("2024-01-15T10:30:00.000Z").
func FormatTime(t time.Time) string { return t.UTC().Format(timeLayout) }

// parseTime reads an RFC 3339 date-time (the ABNF's date-time; "t" and
// "z" in lower case are allowed, as there).
func parseTime(s string) (time.Time, error) {
	return time.Parse(time.RFC3339Nano, strings.ToUpper(s))
}

// Schema is the proof's JSON Schema (draft 2020-12), as the official
// server publishes it (buildSIWxSchema).
func Schema() map[string]any {
	str := func() map[string]any { return map[string]any{"type": "string"} }
	format := func(f string) map[string]any { return map[string]any{"type": "string", "format": f} }
	return map[string]any{
		"$schema": "https://json-schema.org/draft/2020-12/schema",
		"type":    "object",
		"properties": map[string]any{
			"domain":         str(),
			"address":        str(),
			"statement":      str(),
			"uri":            format("uri"),
			"version":        str(),
			"chainId":        str(),
			"type":           str(),
			"nonce":          str(),
			"issuedAt":       format("date-time"),
			"expirationTime": format("date-time"),
			"notBefore":      format("date-time"),
			"requestId":      str(),
			"resources":      map[string]any{"type": "array", "items": format("uri")},
			"signature":      str(),
		},
		"required": []string{"domain", "address", "uri", "version", "chainId", "type", "nonce", "issuedAt", "signature"},
	}
}

// statementOK is the EIP-4361 statement alphabet (siwe-abnf.txt): printable
// ASCII without " % < > \ ^ ` { | }.
var statementOK = regexp.MustCompile(`^[ !#$&'()*+,\-./0-9:;=?@A-Z\[\]_a-z~]+$`)

// nonceOK is the EIP-4361 nonce: at least 8 letters or digits.
var nonceOK = regexp.MustCompile(`^[A-Za-z0-9]{8,}$`)

// caip2 is a CAIP-2 chain id.
var caip2 = regexp.MustCompile(`^[-a-z0-9]{3,8}:[-_a-zA-Z0-9]{1,32}$`)

// eip155 is an EVM chain id as the official client reads it.
var eip155 = regexp.MustCompile(`^eip155:([0-9]+)$`)

// uriOK reports whether s uses only RFC 3986 characters, with well-formed
// percent-escapes: what the SIWE parser needs of uri and resources.
func uriOK(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case strings.IndexByte("-._~:/?#[]@!$&'()*+,;=", c) >= 0:
		case c == '%':
			if i+2 >= len(s) || !isHex(s[i+1]) || !isHex(s[i+2]) {
				return false
			}
			i += 2
		default:
			return false
		}
	}
	return s != ""
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

// Host is new URL(u).host, what the official client and server take for
// the domain: the host name in lower case (an IPv6 literal in brackets),
// then ":port" when the URL names a port other than its scheme's default
// (80 for http, 443 for https).
func Host(u *url.URL) string {
	h := strings.ToLower(u.Hostname())
	if strings.Contains(h, ":") {
		h = "[" + h + "]"
	}
	if p := port(u); p != "" {
		h += ":" + p
	}
	return h
}

// NewChallenge builds the challenge for resourceURL as the official server
// does: a fresh nonce (16 random bytes, 32 hex characters), domain = the
// URL's Host (with the port when it is not the scheme's default: the
// official client refuses to sign a challenge whose domain is not the
// host of the URL it fetched), uri = resourceURL, resources = [uri],
// issuedAt = now and expirationTime = now+ttl (none when ttl <= 0), both
// as toISOString; one chain per network (deduplicated), "ed25519" for
// solana:*, "eip191" for eip155:*. The statement (may be empty) and the
// URL must satisfy the EIP-4361 grammar, or the official EVM client
// refuses to sign.
func NewChallenge(resourceURL string, networks []string, statement string, now time.Time, ttl time.Duration) (Challenge, error) {
	u, err := url.Parse(resourceURL)
	if err != nil || u.Hostname() == "" || (u.Scheme != "http" && u.Scheme != "https") || u.User != nil {
		return Challenge{}, fmt.Errorf("siwx: resource URL %q is not an absolute http(s) URL", resourceURL)
	}
	if !uriOK(resourceURL) {
		return Challenge{}, fmt.Errorf("siwx: resource URL %q has characters RFC 3986 does not allow", resourceURL)
	}
	if statement != "" && !statementOK.MatchString(statement) {
		return Challenge{}, fmt.Errorf("siwx: the statement %q has characters EIP-4361 does not allow", statement)
	}
	chains := []Chain{}
	seen := map[string]bool{}
	for _, nw := range networks {
		if seen[nw] {
			continue
		}
		seen[nw] = true
		switch {
		case eip155.MatchString(nw):
			chains = append(chains, Chain{ChainID: nw, Type: TypeEIP191})
		case strings.HasPrefix(nw, "solana:") && caip2.MatchString(nw):
			chains = append(chains, Chain{ChainID: nw, Type: TypeEd25519})
		default:
			return Challenge{}, fmt.Errorf("siwx: network %q is neither eip155:<number> nor solana:<genesis hash>", nw)
		}
	}
	var n [16]byte
	if _, err := rand.Read(n[:]); err != nil {
		return Challenge{}, err
	}
	in := Info{
		Domain: Host(u), URI: resourceURL, Version: "1", Nonce: hex.EncodeToString(n[:]),
		IssuedAt: FormatTime(now), Statement: statement, Resources: []string{resourceURL},
	}
	if ttl > 0 {
		in.ExpirationTime = FormatTime(now.Add(ttl))
	}
	return Challenge{Info: in, SupportedChains: chains, Schema: Schema()}, nil
}

// maxHeader bounds a proof header (encoded); proofs are well under 2 KB.
const maxHeader = 16 << 10

// Signature schemes the official payload schema allows as a hint.
var signatureSchemes = map[string]bool{"eip191": true, "eip1271": true, "eip6492": true, "siws": true}

// ParseHeader reads a SIGN-IN-WITH-X header: base64 (standard as the
// official client sends it; unpadded and URL-safe are accepted too) of a
// JSON object. Keys match exactly (as JSON.parse does; unknown keys are
// ignored), fields have their JSON types, the schema's required fields are
// present and non-empty, type is eip191 or ed25519 and chainId is a CAIP-2
// chain id. Every refusal is an *Error with a "malformed proof: " reason.
// Signature, origin and freshness are Verify's.
func ParseHeader(h string) (Proof, error) {
	h = strings.TrimSpace(h)
	if h == "" || len(h) > maxHeader {
		return Proof{}, malformed("the header is empty or too large")
	}
	var raw []byte
	var err error
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if raw, err = enc.DecodeString(h); err == nil {
			break
		}
	}
	if err != nil {
		return Proof{}, malformed("not base64")
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(raw, &obj); err != nil || obj == nil {
		return Proof{}, malformed("not a JSON object")
	}
	var p Proof
	for _, f := range []struct {
		name     string
		dst      *string
		required bool
	}{
		{"domain", &p.Domain, true}, {"address", &p.Address, true}, {"statement", &p.Statement, false},
		{"uri", &p.URI, true}, {"version", &p.Version, true}, {"chainId", &p.ChainID, true},
		{"type", &p.Type, true}, {"nonce", &p.Nonce, true}, {"issuedAt", &p.IssuedAt, true},
		{"expirationTime", &p.ExpirationTime, false}, {"notBefore", &p.NotBefore, false},
		{"requestId", &p.RequestID, false}, {"signatureScheme", &p.SignatureScheme, false},
		{"signature", &p.Signature, true},
	} {
		v, ok := obj[f.name]
		if !ok {
			if f.required {
				return Proof{}, malformed("%s is missing", f.name)
			}
			continue
		}
		if len(v) == 0 || v[0] != '"' || json.Unmarshal(v, f.dst) != nil {
			return Proof{}, malformed("%s is not a string", f.name)
		}
		if f.required && *f.dst == "" {
			return Proof{}, malformed("%s is empty", f.name)
		}
	}
	if v, ok := obj["resources"]; ok {
		if len(v) == 0 || v[0] != '[' || json.Unmarshal(v, &p.Resources) != nil {
			return Proof{}, malformed("resources is not an array of strings")
		}
	}
	if p.Type != TypeEIP191 && p.Type != TypeEd25519 {
		return Proof{}, malformed("type must be eip191 or ed25519")
	}
	if !caip2.MatchString(p.ChainID) {
		return Proof{}, malformed("chainId is not a CAIP-2 chain id")
	}
	if p.SignatureScheme != "" && !signatureSchemes[p.SignatureScheme] {
		return Proof{}, malformed("signatureScheme must be eip191, eip1271, eip6492 or siws")
	}
	return p, nil
}

// EncodeHeader is the SIGN-IN-WITH-X header value of a proof: standard
// base64 (padded) of compact JSON, as the official client sends it.
func EncodeHeader(p Proof) (string, error) {
	b, err := json.Marshal(p)
	if err != nil {
		return "", err
	}
	return base64.StdEncoding.EncodeToString(b), nil
}
