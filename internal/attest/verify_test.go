package attest

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"strings"
	"testing"
	"time"

	"github.com/veraison/go-cose"
)

func TestRoundTripVerifiesEveryCheck(t *testing.T) {
	doc, opts, _ := goodDocument(t)
	r := Verify(doc, opts)
	wantVerified(t, r, TrustLocal, 100)
	for _, c := range r.Checks {
		if !c.OK || c.Skipped {
			t.Errorf("check %s: ok=%v skipped=%v (%s)", c.Name, c.OK, c.Skipped, c.Detail)
		}
	}
	for i, name := range checksInOrder {
		if r.Checks[i].Name != name {
			t.Errorf("check %d is %s, want %s", i, r.Checks[i].Name, name)
		}
	}
	d := r.Document
	if d.ModuleID != testModule || d.Digest != DigestSHA384 || !d.Timestamp.Equal(t0) || !bytes.Equal(d.Nonce, testNonce) {
		t.Errorf("decoded %q %q %v %q", d.ModuleID, d.Digest, d.Timestamp, d.Nonce)
	}
	if d.PublicKey != nil || d.UserData != nil {
		t.Errorf("absent optional fields decoded as %x, %x", d.PublicKey, d.UserData)
	}
	for i, want := range opts.PCRs {
		if !bytes.Equal(d.PCRs[i], want) {
			t.Errorf("PCR%d decoded as %x", i, d.PCRs[i])
		}
	}
}

func TestChecksWithNothingToCompareAreSkipped(t *testing.T) {
	doc, opts, _ := goodDocument(t)
	opts.PCRs, opts.Nonce = nil, nil
	r := Verify(doc, opts)
	wantVerified(t, r, TrustLocal, 80)
	for _, name := range []string{CheckPCRs, CheckNonce} {
		if c, _ := r.Check(name); !c.Skipped || c.OK {
			t.Errorf("%s: ok=%v skipped=%v, want skipped", name, c.OK, c.Skipped)
		}
	}
}

func TestTaggedAndIndefiniteLengthFormsVerify(t *testing.T) {
	doc, opts, a := goodDocument(t)
	// Tag 18 marks a COSE_Sign1; the Nitro Security Module leaves it off, other tools add it.
	wantVerified(t, Verify(append([]byte{0xd2}, doc...), opts), TrustLocal, 100)

	// Newer Nitro hypervisors write the payload map with an indefinite length.
	s := issue(t, a)
	payload := payloadOf(t, sign(t, s, Document{PCRs: opts.PCRs, Nonce: testNonce}))
	if payload[0] != 0xa9 {
		t.Fatalf("payload starts %x, want a 9-entry map", payload[0])
	}
	indefinite := append(append([]byte{0xbf}, payload[1:]...), 0xff)
	wantVerified(t, Verify(signRaw(t, s, indefinite), opts), TrustLocal, 100)
}

