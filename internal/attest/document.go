// Package attest produces and verifies attestation documents in the AWS Nitro Enclaves format: a
// COSE_Sign1 (ES384) over a CBOR map of measurements, a signing certificate and its CA bundle.
//
// One format serves both enclave providers. The AWS provider hands over documents the Nitro Security
// Module signed, chained to the AWS Nitro root; the local provider's documents are signed by a leaf
// key that a local Authority certified. Verify checks either kind the same way and says which root
// it trusted. docs/attestation.md describes the format, the measurements and the checks.
package attest

import (
	"bytes"
	"crypto/x509"
	"errors"
	"fmt"
	"time"

	"github.com/fxamacker/cbor/v2"
	"github.com/veraison/go-cose"
)

// DigestSHA384 is the only digest the format allows; it fixes the PCR length at 48 bytes.
const DigestSHA384 = "SHA384"

// PCRSize is the length of a SHA-384 PCR value.
const PCRSize = 48

// Size limits of the Nitro format (aws-nitro-enclaves-nsm-api, attestation_process.md).
const (
	maxPCRIndex     = 31
	maxPublicKeyLen = 1024
	maxUserDataLen  = 512
	maxNonceLen     = 512
	// maxDocumentLen bounds what Verify will decode. Real documents are 4–5 KiB; the bound only
	// keeps a hostile caller from making us parse megabytes.
	maxDocumentLen = 64 << 10
	// maxTimestampMillis is 9999-12-31T23:59:59.999Z; a larger value is garbage, not a time.
	maxTimestampMillis = 253402300799999
)

// Document is the signed payload of an attestation document.
type Document struct {
	// ModuleID names the enclave (Nitro: "i-…-enc…"; local: the id the leaf was issued for).
	ModuleID string
	// Digest is the PCR digest algorithm; always DigestSHA384 in documents that verify.
	Digest string
	// Timestamp is when the document was produced, to the millisecond.
	Timestamp time.Time
	// PCRs maps a PCR index (0–31) to its value. measure.go says what 0, 1, 2 and 8 cover.
	PCRs map[int][]byte
	// Certificate is the DER signing certificate whose key signed the document.
	Certificate []byte
	// CABundle holds DER CA certificates, the root first, then each intermediate towards the leaf.
	CABundle [][]byte
	// PublicKey, UserData and Nonce are optional; nil means absent.
	PublicKey []byte
	UserData  []byte
	Nonce     []byte
}

// wireDocument is the CBOR payload. Absent optional fields are written as null, as the Nitro
// Security Module writes them, so a verifier built for real documents reads ours unchanged.
type wireDocument struct {
	ModuleID    string          `cbor:"module_id"`
	Digest      string          `cbor:"digest"`
	Timestamp   uint64          `cbor:"timestamp"`
	PCRs        map[uint][]byte `cbor:"pcrs"`
	Certificate []byte          `cbor:"certificate"`
	CABundle    [][]byte        `cbor:"cabundle"`
	PublicKey   []byte          `cbor:"public_key"`
	UserData    []byte          `cbor:"user_data"`
	Nonce       []byte          `cbor:"nonce"`
}

var (
	// Deterministic encoding, so the same document always has the same bytes.
	payloadEncMode = mustEncMode(cbor.EncOptions{Sort: cbor.SortCoreDeterministic, IndefLength: cbor.IndefLengthForbidden})
	// Indefinite lengths stay allowed: newer Nitro hypervisors write the payload map with one.
	// Duplicate keys are refused, since two values for "pcrs" would let two readers see two documents.
	payloadDecMode = mustDecMode(cbor.DecOptions{
		DupMapKey:   cbor.DupMapKeyEnforcedAPF,
		IndefLength: cbor.IndefLengthAllowed,
		TagsMd:      cbor.TagsForbidden,
		UTF8:        cbor.UTF8RejectInvalid,
	})
)

func mustEncMode(o cbor.EncOptions) cbor.EncMode {
	m, err := o.EncMode()
	if err != nil {
		panic(err)
	}
	return m
}

