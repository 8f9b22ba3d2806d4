package signer

import (
	"encoding/json"
	"testing"
)

// The parsers of untrusted input never panic, and what they accept is
// well-formed.

func FuzzParseEVMTransaction(f *testing.F) {
	f.Add([]byte(`{"chainId":"8453","nonce":"7","to":"0x00000000000000000000000000000000000000aa","value":"1000","gas":"21000","maxFeePerGas":"3","maxPriorityFeePerGas":"1","data":"0x"}`))
	f.Add([]byte(`"0x02df82210507843b9aca0084b2d05e00825208940000000000000000000000000000000000000000aa8203e880c0"`))
	f.Add([]byte(`{"chainId":1,"nonce":0,"gas":1,"maxFeePerGas":1,"maxPriorityFeePerGas":1,"accessList":[{"address":"0x00000000000000000000000000000000000000aa","storageKeys":[]}]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		tx, err := ParseEVMTransaction(json.RawMessage(b))
		if err != nil {
			return
		}
		if tx.Tx().ChainId().Sign() <= 0 || tx.Tx().Gas() == 0 || len(tx.Hash()) != 32 {
			t.Fatalf("accepted %s", b)
		}
	})
}

func FuzzParseSolanaTransaction(f *testing.F) {
	f.Add("AQAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA==")
	f.Add("")
	f.Add("%%%")
	f.Fuzz(func(t *testing.T, s string) {
		tx, err := ParseSolanaTransaction(s)
		if err != nil {
			return
		}
		if _, err := tx.Message(); err != nil {
			t.Fatalf("accepted %q whose message does not encode: %v", s, err)
		}
	})
}

func FuzzSolanaMessage(f *testing.F) {
	f.Add([]byte{1, 0, 1, 2})
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := ParseSolanaMessage(b)
		if err == nil && (m.Header.NumRequiredSignatures == 0 || int(m.Header.NumRequiredSignatures) > len(m.AccountKeys)) {
			t.Fatalf("accepted %x", b)
		}
	})
}

func FuzzTypedDataHash(f *testing.F) {
	f.Add([]byte(mailJSON))
	f.Add([]byte(`{"types":{"A":[{"name":"x","type":"A[]"}]},"domain":{},"message":{"x":[]}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		h, _, err := TypedDataHash(b)
		if err == nil && len(h) != 32 {
			t.Fatalf("a %d-byte digest", len(h))
		}
	})
}

func FuzzParseNonce(f *testing.F) {
	for _, s := range []string{"0xabcd", "abcd", "c2lnbg", "-_-_", "", "0x", "=="} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		b, err := ParseNonce(s)
		if err == nil && (len(b) == 0 || len(b) > MaxNonce) {
			t.Fatalf("accepted %q as %d bytes", s, len(b))
		}
	})
}
