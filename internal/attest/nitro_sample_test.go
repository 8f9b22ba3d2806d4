package attest

import (
	"bytes"
	"crypto/rsa"
	"crypto/x509"
	"encoding/binary"
	"encoding/hex"
	"os"
	"testing"
	"time"

	"github.com/veraison/go-cose"
)

// Real documents from AWS Nitro enclaves; testdata/README.md says where they come from.
const (
	productionDocument = "testdata/nitro-production.cose"
	debugModeDocument  = "testdata/nitro-debug-mode.cose"
)

// What the production document says about itself, read off it once and pinned here.
var (
	productionModule = "i-0a6d65e7122308898-enc017846bcd2f820da"
	productionTime   = time.UnixMilli(1616602241734).UTC() // 2021-03-24T16:10:41.734Z
	productionPCRs   = map[int][]byte{
		0: mustHex("672cd3c91b7ac756037d260051169c70b1de59c7a3a9a8253322c98763697891c722fec043cbf72a824ae5d5ac41fc41"),
		1: mustHex("c41252beb5b31e7684fe81da62db858ad02a9a8e32ebb8f1ec9c0ad7df160df3edfdf4889379e47985a539005f6ce67e"),
		2: mustHex("43386b9d36326b00423ab138f89aee03df275e5a7af7851e961b1e75a31e9ec63960b4aa2da45940e45c9decaca70443"),
	}
)

func mustHex(s string) []byte {
	b, err := hex.DecodeString(s)
	if err != nil {
		panic(err)
	}
	return b
}

func readSample(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// productionOptions pin the AWS root (the default), the build's PCRs and the clock to the moment
// the document was made: its leaf certificate lived for hours, in 2021.
func productionOptions() VerifyOptions {
	return VerifyOptions{PCRs: productionPCRs, Now: at(productionTime.Add(2 * time.Second))}
}

func TestRealNitroDocumentVerifies(t *testing.T) {
	r := Verify(readSample(t, productionDocument), productionOptions())
	// The document carries no nonce, so that one check is skipped: 9 of 10 performed.
	wantVerified(t, r, TrustHigh, 90)
	if c, _ := r.Check(CheckNonce); !c.Skipped {
		t.Errorf("nonce check %+v, want skipped", c)
	}
	if c, _ := r.Check(CheckChain); !bytes.Contains([]byte(c.Detail), []byte("5 certificates")) {
		t.Errorf("chain detail %q, want the leaf, three intermediates and the root", c.Detail)
	}
	d := r.Document
	if d.ModuleID != productionModule || !d.Timestamp.Equal(productionTime) || d.Nonce != nil || d.UserData != nil {
		t.Errorf("decoded %q %v nonce=%x user_data=%x", d.ModuleID, d.Timestamp, d.Nonce, d.UserData)
	}
	if len(d.PCRs) != 16 || len(d.CABundle) != 4 {
		t.Errorf("%d PCRs and %d CA certificates, want 16 and 4", len(d.PCRs), len(d.CABundle))
	}
	// Its public_key is the RSA key the enclave wanted KMS answers encrypted to.
	if pub, err := x509.ParsePKIXPublicKey(d.PublicKey); err != nil {
		t.Errorf("public_key: %v", err)
	} else if _, ok := pub.(*rsa.PublicKey); !ok {
		t.Errorf("public_key is a %T", pub)
	}
	if !bytes.Equal(d.CABundle[0], AWSNitroRoot().Raw) {
		t.Error("cabundle[0] is not the AWS Nitro root")
	}
}

func TestRealNitroDocumentTampered(t *testing.T) {
	good := readSample(t, productionDocument)
	local := newAuthority(t)
	// Moves the document's timestamp (a CBOR uint64 in the payload) to when.
	retime := func(when time.Time) []byte {
		return withPayload(t, good, func(p []byte) []byte {
			old := binary.BigEndian.AppendUint64([]byte{0x1b}, uint64(productionTime.UnixMilli()))
			i := bytes.Index(p, old)
			if i < 0 {
				t.Fatal("timestamp not found")
			}
			binary.BigEndian.PutUint64(p[i+1:], uint64(when.UnixMilli()))
			return p
		})
	}
	cases := []struct {
		name   string
		doc    []byte
		adjust func(*VerifyOptions)
		want   []string
	}{
		{"payload byte flipped", withPayload(t, good, func(p []byte) []byte {
			return flipAt(t, p, []byte(productionModule), 4)
		}), nil, []string{CheckSignature}},
		{"PCR0 changed in the payload", withPayload(t, good, func(p []byte) []byte {
			return flipAt(t, p, productionPCRs[0], 0)
		}), nil, []string{CheckSignature, CheckPCRs}},
		{"PCR2 not what the build measured", good, func(o *VerifyOptions) {
			o.PCRs = map[int][]byte{0: productionPCRs[0], 1: productionPCRs[1], 2: productionPCRs[0]}
		}, []string{CheckPCRs}},
		{"signature bit flipped", rewrite(t, good, func(m *cose.UntaggedSign1Message) { m.Signature[40] ^= 1 }), nil, []string{CheckSignature}},
		{"chain to another root", good, func(o *VerifyOptions) { o.Root = local.Root() }, []string{CheckChain}},
		{"nonce expected", good, func(o *VerifyOptions) { o.Nonce = []byte("challenge") }, []string{CheckNonce}},
		{"stale: checked an hour later", good, func(o *VerifyOptions) { o.Now = at(productionTime.Add(time.Hour)) }, []string{CheckFreshness}},
		{"checked today", good, func(o *VerifyOptions) { o.Now = time.Now }, []string{CheckFreshness}},
		{"timestamp moved past the leaf's expiry", retime(productionTime.Add(4 * time.Hour)), func(o *VerifyOptions) {
			o.Now = at(productionTime.Add(4 * time.Hour))
		}, []string{CheckSignature, CheckValidity}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			o := productionOptions()
			if c.adjust != nil {
				c.adjust(&o)
			}
			wantFailed(t, Verify(c.doc, o), c.want...)
		})
	}
}

// A genuine document from an enclave started with --debug-mode: signed and chained like any other,
// and refused, because its PCRs are zeros.
func TestRealDebugModeDocumentIsRefused(t *testing.T) {
	doc := readSample(t, debugModeDocument)
	when := time.UnixMilli(1706120065635) // 2024-01-24T18:14:25.635Z
	r := Verify(doc, VerifyOptions{Nonce: []byte("Nonce\n"), Now: at(when)})
	wantFailed(t, r, CheckDebugMode)
	for _, name := range []string{CheckSignature, CheckChain, CheckValidity, CheckNonce} {
		if c, _ := r.Check(name); !c.OK {
			t.Errorf("%s: %s", name, c.Detail)
		}
	}
	if !bytes.Equal(r.Document.UserData, []byte("Hello World!\n")) {
		t.Errorf("user_data %q", r.Document.UserData)
	}
}
