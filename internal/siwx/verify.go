package siwx

import (
	"crypto/ed25519"
	"encoding/hex"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/ethereum/go-ethereum/accounts"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/mr-tron/base58"
)

// Expect is what a proof must match.
type Expect struct {
	// Domain is the domain the challenge named: host[:port] as Host
	// writes it (compared case-insensitively, as host names are). Empty
	// means Host(Origin), which is what NewChallenge puts in a challenge
	// for a resource on Origin.
	Domain string
	// Origin is scheme://host[:port] of the resource; the proof's uri must
	// be on it (same scheme, host and port).
	Origin string
	// Networks are the CAIP-2 chains accepted.
	Networks []string
	// MaxAge bounds how old issuedAt may be; 0 means DefaultMaxAge.
	MaxAge time.Duration
}

// DefaultMaxAge is the official server's bound on issuedAt's age.
const DefaultMaxAge = 5 * time.Minute

// ClockSkew is how far ahead of now issuedAt and notBefore may be: the
// machines that issued the challenge and that verify it may disagree by a
// few seconds. expirationTime gets no such grace.
const ClockSkew = 30 * time.Second

// Verify checks a proof, in this order: version "1"; domain equals
// want.Domain (its port included: "api.example.com" does not match
// "api.example.com:8443", as in the official server); uri is on
// want.Origin; chainId is one of want.Networks and fits type (eip155 →
// eip191, solana → ed25519); issuedAt at most MaxAge old and at most
// ClockSkew ahead; expirationTime, if present, after now; notBefore, if
// present, at most ClockSkew ahead; then the signature over the rebuilt
// message (SIWEMessage: EIP-191 personal_sign, recovered with secp256k1
// and compared with the address case-insensitively; SIWSMessage: Ed25519
// under the base58 public key that is the address).
//
// It returns the signing address, normalized: EVM as lowercase 0x-hex,
// Solana base58 as sent. A refusal is an *Error (see the Reason*
// constants); a malformed want is a plain error. The nonce is not checked
// here: the caller must consume p.Nonce (issued by it, not yet used, not
// expired) after Verify succeeds.
func Verify(p Proof, want Expect, now time.Time) (string, error) {
	origin, err := parseOrigin(want.Origin)
	if err != nil {
		return "", err
	}
	maxAge := want.MaxAge
	if maxAge <= 0 {
		maxAge = DefaultMaxAge
	}
	if p.Version != "1" {
		return "", malformed(`version must be "1"`)
	}
	domain := want.Domain
	if domain == "" {
		domain = Host(origin)
	}
	if !strings.EqualFold(bareHost(p.Domain), bareHost(domain)) {
		return "", refuse(ReasonDomainMismatch)
	}
	if !onOrigin(p.URI, origin) {
		return "", refuse(ReasonURIOrigin)
	}
	if !slices.Contains(want.Networks, p.ChainID) {
		return "", refuse(ReasonUnsupportedChain)
	}
	evm := strings.HasPrefix(p.ChainID, "eip155:")
	if !(evm && p.Type == TypeEIP191) && !(strings.HasPrefix(p.ChainID, "solana:") && p.Type == TypeEd25519) {
		return "", refuse(ReasonUnsupportedChain)
	}
	issued, err := parseTime(p.IssuedAt)
	switch {
	case err != nil:
		return "", malformed("issuedAt is not an RFC 3339 date-time")
	case issued.After(now.Add(ClockSkew)):
		return "", refuse(ReasonIssuedInFuture)
	case now.Sub(issued) > maxAge:
		return "", refuse(ReasonTooOld(maxAge))
	}
	if p.ExpirationTime != "" {
		exp, err := parseTime(p.ExpirationTime)
		if err != nil {
			return "", malformed("expirationTime is not an RFC 3339 date-time")
		}
		if !now.Before(exp) {
			return "", refuse(ReasonExpired)
		}
	}
	if p.NotBefore != "" {
		nb, err := parseTime(p.NotBefore)
		if err != nil {
			return "", malformed("notBefore is not an RFC 3339 date-time")
		}
		if nb.After(now.Add(ClockSkew)) {
			return "", refuse(ReasonNotYetValid)
		}
	}
	if evm {
		return verifyEVM(p)
	}
	return verifySolana(p)
}