func TestTamperedLocalDocumentsFailTheNamedCheck(t *testing.T) {
	a := newAuthority(t)
	pcrs := measuredPCRs(t)
	s := issue(t, a)
	good := sign(t, s, Document{PCRs: pcrs, Nonce: testNonce})
	opts := VerifyOptions{Root: a.Root(), PCRs: pcrs, Nonce: testNonce, Now: at(t0.Add(3 * time.Second))}

	otherPCRs := measuredPCRs(t)
	otherPCRs[PCRApplication], _ = ApplicationPCR(Application{ConfigDigest: "sha256:" + hex64('e'), Argv: []string{"/app/evil"}})
	zeroPCRs := measuredPCRs(t)
	for _, i := range []int{0, 1, 2} {
		zeroPCRs[i] = make([]byte, PCRSize)
	}
	noPCR0 := measuredPCRs(t)
	delete(noPCR0, PCRImage)
	otherKey, _ := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	foreign, err := NewAuthority(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}

	cases := []struct {
		name   string
		doc    []byte
		adjust func(*VerifyOptions)
		want   []string
	}{
		{"payload byte flipped", withPayload(t, good, func(p []byte) []byte {
			return flipAt(t, p, []byte(testModule), len(testModule)-1)
		}), nil, []string{CheckSignature}},
		{"PCR changed after signing", withPayload(t, good, func(p []byte) []byte {
			return flipAt(t, p, pcrs[PCRImage], 7)
		}), nil, []string{CheckSignature, CheckPCRs}},
		{"PCR differs from the build's", sign(t, s, Document{PCRs: otherPCRs, Nonce: testNonce}), nil, []string{CheckPCRs}},
		{"expected PCR missing", good, func(o *VerifyOptions) {
			o.PCRs = map[int][]byte{PCRSigningCertificate: pcrs[PCRImage]}
		}, []string{CheckPCRs}},
		{"signature bit flipped", rewrite(t, good, func(m *cose.UntaggedSign1Message) { m.Signature[10] ^= 1 }), nil, []string{CheckSignature}},
		{"signed by a key that is not the certificate's", signPayloadWith(t, otherKey, payloadOf(t, good)), nil, []string{CheckSignature}},
		{"protected header names another algorithm", rewrite(t, good, func(m *cose.UntaggedSign1Message) {
			m.Headers.RawProtected = nil
			m.Headers.Protected = cose.ProtectedHeader{cose.HeaderLabelAlgorithm: cose.AlgorithmES256}
		}), nil, []string{CheckSignature}},
		{"leaf from another root", sign(t, issue(t, foreign.WithClock(at(t0))), Document{PCRs: pcrs, Nonce: testNonce}), nil, []string{CheckChain}},
		{"verified against the AWS root", good, func(o *VerifyOptions) { o.Root = nil }, []string{CheckChain}},
		{"wrong nonce", good, func(o *VerifyOptions) { o.Nonce = []byte("another challenge") }, []string{CheckNonce}},
		{"no nonce in the document", sign(t, s, Document{PCRs: pcrs}), nil, []string{CheckNonce}},
		{"leaf expired at the document's time", sign(t, issue(t, a.WithClock(at(t0.Add(-LeafLifetime-time.Minute)))).WithClock(at(t0)),
			Document{PCRs: pcrs, Nonce: testNonce}), nil, []string{CheckValidity}},
		{"leaf not yet valid at the document's time", sign(t, issue(t, a.WithClock(at(t0.Add(time.Hour)))).WithClock(at(t0)),
			Document{PCRs: pcrs, Nonce: testNonce}), nil, []string{CheckValidity}},
		{"stale document", good, func(o *VerifyOptions) { o.Now = at(t0.Add(10 * time.Minute)) }, []string{CheckFreshness}},
		{"stale for a tighter window", good, func(o *VerifyOptions) { o.MaxAge = time.Second }, []string{CheckFreshness}},
		{"document from the future", good, func(o *VerifyOptions) { o.Now = at(t0.Add(-10 * time.Minute)) }, []string{CheckFreshness}},
		{"all-zero PCRs (debug mode)", sign(t, s, Document{PCRs: zeroPCRs, Nonce: testNonce}), func(o *VerifyOptions) { o.PCRs = nil }, []string{CheckDebugMode}},
		{"PCR0 missing", sign(t, s, Document{PCRs: noPCR0, Nonce: testNonce}), func(o *VerifyOptions) { o.PCRs = nil }, []string{CheckDebugMode}},
		{"digest SHA256", signRaw(t, s, encodeMap(t, wireFields(s, pcrs, func(f map[string]any) { f["digest"] = "SHA256" }))), nil, []string{CheckDigest}},
		{"a PCR of SHA-256 length", signRaw(t, s, encodeMap(t, wireFields(s, pcrs, func(f map[string]any) {
			f["pcrs"].(map[uint][]byte)[5] = make([]byte, 32)
		}))), nil, []string{CheckDigest}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			o := opts
			if c.adjust != nil {
				c.adjust(&o)
			}
			wantFailed(t, Verify(c.doc, o), c.want...)
		})
	}
}