func mustDecMode(o cbor.DecOptions) cbor.DecMode {
	m, err := o.DecMode()
	if err != nil {
		panic(err)
	}
	return m
}

// encodePayload checks d against the format's limits and encodes it.
func encodePayload(d Document) ([]byte, error) {
	if d.ModuleID == "" {
		return nil, errors.New("attest: module_id is empty")
	}
	if d.Digest != DigestSHA384 {
		return nil, fmt.Errorf("attest: digest %q, want %s", d.Digest, DigestSHA384)
	}
	if d.Timestamp.UnixMilli() <= 0 {
		return nil, errors.New("attest: timestamp is not after the Unix epoch")
	}
	if len(d.PCRs) == 0 {
		return nil, errors.New("attest: no PCRs")
	}
	pcrs := make(map[uint][]byte, len(d.PCRs))
	for i, v := range d.PCRs {
		if i < 0 || i > maxPCRIndex {
			return nil, fmt.Errorf("attest: PCR index %d outside 0–%d", i, maxPCRIndex)
		}
		if len(v) != PCRSize {
			return nil, fmt.Errorf("attest: PCR%d is %d bytes, want %d", i, len(v), PCRSize)
		}
		pcrs[uint(i)] = v
	}
	if len(d.Certificate) == 0 || len(d.CABundle) == 0 {
		return nil, errors.New("attest: certificate or cabundle missing")
	}
	if d.PublicKey != nil && (len(d.PublicKey) < 1 || len(d.PublicKey) > maxPublicKeyLen) {
		return nil, fmt.Errorf("attest: public_key is %d bytes, want 1–%d", len(d.PublicKey), maxPublicKeyLen)
	}
	if len(d.UserData) > maxUserDataLen {
		return nil, fmt.Errorf("attest: user_data is %d bytes, at most %d", len(d.UserData), maxUserDataLen)
	}
	if len(d.Nonce) > maxNonceLen {
		return nil, fmt.Errorf("attest: nonce is %d bytes, at most %d", len(d.Nonce), maxNonceLen)
	}
	return payloadEncMode.Marshal(wireDocument{
		ModuleID:    d.ModuleID,
		Digest:      d.Digest,
		Timestamp:   uint64(d.Timestamp.UnixMilli()),
		PCRs:        pcrs,
		Certificate: d.Certificate,
		CABundle:    d.CABundle,
		PublicKey:   d.PublicKey,
		UserData:    d.UserData,
		Nonce:       d.Nonce,
	})
}

// decodeEnvelope splits a COSE_Sign1 message. The Nitro Security Module writes it untagged (first
// byte 0x84); the tagged form (tag 18, first byte 0xD2) is accepted too.
func decodeEnvelope(raw []byte) (*cose.Sign1Message, error) {
	if len(raw) == 0 {
		return nil, errors.New("document is empty")
	}
	if len(raw) > maxDocumentLen {
		return nil, fmt.Errorf("document is %d bytes, at most %d", len(raw), maxDocumentLen)
	}
	var msg cose.Sign1Message
	if raw[0] == 0xd2 {
		if err := msg.UnmarshalCBOR(raw); err != nil {
			return nil, fmt.Errorf("not a COSE_Sign1 message: %v", err)
		}
	} else {
		var u cose.UntaggedSign1Message
		if err := u.UnmarshalCBOR(raw); err != nil {
			return nil, fmt.Errorf("not a COSE_Sign1 message: %v", err)
		}
		msg = cose.Sign1Message(u)
	}
	if len(msg.Payload) == 0 {
		return nil, errors.New("the COSE_Sign1 message carries no payload")
	}
	return &msg, nil
}

// CBOR major types, read from the first byte of an encoded item, so that a field of the wrong type
// is named as such instead of surfacing as a decoder error about Go types.
const (
	majorUint  = 0
	majorBytes = 2
	majorText  = 3
	majorArray = 4
	majorMap   = 5
	cborNull   = 0xf6
)

