package siwx

import (
	"strconv"
	"strings"

	"github.com/ethereum/go-ethereum/common"
)

// SIWEMessage is the EIP-4361 message the official EVM client signs for p
// (@signinwithethereum/siwe SiweMessage.prepareMessage, as
// @x402/extensions builds it):
//
//	{domain} wants you to sign in with your Ethereum account:
//	{address}
//
//	{statement}
//
//	URI: {uri}
//	Version: {version}
//	Chain ID: {number of eip155:<number>}
//	Nonce: {nonce}
//	Issued At: {issuedAt}
//	[Expiration Time: …][Not Before: …][Request ID: …]
//	[Resources:
//	- {resource}…]
//
// Without a statement there are two empty lines between the address and
// "URI:". "Resources:" is written when resources is present, even empty
// (a nil slice is absent); the other optional fields when non-empty. (Go
// cannot tell an absent string from an empty one: siwe would write
// "Request ID: " for a present empty requestId; our challenges never carry
// one. An empty statement makes siwe fail, so no client sends one.)
//
// The address: siwe ≥ 4.2 (what @x402/extensions' "^4.1.0" installs)
// writes an all-lowercase or all-uppercase address in its EIP-55 checksum
// form, so the message does too; a mixed-case address must be a correct
// EIP-55 checksum (siwe refuses to build the message otherwise), and is
// written as sent. So a proof may carry its address checksummed (as the
// official client does with viem accounts) or unchecksummed; either way
// the signed text has the checksummed address.
//
// The fields the EIP-4361 grammar constrains are checked (siwe would not
// have built the message): nonce, statement, chain id, address, no control
// characters anywhere.
func SIWEMessage(p Proof) (string, error) {
	m := eip155.FindStringSubmatch(p.ChainID)
	if m == nil {
		return "", malformed("chainId %q is not eip155:<number>", p.ChainID)
	}
	chain, err := strconv.ParseUint(m[1], 10, 64)
	if err != nil {
		return "", malformed("chainId %q is not eip155:<number>", p.ChainID)
	}
	addr, err := messageAddress(p.Address)
	if err != nil {
		return "", err
	}
	if err := plainFields(p); err != nil {
		return "", err
	}
	if p.Statement != "" && !statementOK.MatchString(p.Statement) {
		return "", malformed("statement has characters EIP-4361 does not allow")
	}
	if !nonceOK.MatchString(p.Nonce) {
		return "", malformed("nonce is not at least 8 letters or digits")
	}
	var b strings.Builder
	b.WriteString(p.Domain + " wants you to sign in with your Ethereum account:\n")
	b.WriteString(addr + "\n")
	if p.Statement != "" {
		b.WriteString("\n" + p.Statement + "\n\n")
	} else {
		b.WriteString("\n\n")
	}
	tail(&b, p.Info, strconv.FormatUint(chain, 10), p.Resources != nil)
	return b.String(), nil
}

// SIWSMessage is the Solana sign-in message the official Solana client
// signs for p (formatSIWSMessage): the same lines as SIWEMessage with
// "Solana account" in the header, the address as sent (base58), the chain
// id's reference only (the genesis hash), one empty line when there is no
// statement (not two), and "Resources:" only when there are resources.
func SIWSMessage(p Proof) (string, error) {
	ref, ok := strings.CutPrefix(p.ChainID, "solana:")
	if !ok || !caip2.MatchString(p.ChainID) {
		return "", malformed("chainId %q is not solana:<genesis hash>", p.ChainID)
	}
	if err := plainFields(p); err != nil {
		return "", err
	}
	var b strings.Builder
	b.WriteString(p.Domain + " wants you to sign in with your Solana account:\n")
	b.WriteString(p.Address + "\n\n")
	if p.Statement != "" {
		b.WriteString(p.Statement + "\n\n")
	}
	tail(&b, p.Info, ref, len(p.Resources) > 0)
	return b.String(), nil
}

// tail writes the fields both messages share, in their order.
func tail(b *strings.Builder, in Info, chain string, resources bool) {
	b.WriteString("URI: " + in.URI + "\nVersion: " + in.Version + "\nChain ID: " + chain +
		"\nNonce: " + in.Nonce + "\nIssued At: " + in.IssuedAt)
	if in.ExpirationTime != "" {
		b.WriteString("\nExpiration Time: " + in.ExpirationTime)
	}
	if in.NotBefore != "" {
		b.WriteString("\nNot Before: " + in.NotBefore)
	}
	if in.RequestID != "" {
		b.WriteString("\nRequest ID: " + in.RequestID)
	}
	if resources {
		b.WriteString("\nResources:")
		for _, r := range in.Resources {
			b.WriteString("\n- " + r)
		}
	}
}

// plainFields refuses control characters (line breaks above all) in the
// fields a message is made of: with them, different proofs could spell
// the same text. The official client never sends them (the SIWE grammar
// forbids them; our challenges have none).
func plainFields(p Proof) error {
	for _, f := range []struct{ name, v string }{
		{"domain", p.Domain}, {"address", p.Address}, {"statement", p.Statement}, {"uri", p.URI},
		{"version", p.Version}, {"nonce", p.Nonce}, {"issuedAt", p.IssuedAt},
		{"expirationTime", p.ExpirationTime}, {"notBefore", p.NotBefore}, {"requestId", p.RequestID},
	} {
		if hasControl(f.v) {
			return malformed("%s has control characters", f.name)
		}
	}
	for _, r := range p.Resources {
		if hasControl(r) {
			return malformed("resources has control characters")
		}
	}
	return nil
}

func hasControl(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] == 0x7f {
			return true
		}
	}
	return false
}

// messageAddress is the address as siwe writes it into the message (see
// SIWEMessage).
func messageAddress(a string) (string, error) {
	if len(a) != 42 || (a[:2] != "0x" && a[:2] != "0X") || !isHexString(a[2:]) {
		return "", malformed("address is not a 0x-prefixed 20-byte hex EVM address")
	}
	body := a[2:]
	checksummed := common.HexToAddress(a).Hex()
	if body == strings.ToLower(body) || body == strings.ToUpper(body) {
		return checksummed, nil
	}
	if a != checksummed {
		return "", malformed("address has a wrong EIP-55 checksum")
	}
	return a, nil
}

func isHexString(s string) bool {
	for i := 0; i < len(s); i++ {
		if !isHex(s[i]) {
			return false
		}
	}
	return true
}
