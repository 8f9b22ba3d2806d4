package attest

import (
	"bytes"
	"slices"
	"testing"
	"time"

	"github.com/veraison/go-cose"
)

// t0 is when the test documents are made; verification happens a few seconds later. It lies a
// day ahead because a new root is valid from (about) now, and test leaves are issued hours before
// t0; documents carry milliseconds.
var t0 = time.Now().UTC().Truncate(time.Millisecond).Add(24 * time.Hour)

func at(t time.Time) func() time.Time { return func() time.Time { return t } }

const testModule = "enclave-test"

func newAuthority(t *testing.T) *Authority {
	t.Helper()
	a, err := NewAuthority(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return a.WithClock(at(t0))
}

func issue(t *testing.T, a *Authority) *Signer {
	t.Helper()
	s, err := a.IssueLeaf(testModule)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

var testNonce = []byte("challenge-0123456789")

func sign(t *testing.T, s *Signer, d Document) []byte {
	t.Helper()
	doc, err := s.Sign(d)
	if err != nil {
		t.Fatal(err)
	}
	return doc
}

// goodDocument is a document every check passes, with the options that expect it.
func goodDocument(t *testing.T) ([]byte, VerifyOptions, *Authority) {
	t.Helper()
	a := newAuthority(t)
	pcrs := measuredPCRs(t)
	doc := sign(t, issue(t, a), Document{PCRs: pcrs, Nonce: testNonce})
	return doc, VerifyOptions{Root: a.Root(), PCRs: pcrs, Nonce: testNonce, Now: at(t0.Add(3 * time.Second))}, a
}

// failedChecks names the checks that were performed and failed.
func failedChecks(r Report) []string {
	var names []string
	for _, c := range r.Checks {
		if c.Failed() {
			names = append(names, c.Name)
		}
	}
	return names
}

// wantFailed asserts that exactly the named checks failed and that the verdict says so.
func wantFailed(t *testing.T, r Report, names ...string) {
	t.Helper()
	if got := failedChecks(r); !slices.Equal(got, names) {
		t.Errorf("failed checks %v, want %v\n%s", got, names, describe(r))
	}
	if r.VerificationStatus != StatusFailed || r.TrustLevel != TrustNone || r.IntegrityScore != 0 {
		t.Errorf("verdict %s/%s/%d, want failed/none/0", r.VerificationStatus, r.TrustLevel, r.IntegrityScore)
	}
	if len(r.Checks) != len(checksInOrder) {
		t.Errorf("%d checks reported, want all %d", len(r.Checks), len(checksInOrder))
	}
}

func wantVerified(t *testing.T, r Report, trust TrustLevel, score int) {
	t.Helper()
	if !r.Verified() || r.TrustLevel != trust || r.IntegrityScore != score || len(failedChecks(r)) > 0 {
		t.Errorf("verdict %s/%s/%d, want verified/%s/%d\n%s", r.VerificationStatus, r.TrustLevel, r.IntegrityScore, trust, score, describe(r))
	}
}

func describe(r Report) string {
	var b bytes.Buffer
	for _, c := range r.Checks {
		state := "ok"
		if c.Skipped {
			state = "skipped"
		} else if !c.OK {
			state = "FAILED"
		}
		b.WriteString("  " + c.Name + " " + state + ": " + c.Detail + "\n")
	}
	return b.String()
}

// withPayload re-encodes a document with its payload changed and its signature kept.
func withPayload(t *testing.T, doc []byte, change func(payload []byte) []byte) []byte {
	t.Helper()
	return rewrite(t, doc, func(m *cose.UntaggedSign1Message) { m.Payload = change(bytes.Clone(m.Payload)) })
}

func rewrite(t *testing.T, doc []byte, change func(*cose.UntaggedSign1Message)) []byte {
	t.Helper()
	var m cose.UntaggedSign1Message
	if err := m.UnmarshalCBOR(doc); err != nil {
		t.Fatal(err)
	}
	change(&m)
	out, err := m.MarshalCBOR()
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// flipAt flips the lowest bit of the byte at the first occurrence of find (plus offset).
func flipAt(t *testing.T, b, find []byte, offset int) []byte {
	t.Helper()
	i := bytes.Index(b, find)
	if i < 0 {
		t.Fatalf("%x not found", find)
	}
	b[i+offset] ^= 1
	return b
}