func major(raw cbor.RawMessage) byte { return raw[0] >> 5 }

// decodedDocument is a payload whose fields all have the right types, with its certificates parsed.
type decodedDocument struct {
	Document
	leaf   *x509.Certificate
	bundle []*x509.Certificate
}

// payloadFields splits the payload into its map entries, still encoded.
func payloadFields(payload []byte) (map[string]cbor.RawMessage, error) {
	var fields map[string]cbor.RawMessage
	if err := payloadDecMode.Unmarshal(payload, &fields); err != nil {
		return nil, fmt.Errorf("the payload is not a CBOR map with text keys: %v", err)
	}
	return fields, nil
}

// decodeFields reads each field. The first error says which field is missing or ill-typed.
// Unknown keys are ignored, so a field AWS adds later does not make every document fail.
func decodeFields(fields map[string]cbor.RawMessage) (*decodedDocument, error) {
	var d decodedDocument
	var err error
	if d.ModuleID, err = textField(fields, "module_id"); err != nil {
		return nil, err
	}
	if d.ModuleID == "" {
		return nil, errors.New("module_id is empty")
	}
	if d.Digest, err = textField(fields, "digest"); err != nil {
		return nil, err
	}
	if d.Timestamp, err = timestampField(fields); err != nil {
		return nil, err
	}
	if d.PCRs, err = pcrsField(fields); err != nil {
		return nil, err
	}
	if d.Certificate, err = bytesField(fields, "certificate", 1, maxDocumentLen); err != nil {
		return nil, err
	}
	if d.leaf, err = x509.ParseCertificate(d.Certificate); err != nil {
		return nil, fmt.Errorf("certificate is not an X.509 certificate: %v", err)
	}
	if d.CABundle, d.bundle, err = cabundleField(fields); err != nil {
		return nil, err
	}
	if d.PublicKey, err = optionalBytesField(fields, "public_key", 1, maxPublicKeyLen); err != nil {
		return nil, err
	}
	if d.UserData, err = optionalBytesField(fields, "user_data", 0, maxUserDataLen); err != nil {
		return nil, err
	}
	if d.Nonce, err = optionalBytesField(fields, "nonce", 0, maxNonceLen); err != nil {
		return nil, err
	}
	return &d, nil
}

func requiredField(fields map[string]cbor.RawMessage, name string, want byte, wantName string) (cbor.RawMessage, error) {
	raw, ok := fields[name]
	if !ok {
		return nil, fmt.Errorf("%s is missing", name)
	}
	if raw[0] == cborNull {
		return nil, fmt.Errorf("%s is null", name)
	}
	if major(raw) != want {
		return nil, fmt.Errorf("%s is not %s", name, wantName)
	}
	return raw, nil
}

func textField(fields map[string]cbor.RawMessage, name string) (string, error) {
	raw, err := requiredField(fields, name, majorText, "a text string")
	if err != nil {
		return "", err
	}
	var s string
	if err := payloadDecMode.Unmarshal(raw, &s); err != nil {
		return "", fmt.Errorf("%s: %v", name, err)
	}
	return s, nil
}

func timestampField(fields map[string]cbor.RawMessage) (time.Time, error) {
	raw, err := requiredField(fields, "timestamp", majorUint, "an unsigned integer")
	if err != nil {
		return time.Time{}, err
	}
	var ms uint64
	if err := payloadDecMode.Unmarshal(raw, &ms); err != nil {
		return time.Time{}, fmt.Errorf("timestamp: %v", err)
	}
	if ms == 0 || ms > maxTimestampMillis {
		return time.Time{}, fmt.Errorf("timestamp %d is not a plausible time in milliseconds", ms)
	}
	return time.UnixMilli(int64(ms)).UTC(), nil
}

