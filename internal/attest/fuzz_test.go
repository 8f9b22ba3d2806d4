package attest

import (
	"os"
	"testing"
)

// FuzzVerify feeds Verify hostile bytes: it must never panic, must always name every check, and
// its verdict must agree with its checks.
func FuzzVerify(f *testing.F) {
	for _, name := range []string{productionDocument, debugModeDocument} {
		doc, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(doc)
	}
	a, err := NewAuthority(f.TempDir())
	if err != nil {
		f.Fatal(err)
	}
	s, err := a.IssueLeaf(testModule)
	if err != nil {
		f.Fatal(err)
	}
	local, err := s.Sign(Document{PCRs: map[int][]byte{0: make([]byte, PCRSize)}, Nonce: []byte("n")})
	if err != nil {
		f.Fatal(err)
	}
	f.Add(local)
	f.Add([]byte{0x84, 0x40, 0xa0, 0x41, 0xa0, 0x40})

	opts := VerifyOptions{Nonce: []byte("n"), Now: at(productionTime)}
	f.Fuzz(func(t *testing.T, doc []byte) {
		r := Verify(doc, opts)
		if len(r.Checks) != len(checksInOrder) {
			t.Fatalf("%d checks", len(r.Checks))
		}
		failed := false
		for i, c := range r.Checks {
			if c.Name != checksInOrder[i] {
				t.Fatalf("check %d is %s", i, c.Name)
			}
			if c.OK && c.Skipped {
				t.Fatalf("%s both passed and skipped", c.Name)
			}
			failed = failed || c.Failed()
		}
		if failed != (r.VerificationStatus == StatusFailed) || failed != (r.TrustLevel == TrustNone) || failed != (r.IntegrityScore == 0) {
			t.Fatalf("verdict %s/%s/%d with failed=%v", r.VerificationStatus, r.TrustLevel, r.IntegrityScore, failed)
		}
		if r.Verified() && (r.Document == nil || r.Document.Timestamp.Sub(productionTime).Abs() > DefaultMaxAge) {
			t.Fatal("verified without a fresh decoded document")
		}
	})
}