func TestMissingAndIllTypedFieldsFailFields(t *testing.T) {
	a := newAuthority(t)
	s := issue(t, a)
	pcrs := measuredPCRs(t)
	opts := VerifyOptions{Root: a.Root(), PCRs: pcrs, Now: at(t0)}

	cases := []struct {
		name, detail string
		change       func(map[string]any)
	}{
		{"module_id missing", "module_id is missing", func(f map[string]any) { delete(f, "module_id") }},
		{"digest missing", "digest is missing", func(f map[string]any) { delete(f, "digest") }},
		{"timestamp missing", "timestamp is missing", func(f map[string]any) { delete(f, "timestamp") }},
		{"pcrs missing", "pcrs is missing", func(f map[string]any) { delete(f, "pcrs") }},
		{"certificate missing", "certificate is missing", func(f map[string]any) { delete(f, "certificate") }},
		{"cabundle missing", "cabundle is missing", func(f map[string]any) { delete(f, "cabundle") }},
		{"certificate null", "certificate is null", func(f map[string]any) { f["certificate"] = nil }},
		{"module_id empty", "module_id is empty", func(f map[string]any) { f["module_id"] = "" }},
		{"module_id as bytes", "module_id is not a text string", func(f map[string]any) { f["module_id"] = []byte(testModule) }},
		{"digest as a number", "digest is not a text string", func(f map[string]any) { f["digest"] = 384 }},
		{"timestamp as text", "timestamp is not an unsigned integer", func(f map[string]any) { f["timestamp"] = "2026-03-01" }},
		{"timestamp negative", "timestamp is not an unsigned integer", func(f map[string]any) { f["timestamp"] = -1 }},
		{"timestamp zero", "not a plausible time", func(f map[string]any) { f["timestamp"] = 0 }},
		{"pcrs as an array", "pcrs is not a map", func(f map[string]any) { f["pcrs"] = [][]byte{pcrs[0]} }},
		{"pcrs empty", "pcrs is empty", func(f map[string]any) { f["pcrs"] = map[uint][]byte{} }},
		{"pcrs keyed by text", "pcrs is not a map of unsigned integers", func(f map[string]any) { f["pcrs"] = map[string][]byte{"0": pcrs[0]} }},
		{"PCR index 32", "index 32", func(f map[string]any) { f["pcrs"].(map[uint][]byte)[32] = pcrs[0] }},
		{"PCR as text", "PCR1 is not a byte string", func(f map[string]any) { f["pcrs"] = map[uint]any{0: pcrs[0], 1: "zero"} }},
		{"PCR of odd length", "PCR4 is 47 bytes", func(f map[string]any) { f["pcrs"].(map[uint][]byte)[4] = make([]byte, 47) }},
		{"certificate not X.509", "certificate is not an X.509 certificate", func(f map[string]any) { f["certificate"] = []byte("hello") }},
		{"cabundle empty", "cabundle is empty", func(f map[string]any) { f["cabundle"] = [][]byte{} }},
		{"cabundle entry a number", "cabundle[0] is not a byte string", func(f map[string]any) { f["cabundle"] = []any{7} }},
		{"cabundle entry not X.509", "cabundle[1] is not an X.509 certificate", func(f map[string]any) { f["cabundle"] = [][]byte{s.bundle[0], []byte("x")} }},
		{"public_key empty", "public_key is 0 bytes", func(f map[string]any) { f["public_key"] = []byte{} }},
		{"public_key too long", "public_key is 1025 bytes", func(f map[string]any) { f["public_key"] = make([]byte, 1025) }},
		{"user_data as text", "user_data is neither a byte string nor null", func(f map[string]any) { f["user_data"] = "hi" }},
		{"nonce too long", "nonce is 513 bytes", func(f map[string]any) { f["nonce"] = make([]byte, 513) }},
		{"nonce as a number", "nonce is neither a byte string nor null", func(f map[string]any) { f["nonce"] = 5 }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := Verify(signRaw(t, s, encodeMap(t, wireFields(s, pcrs, c.change))), opts)
			wantFailed(t, r, CheckFields)
			if f, _ := r.Check(CheckFields); !strings.Contains(f.Detail, c.detail) {
				t.Errorf("fields detail %q, want it to mention %q", f.Detail, c.detail)
			}
			for _, ch := range r.Checks[2:] {
				if !ch.Skipped {
					t.Errorf("%s ran on an undecodable document", ch.Name)
				}
			}
			if r.Document != nil {
				t.Error("a document that did not decode is returned")
			}
		})
	}

	// Unknown keys are ignored: a field AWS adds must not fail every document.
	extra := signRaw(t, s, encodeMap(t, wireFields(s, pcrs, func(f map[string]any) { f["future_field"] = 1 })))
	wantVerified(t, Verify(extra, opts), TrustLocal, 90)
}

