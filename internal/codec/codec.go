// Package codec encrypts what Temporal stores of our workflows — inputs,
// results, activity arguments, query answers, heartbeat details — so
// payment payloads, prompts and outputs never sit in workflow history in
// the clear. AES-256-GCM with named keys: new payloads are sealed with the
// first key, and any configured key opens the payloads it sealed, so keys
// rotate by putting the new one first and dropping the old one once no
// retained history needs it. Payloads that were never encrypted pass
// through untouched.
package codec

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"

	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/sdk/converter"
	"google.golang.org/protobuf/proto"
)

// Metadata of an encrypted payload.
const (
	Encoding = "binary/encrypted"
	MetaKey  = "encryption-key-id"
)

// Codec seals and opens payloads; it is a converter.PayloadCodec.
type Codec struct {
	active string
	aeads  map[string]cipher.AEAD
}

// Key is one key of a key list: its id and its 32-byte secret.
type Key struct {
	ID     string
	Secret []byte
}

// ParseKeys reads a key list written "id:base64(32 bytes)", comma
// separated, the first being the one new data is sealed with; what names
// the keys in errors ("codec", "vault"). The payload codec and the PII
// vault's master key are both written this way.
func ParseKeys(spec, what string) ([]Key, error) {
	var keys []Key
	seen := map[string]bool{}
	for _, item := range strings.Split(spec, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		id, b64, ok := strings.Cut(item, ":")
		secret, err := base64.StdEncoding.DecodeString(b64)
		if !ok || id == "" || err != nil || len(secret) != 32 {
			return nil, fmt.Errorf("a %s key must be written id:base64 of 32 bytes (%q is not)", what, id)
		}
		if seen[id] {
			return nil, fmt.Errorf("%s key id %q is listed twice", what, id)
		}
		seen[id] = true
		keys = append(keys, Key{ID: id, Secret: secret})
	}
	if len(keys) == 0 {
		return nil, fmt.Errorf("no %s key is configured", what)
	}
	return keys, nil
}

// Parse reads keys written "id:base64(32 bytes)", comma-separated, the
// first being the one new payloads are sealed with.
func Parse(spec string) (*Codec, error) {
	keys, err := ParseKeys(spec, "codec")
	if err != nil {
		return nil, err
	}
	c := &Codec{aeads: map[string]cipher.AEAD{}, active: keys[0].ID}
	for _, k := range keys {
		block, _ := aes.NewCipher(k.Secret)
		aead, _ := cipher.NewGCM(block)
		c.aeads[k.ID] = aead
	}
	return c, nil
}

// NewKey makes a key spec for id with a fresh random secret.
func NewKey(id string) string {
	secret := make([]byte, 32)
	_, _ = rand.Read(secret)
	return id + ":" + base64.StdEncoding.EncodeToString(secret)
}

// Encode seals every payload with the active key. The key id is bound as
// additional data, so a payload cannot be passed off under another key.
func (c *Codec) Encode(ps []*commonpb.Payload) ([]*commonpb.Payload, error) {
	out := make([]*commonpb.Payload, len(ps))
	aead := c.aeads[c.active]
	for i, p := range ps {
		plain, err := proto.Marshal(p)
		if err != nil {
			return nil, err
		}
		nonce := make([]byte, aead.NonceSize())
		if _, err := rand.Read(nonce); err != nil {
			return nil, err
		}
		out[i] = &commonpb.Payload{
			Metadata: map[string][]byte{converter.MetadataEncoding: []byte(Encoding), MetaKey: []byte(c.active)},
			Data:     aead.Seal(nonce, nonce, plain, []byte(c.active)),
		}
	}
	return out, nil
}

// Decode opens encrypted payloads and passes the others through.
func (c *Codec) Decode(ps []*commonpb.Payload) ([]*commonpb.Payload, error) {
	out := make([]*commonpb.Payload, len(ps))
	for i, p := range ps {
		if string(p.GetMetadata()[converter.MetadataEncoding]) != Encoding {
			out[i] = p
			continue
		}
		id := string(p.GetMetadata()[MetaKey])
		aead, ok := c.aeads[id]
		if !ok {
			return nil, fmt.Errorf("a payload is sealed with codec key %q, which is not configured", id)
		}
		n := aead.NonceSize()
		if len(p.Data) < n {
			return nil, errors.New("an encrypted payload is truncated")
		}
		plain, err := aead.Open(nil, p.Data[:n], p.Data[n:], []byte(id))
		if err != nil {
			return nil, fmt.Errorf("a payload sealed with codec key %q does not open: %w", id, err)
		}
		out[i] = &commonpb.Payload{}
		if err := proto.Unmarshal(plain, out[i]); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// DataConverter is the SDK's default converter with payloads sealed by c.
func (c *Codec) DataConverter() converter.DataConverter {
	return converter.NewCodecDataConverter(converter.GetDefaultDataConverter(), c)
}

// Seal encrypts a secret kept outside Temporal (a registry password, a
// repository token) with the active key, binding the key id and purpose
// (e.g. "enclave/enc_…/registry") as additional data: the result is
// "key id", a zero byte, the nonce and the ciphertext.
func (c *Codec) Seal(plain []byte, purpose string) ([]byte, error) {
	aead := c.aeads[c.active]
	nonce := make([]byte, aead.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return nil, err
	}
	out := append([]byte(c.active), 0)
	out = append(out, nonce...)
	return aead.Seal(out, nonce, plain, []byte(c.active+"\x00"+purpose)), nil
}

// Open reverses Seal for the same purpose.
func (c *Codec) Open(sealed []byte, purpose string) ([]byte, error) {
	i := strings.IndexByte(string(sealed), 0)
	if i <= 0 {
		return nil, errors.New("a sealed secret is malformed")
	}
	id := string(sealed[:i])
	aead, ok := c.aeads[id]
	if !ok {
		return nil, fmt.Errorf("a secret is sealed with key %q, which is not configured", id)
	}
	rest := sealed[i+1:]
	n := aead.NonceSize()
	if len(rest) < n {
		return nil, errors.New("a sealed secret is truncated")
	}
	plain, err := aead.Open(nil, rest[:n], rest[n:], []byte(id+"\x00"+purpose))
	if err != nil {
		return nil, fmt.Errorf("a secret sealed with key %q does not open: %w", id, err)
	}
	return plain, nil
}
