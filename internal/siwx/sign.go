package siwx

import (
	"crypto/ecdsa"
	"crypto/ed25519"
	"encoding/hex"
	"fmt"
	"strings"

	"github.com/ethereum/go-ethereum/accounts"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/mr-tron/base58"
)

// answer is the proof skeleton for chainID: the challenge's info echoed
// with the chain and its type, as the official client builds it (the
// signatureScheme hint is not echoed, as there).
func answer(ch Challenge, chainID, typ string) (Proof, error) {
	for _, c := range ch.SupportedChains {
		if c.ChainID != chainID {
			continue
		}
		if c.Type != typ {
			return Proof{}, fmt.Errorf("siwx: the challenge offers %s with type %q, not %q", chainID, c.Type, typ)
		}
		in := ch.Info
		// JSON drops an empty resources list: sign what the header will say.
		if len(in.Resources) == 0 {
			in.Resources = nil
		}
		return Proof{Info: in, ChainID: c.ChainID, Type: c.Type}, nil
	}
	return Proof{}, fmt.Errorf("siwx: the challenge does not offer %s", chainID)
}

// SignEVM answers a challenge on an eip155 chain as the official EVM
// client does: the EIP-55 checksummed address, the EIP-4361 message, an
// EIP-191 personal_sign signature as 0x-hex with v = 27/28.
func SignEVM(ch Challenge, chainID string, key *ecdsa.PrivateKey) (Proof, error) {
	if !strings.HasPrefix(chainID, "eip155:") {
		return Proof{}, fmt.Errorf("siwx: %s is not an eip155 chain", chainID)
	}
	p, err := answer(ch, chainID, TypeEIP191)
	if err != nil {
		return Proof{}, err
	}
	p.Address = crypto.PubkeyToAddress(key.PublicKey).Hex()
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

// SignSolana answers a challenge on a solana chain as the official Solana
// client does: the base58 public key as address, Ed25519 over the UTF-8
// Solana sign-in message, the signature in base58.
func SignSolana(ch Challenge, chainID string, key ed25519.PrivateKey) (Proof, error) {
	if !strings.HasPrefix(chainID, "solana:") {
		return Proof{}, fmt.Errorf("siwx: %s is not a solana chain", chainID)
	}
	if len(key) != ed25519.PrivateKeySize {
		return Proof{}, fmt.Errorf("siwx: an Ed25519 private key is %d bytes, not %d", ed25519.PrivateKeySize, len(key))
	}
	p, err := answer(ch, chainID, TypeEd25519)
	if err != nil {
		return Proof{}, err
	}
	p.Address = base58.Encode(key.Public().(ed25519.PublicKey))
	msg, err := SIWSMessage(p)
	if err != nil {
		return Proof{}, err
	}
	p.Signature = base58.Encode(ed25519.Sign(key, []byte(msg)))
	return p, nil
}
