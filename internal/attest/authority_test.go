package attest

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/x509"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestAuthorityKeepsItsRoot(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "attestation")
	first, err := NewAuthority(dir)
	if err != nil {
		t.Fatal(err)
	}
	again, err := NewAuthority(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(first.Root().Raw, again.Root().Raw) {
		t.Error("a second start made a new root")
	}
	root := first.Root()
	if key, ok := root.PublicKey.(*ecdsa.PublicKey); !ok || key.Curve != elliptic.P384() {
		t.Errorf("root key %T", root.PublicKey)
	}
	if !root.IsCA || !root.MaxPathLenZero || root.KeyUsage&x509.KeyUsageCertSign == 0 {
		t.Errorf("root CA=%v pathlen0=%v usage=%v", root.IsCA, root.MaxPathLenZero, root.KeyUsage)
	}
	for path, want := range map[string]os.FileMode{dir: 0o700, filepath.Join(dir, RootFile): 0o600} {
		info, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if info.Mode().Perm() != want {
			t.Errorf("%s has mode %v, want %v", path, info.Mode().Perm(), want)
		}
	}
}

func TestAuthoritiesStartingTogetherShareOneRoot(t *testing.T) {
	dir := t.TempDir()
	roots := make([][]byte, 4)
	var wg sync.WaitGroup
	for i := range roots {
		wg.Add(1)
		go func() {
			defer wg.Done()
			a, err := NewAuthority(dir)
			if err != nil {
				t.Error(err)
				return
			}
			roots[i] = a.Root().Raw
		}()
	}
	wg.Wait()
	for _, r := range roots[1:] {
		if !bytes.Equal(r, roots[0]) {
			t.Fatal("concurrent starts made different roots")
		}
	}
	if left, _ := filepath.Glob(filepath.Join(dir, RootFile+".*")); len(left) > 0 {
		t.Errorf("temporary files left behind: %v", left)
	}
}

func TestAuthorityRefusesAnExposedOrForeignRoot(t *testing.T) {
	dir := t.TempDir()
	if _, err := NewAuthority(dir); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, RootFile)
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := NewAuthority(dir); err == nil || !strings.Contains(err.Error(), "chmod 600") {
		t.Errorf("a world-readable root key: %v", err)
	}

	other := t.TempDir()
	if err := os.WriteFile(filepath.Join(other, RootFile), []byte("not a root"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := NewAuthority(other); err == nil {
		t.Error("a file without a certificate and key was accepted")
	}
	if _, err := NewAuthority(""); err == nil {
		t.Error("an empty directory name was accepted")
	}
}

func TestIssuedLeaf(t *testing.T) {
	a := newAuthority(t)
	s := issue(t, a)
	leaf := s.Certificate()
	if s.ModuleID() != testModule || leaf.Subject.CommonName != testModule {
		t.Errorf("leaf for %q / %q", s.ModuleID(), leaf.Subject.CommonName)
	}
	if leaf.IsCA || leaf.KeyUsage != x509.KeyUsageDigitalSignature {
		t.Errorf("leaf CA=%v usage=%v", leaf.IsCA, leaf.KeyUsage)
	}
	if got := leaf.NotAfter.Sub(leaf.NotBefore); got != LeafLifetime+backdate {
		t.Errorf("leaf lives %v", got)
	}
	if !leaf.NotAfter.Equal(t0.Add(LeafLifetime).Truncate(time.Second)) {
		t.Errorf("leaf expires %v, want %v after the authority's clock", leaf.NotAfter, LeafLifetime)
	}
	if err := leaf.CheckSignatureFrom(a.Root()); err != nil {
		t.Error(err)
	}
	if _, err := a.IssueLeaf(""); err == nil {
		t.Error("a leaf without a module id was issued")
	}
}

func TestSignerTravelsAsPEM(t *testing.T) {
	_, opts, a := goodDocument(t)
	s := issue(t, a)
	pemBytes, err := s.MarshalPEM()
	if err != nil {
		t.Fatal(err)
	}
	parsed, err := ParseSigner(pemBytes)
	if err != nil {
		t.Fatal(err)
	}
	if parsed.ModuleID() != testModule {
		t.Errorf("module %q", parsed.ModuleID())
	}
	again := sign(t, parsed.WithClock(at(t0)), Document{PCRs: opts.PCRs, Nonce: testNonce})
	wantVerified(t, Verify(again, opts), TrustLocal, 100)

	rootOnly := pemBytes[bytes.LastIndex(pemBytes, []byte("-----BEGIN CERTIFICATE")):]
	if _, err := ParseSigner(rootOnly); err == nil {
		t.Error("a PEM without a key became a signer")
	}
}

func TestSignRefusesWhatTheFormatForbids(t *testing.T) {
	a := newAuthority(t)
	s := issue(t, a)
	pcrs := measuredPCRs(t)
	withPCR := func(i int, v []byte) map[int][]byte {
		m := measuredPCRs(t)
		m[i] = v
		return m
	}
	cases := map[string]Document{
		"another module":      {ModuleID: "enclave-other", PCRs: pcrs},
		"its own timestamp":   {Timestamp: t0, PCRs: pcrs},
		"no PCRs":             {},
		"PCR of 32 bytes":     {PCRs: withPCR(5, make([]byte, 32))},
		"PCR index 32":        {PCRs: withPCR(32, make([]byte, PCRSize))},
		"PCR index -1":        {PCRs: withPCR(-1, make([]byte, PCRSize))},
		"empty public_key":    {PCRs: pcrs, PublicKey: []byte{}},
		"public_key too long": {PCRs: pcrs, PublicKey: make([]byte, 1025)},
		"user_data too long":  {PCRs: pcrs, UserData: make([]byte, 513)},
		"nonce too long":      {PCRs: pcrs, Nonce: make([]byte, 513)},
	}
	for name, d := range cases {
		if _, err := s.Sign(d); err == nil {
			t.Errorf("%s: signed", name)
		}
	}
	// The same module id, spelled out, is fine.
	sign(t, s, Document{ModuleID: testModule, PCRs: pcrs})
}