func TestMalformedDocumentsFailStructure(t *testing.T) {
	good, opts, a := goodDocument(t)
	s := issue(t, a)
	payload := payloadOf(t, good)
	duplicated := append([]byte{payload[0] + 1}, payload[1:]...) // one more entry: a second nonce
	duplicated = append(duplicated, encodeMap(t, map[string]any{"nonce": []byte("second")})[1:]...)
	cases := []struct {
		name   string
		doc    []byte
		detail string
	}{
		{"empty", nil, "document is empty"},
		{"not CBOR", []byte("hello, world"), "not a COSE_Sign1 message"},
		{"truncated", good[:len(good)-20], "unexpected EOF"},
		{"trailing bytes", append(bytes.Clone(good), 0x00), "extraneous data"},
		{"too large", make([]byte, maxDocumentLen+1), "at most 65536"},
		{"a bare payload", payload, "not a COSE_Sign1 message"},
		{"payload detached", rewrite(t, good, func(m *cose.UntaggedSign1Message) { m.Payload = nil }), "carries no payload"},
		{"payload not a map", signRaw(t, s, encodeMap(t, []any{"module_id", testModule})), "not a CBOR map"},
		{"payload keyed by number", signRaw(t, s, encodeMap(t, map[int]any{1: testModule})), "not a CBOR map with text keys"},
		{"payload with a key twice", signRaw(t, s, duplicated), `duplicate map key "nonce"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := Verify(c.doc, opts)
			wantFailed(t, r, CheckStructure)
			if got, _ := r.Check(CheckStructure); !strings.Contains(got.Detail, c.detail) {
				t.Errorf("structure detail %q, want it to mention %q", got.Detail, c.detail)
			}
			if r.Document != nil {
				t.Error("a document that did not decode is returned")
			}
		})
	}
}

// wireFields is the payload of a good document as a map, to be broken by change.
func wireFields(s *Signer, pcrs map[int][]byte, change func(map[string]any)) map[string]any {
	wirePCRs := map[uint][]byte{}
	for i, v := range pcrs {
		wirePCRs[uint(i)] = v
	}
	f := map[string]any{
		"module_id":   s.moduleID,
		"digest":      DigestSHA384,
		"timestamp":   uint64(t0.UnixMilli()),
		"pcrs":        wirePCRs,
		"certificate": s.leaf.Raw,
		"cabundle":    s.bundle,
		"public_key":  nil,
		"user_data":   nil,
		"nonce":       testNonce,
	}
	change(f)
	return f
}

func encodeMap(t *testing.T, v any) []byte {
	t.Helper()
	b, err := payloadEncMode.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func signRaw(t *testing.T, s *Signer, payload []byte) []byte {
	t.Helper()
	return signPayloadWith(t, s.key, payload)
}

func signPayloadWith(t *testing.T, key *ecdsa.PrivateKey, payload []byte) []byte {
	t.Helper()
	doc, err := signPayload(key, payload)
	if err != nil {
		t.Fatal(err)
	}
	return doc
}

func payloadOf(t *testing.T, doc []byte) []byte {
	t.Helper()
	var m cose.UntaggedSign1Message
	if err := m.UnmarshalCBOR(doc); err != nil {
		t.Fatal(err)
	}
	return m.Payload
}
