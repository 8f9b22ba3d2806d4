package vault

import (
	"bytes"
	"conduit/internal/codec"
	"crypto/sha256"
	"encoding/binary"
	"fmt"

	"github.com/tink-crypto/tink-go/v2/aead"
	"github.com/tink-crypto/tink-go/v2/aead/aesgcm"
	"github.com/tink-crypto/tink-go/v2/insecuresecretdataaccess"
	"github.com/tink-crypto/tink-go/v2/keyset"
	tinkpb "github.com/tink-crypto/tink-go/v2/proto/tink_go_proto"
	"github.com/tink-crypto/tink-go/v2/secretdata"
	"github.com/tink-crypto/tink-go/v2/tink"
)

// Master is the key-encryption key: a Tink AES-256-GCM keyset built from
// the configured keys ("id:base64(32 bytes)", comma-separated, the first
// one primary). Every ciphertext carries the id of the key that made it
// (Tink's output prefix), so rotating is listing a new key first and
// keeping the old ones until everything is re-wrapped (docs).
type Master struct {
	aead tink.AEAD
}

// NewMaster builds the master key from its configuration.
func NewMaster(spec string) (*Master, error) {
	params, err := aesgcm.NewParameters(aesgcm.ParametersOpts{KeySizeInBytes: 32, IVSizeInBytes: 12, TagSizeInBytes: 16, Variant: aesgcm.VariantTink})
	if err != nil {
		return nil, err
	}
	km := keyset.NewManager()
	keys, err := codec.ParseKeys(spec, "vault")
	if err != nil {
		return nil, err
	}
	var primary uint32
	seen := map[uint32]string{}
	for _, key := range keys {
		h := sha256.Sum256([]byte(key.ID))
		kid := binary.BigEndian.Uint32(h[:4])
		if prev, dup := seen[kid]; dup {
			return nil, fmt.Errorf("vault key ids %q and %q collide", prev, key.ID)
		}
		seen[kid] = key.ID
		k, err := aesgcm.NewKey(secretdata.NewBytesFromData(key.Secret, insecuresecretdataaccess.Token{}), kid, params)
		if err != nil {
			return nil, err
		}
		if _, err := km.AddKey(k); err != nil {
			return nil, err
		}
		if primary == 0 {
			primary = kid
		}
	}
	if err := km.SetPrimary(primary); err != nil {
		return nil, err
	}
	h, err := km.Handle()
	if err != nil {
		return nil, err
	}
	a, err := aead.New(h)
	if err != nil {
		return nil, err
	}
	return &Master{aead: a}, nil
}

// Seal encrypts a small secret (a proxy's upstream key) bound to purpose.
func (m *Master) Seal(plain []byte, purpose string) ([]byte, error) {
	return m.aead.Encrypt(plain, []byte(purpose))
}

// Open decrypts what Seal made for the same purpose.
func (m *Master) Open(sealed []byte, purpose string) ([]byte, error) {
	return m.aead.Decrypt(sealed, []byte(purpose))
}

// newKeyset makes a fresh keyset from template, wrapped by the master key
// with ad bound (a wrapped keyset cannot be moved to another subject).
func (m *Master) newKeyset(t *tinkpb.KeyTemplate, ad string) (*keyset.Handle, []byte, error) {
	h, err := keyset.NewHandle(t)
	if err != nil {
		return nil, nil, err
	}
	wrapped, err := m.wrap(h, ad)
	return h, wrapped, err
}

func (m *Master) wrap(h *keyset.Handle, ad string) ([]byte, error) {
	var buf bytes.Buffer
	if err := h.WriteWithAssociatedData(keyset.NewBinaryWriter(&buf), m.aead, []byte(ad)); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func (m *Master) unwrap(wrapped []byte, ad string) (*keyset.Handle, error) {
	return keyset.ReadWithAssociatedData(keyset.NewBinaryReader(bytes.NewReader(wrapped)), m.aead, []byte(ad))
}

// Rewrap re-encrypts a wrapped keyset under the current primary master key
// (key rotation: see docs/redaction-proxies.md).
func (m *Master) Rewrap(wrapped []byte, ad string) ([]byte, error) {
	h, err := m.unwrap(wrapped, ad)
	if err != nil {
		return nil, err
	}
	return m.wrap(h, ad)
}
