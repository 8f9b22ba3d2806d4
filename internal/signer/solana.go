package signer

import (
	"encoding/base64"
	"strings"

	bin "github.com/gagliardetto/binary"
	"github.com/gagliardetto/solana-go"
)

// MaxSolanaTransaction is the largest serialized Solana transaction (the packet size limit).
const MaxSolanaTransaction = 1232

// SolanaTransaction is a Solana transaction to sign: the enclave signs its message and its
// signature takes the slot of the enclave's key.
type SolanaTransaction struct {
	tx *solana.Transaction
}

// Message is the serialized message the enclave signs.
func (t SolanaTransaction) Message() ([]byte, error) { return t.tx.Message.MarshalBinary() }

// WithSignature puts sig in slot index and answers the transaction, base64.
func (t SolanaTransaction) WithSignature(index int, sig []byte) (string, error) {
	n := int(t.tx.Message.Header.NumRequiredSignatures)
	sigs := make([]solana.Signature, n)
	copy(sigs, t.tx.Signatures)
	copy(sigs[index][:], sig)
	t.tx.Signatures = sigs
	b, err := t.tx.MarshalBinary()
	if err != nil {
		return "", err
	}
	return base64.StdEncoding.EncodeToString(b), nil
}

// ParseSolanaTransaction reads a serialized transaction (base64, with or without signatures, as
// wallets and @solana/web3.js serialise it), legacy or v0.
func ParseSolanaTransaction(s string) (SolanaTransaction, error) {
	b, err := decodeBase64(s)
	if err != nil {
		return SolanaTransaction{}, invalid("transaction", "is not base64: %v", err)
	}
	if len(b) == 0 {
		return SolanaTransaction{}, invalid("transaction", "is required")
	}
	if len(b) > MaxSolanaTransaction {
		return SolanaTransaction{}, invalid("transaction", "is %d bytes; a Solana transaction is at most %d", len(b), MaxSolanaTransaction)
	}
	dec := bin.NewBinDecoder(b)
	tx, err := solana.TransactionFromDecoder(dec)
	if err != nil {
		return SolanaTransaction{}, invalid("transaction", "is not a serialized Solana transaction: %v", err)
	}
	if dec.Remaining() != 0 {
		return SolanaTransaction{}, invalid("transaction", "has %d bytes after the transaction", dec.Remaining())
	}
	if err := checkMessage(&tx.Message); err != nil {
		return SolanaTransaction{}, err
	}
	if len(tx.Signatures) > int(tx.Message.Header.NumRequiredSignatures) {
		return SolanaTransaction{}, invalid("transaction", "has %d signatures for %d signers", len(tx.Signatures), tx.Message.Header.NumRequiredSignatures)
	}
	return SolanaTransaction{tx: tx}, nil
}

// ParseSolanaMessage reads a serialized transaction message (what the enclave signs).
func ParseSolanaMessage(b []byte) (*solana.Message, error) {
	var m solana.Message
	if err := m.UnmarshalWithDecoder(bin.NewBinDecoder(b)); err != nil {
		return nil, invalid("transaction", "is not a Solana transaction message: %v", err)
	}
	if err := checkMessage(&m); err != nil {
		return nil, err
	}
	return &m, nil
}

func checkMessage(m *solana.Message) error {
	n := int(m.Header.NumRequiredSignatures)
	if n == 0 || n > len(m.AccountKeys) {
		return invalid("transaction", "names %d signers among %d accounts", n, len(m.AccountKeys))
	}
	return nil
}

// decodeBase64 reads standard or URL-safe base64, padded or not.
func decodeBase64(s string) ([]byte, error) {
	s = strings.TrimSpace(s)
	if strings.ContainsAny(s, "-_") {
		return base64.RawURLEncoding.DecodeString(strings.TrimRight(s, "="))
	}
	return base64.RawStdEncoding.DecodeString(strings.TrimRight(s, "="))
}