func pcrsField(fields map[string]cbor.RawMessage) (map[int][]byte, error) {
	raw, err := requiredField(fields, "pcrs", majorMap, "a map")
	if err != nil {
		return nil, err
	}
	var entries map[uint64]cbor.RawMessage
	if err := payloadDecMode.Unmarshal(raw, &entries); err != nil {
		return nil, fmt.Errorf("pcrs is not a map of unsigned integers to values: %v", err)
	}
	if len(entries) == 0 {
		return nil, errors.New("pcrs is empty")
	}
	pcrs := make(map[int][]byte, len(entries))
	for i, v := range entries {
		if i > maxPCRIndex {
			return nil, fmt.Errorf("pcrs has index %d, outside 0–%d", i, maxPCRIndex)
		}
		if major(v) != majorBytes {
			return nil, fmt.Errorf("PCR%d is not a byte string", i)
		}
		var b []byte
		if err := payloadDecMode.Unmarshal(v, &b); err != nil {
			return nil, fmt.Errorf("PCR%d: %v", i, err)
		}
		// The format allows SHA-256, SHA-384 and SHA-512 lengths; the digest check then insists on 48.
		if len(b) != 32 && len(b) != 48 && len(b) != 64 {
			return nil, fmt.Errorf("PCR%d is %d bytes, not a digest length", i, len(b))
		}
		pcrs[int(i)] = b
	}
	return pcrs, nil
}

func bytesField(fields map[string]cbor.RawMessage, name string, minLen, maxLen int) ([]byte, error) {
	raw, err := requiredField(fields, name, majorBytes, "a byte string")
	if err != nil {
		return nil, err
	}
	return decodeBytes(raw, name, minLen, maxLen)
}

// optionalBytesField returns nil when the field is absent or null; real documents write null.
func optionalBytesField(fields map[string]cbor.RawMessage, name string, minLen, maxLen int) ([]byte, error) {
	raw, ok := fields[name]
	if !ok || raw[0] == cborNull {
		return nil, nil
	}
	if major(raw) != majorBytes {
		return nil, fmt.Errorf("%s is neither a byte string nor null", name)
	}
	b, err := decodeBytes(raw, name, minLen, maxLen)
	if b == nil && err == nil {
		b = []byte{} // present but empty stays distinguishable from absent
	}
	return b, err
}

func decodeBytes(raw cbor.RawMessage, name string, minLen, maxLen int) ([]byte, error) {
	var b []byte
	if err := payloadDecMode.Unmarshal(raw, &b); err != nil {
		return nil, fmt.Errorf("%s: %v", name, err)
	}
	if len(b) < minLen || len(b) > maxLen {
		return nil, fmt.Errorf("%s is %d bytes, want %d–%d", name, len(b), minLen, maxLen)
	}
	return b, nil
}

func cabundleField(fields map[string]cbor.RawMessage) ([][]byte, []*x509.Certificate, error) {
	raw, err := requiredField(fields, "cabundle", majorArray, "an array")
	if err != nil {
		return nil, nil, err
	}
	var items []cbor.RawMessage
	if err := payloadDecMode.Unmarshal(raw, &items); err != nil {
		return nil, nil, fmt.Errorf("cabundle: %v", err)
	}
	if len(items) == 0 {
		return nil, nil, errors.New("cabundle is empty")
	}
	ders := make([][]byte, len(items))
	certs := make([]*x509.Certificate, len(items))
	for i, item := range items {
		if major(item) != majorBytes {
			return nil, nil, fmt.Errorf("cabundle[%d] is not a byte string", i)
		}
		if ders[i], err = decodeBytes(item, fmt.Sprintf("cabundle[%d]", i), 1, maxDocumentLen); err != nil {
			return nil, nil, err
		}
		if certs[i], err = x509.ParseCertificate(ders[i]); err != nil {
			return nil, nil, fmt.Errorf("cabundle[%d] is not an X.509 certificate: %v", i, err)
		}
	}
	return ders, certs, nil
}

// isZero reports whether b is all zero bytes, the value of every PCR in a debug-mode enclave.
func isZero(b []byte) bool {
	return len(b) > 0 && bytes.Count(b, []byte{0}) == len(b)
}