// bareHost drops the brackets of an IPv6 literal: the challenge's domain
// is new URL().hostname ("[::1]"), a caller's may be url.URL.Hostname()
// ("::1").
func bareHost(h string) string {
	if len(h) > 2 && h[0] == '[' && h[len(h)-1] == ']' {
		return h[1 : len(h)-1]
	}
	return h
}

// parseOrigin reads want.Origin: scheme://host[:port], nothing else.
func parseOrigin(o string) (*url.URL, error) {
	u, err := url.Parse(o)
	if err != nil || u.Scheme == "" || u.Host == "" || u.User != nil || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("siwx: Expect.Origin %q is not scheme://host[:port]", o)
	}
	return u, nil
}

// onOrigin reports whether uri is an absolute URI on origin: same scheme,
// host (case-insensitively) and port (a default port counts as none), no
// user info. Unlike a bare prefix test it refuses
// https://api.example.com.evil.example/ and https://api.example.com@evil/.
func onOrigin(uri string, origin *url.URL) bool {
	u, err := url.Parse(uri)
	if err != nil || u.User != nil || u.Opaque != "" || u.Host == "" {
		return false
	}
	return strings.EqualFold(u.Scheme, origin.Scheme) &&
		strings.EqualFold(u.Hostname(), origin.Hostname()) &&
		port(u) == port(origin)
}

// port is u's port as new URL(u).port has it: without leading zeros, and
// empty when it is the scheme's default.
func port(u *url.URL) string {
	p := u.Port()
	if n, err := strconv.ParseUint(p, 10, 16); err == nil {
		p = strconv.FormatUint(n, 10)
	}
	if (p == "443" && strings.EqualFold(u.Scheme, "https")) || (p == "80" && strings.EqualFold(u.Scheme, "http")) {
		return ""
	}
	return p
}

func verifyEVM(p Proof) (string, error) {
	msg, err := SIWEMessage(p)
	if err != nil {
		return "", err
	}
	sig, err := hex.DecodeString(strings.TrimPrefix(strings.TrimPrefix(p.Signature, "0x"), "0X"))
	if err != nil || len(sig) != crypto.SignatureLength {
		return "", malformed("signature is not 65 bytes of 0x-hex")
	}
	switch sig[64] {
	case 0, 1:
	case 27, 28:
		sig[64] -= 27
	default:
		return "", malformed("signature's v is not 0, 1, 27 or 28")
	}
	pub, err := crypto.SigToPub(accounts.TextHash([]byte(msg)), sig)
	if err != nil || crypto.PubkeyToAddress(*pub) != common.HexToAddress(p.Address) {
		return "", refuse(ReasonBadSignature)
	}
	return strings.ToLower(common.HexToAddress(p.Address).Hex()), nil
}

func verifySolana(p Proof) (string, error) {
	pub, err := base58.Decode(p.Address)
	if err != nil || len(pub) != ed25519.PublicKeySize || base58.Encode(pub) != p.Address {
		return "", malformed("address is not a base58 Ed25519 public key")
	}
	sig, err := base58.Decode(p.Signature)
	if err != nil || len(sig) != ed25519.SignatureSize {
		return "", malformed("signature is not 64 bytes of base58")
	}
	msg, err := SIWSMessage(p)
	if err != nil {
		return "", err
	}
	if !ed25519.Verify(ed25519.PublicKey(pub), []byte(msg), sig) {
		return "", refuse(ReasonBadSignature)
	}
	return p.Address, nil
}
