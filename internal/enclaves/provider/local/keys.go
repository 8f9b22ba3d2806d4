package local

import (
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/ethereum/go-ethereum/crypto"
	"github.com/mr-tron/base58"

	"conduit/internal/attest"
	"conduit/internal/enclaves/provider"
)

// keysFile holds an enclave's signing keys (mode 0600 in the enclave's 0700 directory). They are
// made at the first deployment and kept until Terminate, so the attested address stays the same
// across restarts of the instance; they are never returned by the provider, only used by it.
const keysFile = "signing-keys.json"

type keys struct {
	evm    *ecdsa.PrivateKey  // secp256k1
	solana ed25519.PrivateKey // ed25519
}

type wireKeys struct {
	EVM    string `json:"secp256k1"` // hex private scalar
	Solana string `json:"ed25519"`   // hex seed
}

func loadOrCreateKeys(path string) (*keys, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		k, err := newKeys()
		if err != nil {
			return nil, err
		}
		w := wireKeys{EVM: hex.EncodeToString(crypto.FromECDSA(k.evm)), Solana: hex.EncodeToString(k.solana.Seed())}
		data, err := json.Marshal(w)
		if err != nil {
			return nil, err
		}
		f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
		if err != nil {
			return nil, err
		}
		if _, err := f.Write(data); err != nil {
			f.Close()
			return nil, err
		}
		return k, f.Close()
	}
	if err != nil {
		return nil, err
	}
	var w wireKeys
	if err := json.Unmarshal(data, &w); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	evm, err := crypto.HexToECDSA(w.EVM)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	seed, err := hex.DecodeString(w.Solana)
	if err != nil || len(seed) != ed25519.SeedSize {
		return nil, fmt.Errorf("%s: bad ed25519 seed", path)
	}
	return &keys{evm: evm, solana: ed25519.NewKeyFromSeed(seed)}, nil
}

func newKeys() (*keys, error) {
	evm, err := crypto.GenerateKey()
	if err != nil {
		return nil, err
	}
	_, sol, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, err
	}
	return &keys{evm: evm, solana: sol}, nil
}

func (k *keys) public() attest.SigningKeys {
	return attest.SigningKeys{EVM: &k.evm.PublicKey, Solana: k.solana.Public().(ed25519.PublicKey)}
}

func (k *keys) evmAddress() string { return crypto.PubkeyToAddress(k.evm.PublicKey).Hex() }

func (k *keys) solanaAddress() string {
	return base58.Encode(k.solana.Public().(ed25519.PublicKey))
}

// sign signs for the EVM (a 32-byte hash, e.g. an EIP-1559 signing hash or an EIP-191 message
// hash: the caller hashes, so the agent never guesses what it signs) or for Solana (the message
// bytes, which ed25519 hashes itself).
func (k *keys) sign(req provider.SignRequest) ([]byte, error) {
	switch req.Key {
	case provider.KeyEVM:
		if len(req.Payload) != 32 {
			return nil, fmt.Errorf("an EVM signature is over a 32-byte hash, got %d bytes", len(req.Payload))
		}
		return crypto.Sign(req.Payload, k.evm)
	case provider.KeySolana:
		if len(req.Payload) == 0 {
			return nil, errors.New("nothing to sign")
		}
		return ed25519.Sign(k.solana, req.Payload), nil
	default:
		return nil, fmt.Errorf("unknown key %q (want %q or %q)", req.Key, provider.KeyEVM, provider.KeySolana)
	}
}
