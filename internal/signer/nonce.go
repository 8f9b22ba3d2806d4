package signer

import (
	"encoding/base64"
	"encoding/hex"
	"regexp"
	"strings"
)

// MaxNonce is the longest attestation nonce a caller may send (the Nitro format's limit).
const MaxNonce = 512

var hexNonce = regexp.MustCompile(`^(0x)?[0-9a-fA-F]+$`)

// ParseNonce reads a caller's attestation nonce: hex (0x optional, even length) when it reads as
// hex, else base64 (standard or URL-safe, padding optional); 1–512 bytes.
func ParseNonce(s string) ([]byte, error) {
	if len(s) > 2*MaxNonce+2 {
		return nil, invalid("nonce", "is longer than %d bytes", MaxNonce)
	}
	var b []byte
	var err error
	if hexNonce.MatchString(s) && len(strings.TrimPrefix(s, "0x"))%2 == 0 {
		b, err = hex.DecodeString(strings.TrimPrefix(s, "0x"))
	} else {
		t := strings.TrimRight(s, "=")
		if strings.ContainsAny(t, "-_") {
			b, err = base64.RawURLEncoding.DecodeString(t)
		} else {
			b, err = base64.RawStdEncoding.DecodeString(t)
		}
	}
	switch {
	case err != nil:
		return nil, invalid("nonce", "must be hex or base64")
	case len(b) == 0:
		return nil, invalid("nonce", "is empty")
	case len(b) > MaxNonce:
		return nil, invalid("nonce", "is longer than %d bytes", MaxNonce)
	}
	return b, nil
}
