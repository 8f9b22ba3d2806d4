package attest

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"math/big"
	"os"
	"path/filepath"
	"time"

	"github.com/veraison/go-cose"
)

// RootFile is the file, inside the directory given to NewAuthority, that holds the local root
// certificate and its private key as PEM. It is created with mode 0600 and refused if anyone but
// its owner can read it.
const RootFile = "attestation-root.pem"

// LeafLifetime is how long a leaf certificate is valid, as long as Nitro's (about three hours). An
// enclave that runs longer needs a fresh leaf: documents signed after the leaf expired fail the
// certificate_validity check.
const LeafLifetime = 3 * time.Hour

const (
	rootLifetime = 10 * 365 * 24 * time.Hour
	// Certificates start a little in the past so that a verifier whose clock runs behind ours
	// still finds them valid.
	backdate = 5 * time.Minute
)

// Authority is the local attestation root: the platform's stand-in for the AWS Nitro PKI. It keeps
// a P-384 root CA on disk and certifies the short-lived leaf keys that local enclaves' agents sign
// attestation documents with.
type Authority struct {
	root *x509.Certificate
	key  *ecdsa.PrivateKey
	now  func() time.Time
}

// NewAuthority loads the root kept in dir/RootFile, creating the directory and a new root when
// there is none. Two processes starting at once end up with the same root: the file appears
// whole, by a hard link, or not at all.
func NewAuthority(dir string) (*Authority, error) {
	if dir == "" {
		return nil, errors.New("attest: the authority needs a directory for its root")
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("attest: %w", err)
	}
	path := filepath.Join(dir, RootFile)
	a, err := loadAuthority(path)
	if errors.Is(err, fs.ErrNotExist) {
		if err = createRoot(dir, path); err == nil {
			a, err = loadAuthority(path)
		}
	}
	if err != nil {
		return nil, err
	}
	return a, nil
}

// Root is the certificate to pin when verifying documents from this authority's leaves.
func (a *Authority) Root() *x509.Certificate { return a.root }

// WithClock returns a copy that issues leaves as of now() (tests), and whose Signers sign as of it.
func (a *Authority) WithClock(now func() time.Time) *Authority {
	c := *a
	c.now = now
	return &c
}

func createRoot(dir, path string) error {
	key, err := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	if err != nil {
		return fmt.Errorf("attest: %w", err)
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          randomSerial(),
		Subject:               pkix.Name{CommonName: "Conduit local attestation root", Organization: []string{"Conduit"}},
		NotBefore:             now.Add(-backdate),
		NotAfter:              now.Add(rootLifetime),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
		// The root signs leaves directly; it may not certify intermediates.
		MaxPathLen:     0,
		MaxPathLenZero: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return fmt.Errorf("attest: %w", err)
	}
	pkcs8, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return fmt.Errorf("attest: %w", err)
	}
	contents := append(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: pkcs8})...)

	tmp, err := os.CreateTemp(dir, RootFile+".*") // created 0600
	if err != nil {
		return fmt.Errorf("attest: %w", err)
	}
	defer os.Remove(tmp.Name())
	if _, err = tmp.Write(contents); err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("attest: writing the root: %w", err)
	}
	// Link fails if another process made the root first; that root then wins and is loaded.
	if err := os.Link(tmp.Name(), path); err != nil && !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("attest: %w", err)
	}
	return nil
}

func loadAuthority(path string) (*Authority, error) {
	info, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("attest: %w", err) // fs.ErrNotExist stays visible to NewAuthority
	}
	if info.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("attest: %s holds the root's private key but has mode %v; chmod 600 it", path, info.Mode().Perm())
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("attest: %w", err)
	}
	root, key, _, err := parsePEMBundle(data)
	if err != nil {
		return nil, fmt.Errorf("attest: %s: %w", path, err)
	}
	if !root.IsCA {
		return nil, fmt.Errorf("attest: %s: the certificate is not a CA", path)
	}
	if time.Now().After(root.NotAfter) {
		return nil, fmt.Errorf("attest: the root in %s expired on %s; move the file away to make a new one (docs/attestation.md, rotation)", path, root.NotAfter.Format(time.DateOnly))
	}
	return &Authority{root: root, key: key, now: time.Now}, nil
}

// parsePEMBundle reads the first CERTIFICATE and the PRIVATE KEY block and checks that they belong
// together and are P-384; any further CERTIFICATE blocks are returned as DER, in order.
func parsePEMBundle(data []byte) (*x509.Certificate, *ecdsa.PrivateKey, [][]byte, error) {
	var cert *x509.Certificate
	var key *ecdsa.PrivateKey
	var rest [][]byte
	for {
		var block *pem.Block
		block, data = pem.Decode(data)
		if block == nil {
			break
		}
		switch block.Type {
		case "CERTIFICATE":
			if cert != nil {
				rest = append(rest, block.Bytes)
				continue
			}
			c, err := x509.ParseCertificate(block.Bytes)
			if err != nil {
				return nil, nil, nil, err
			}
			cert = c
		case "PRIVATE KEY":
			k, err := x509.ParsePKCS8PrivateKey(block.Bytes)
			if err != nil {
				return nil, nil, nil, err
			}
			ek, ok := k.(*ecdsa.PrivateKey)
			if !ok || ek.Curve != elliptic.P384() {
				return nil, nil, nil, errors.New("the private key is not an ECDSA P-384 key")
			}
			key = ek
		}
	}
	if cert == nil || key == nil {
		return nil, nil, nil, errors.New("want a CERTIFICATE and a PRIVATE KEY block")
	}
	if !key.PublicKey.Equal(cert.PublicKey) {
		return nil, nil, nil, errors.New("the private key does not belong to the certificate")
	}
	return cert, key, rest, nil
}

func randomSerial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		panic(err) // crypto/rand does not fail on supported platforms
	}
	return n.Add(n, big.NewInt(1)) // serials must be positive
}

// IssueLeaf makes a fresh P-384 key and certifies it for moduleID for LeafLifetime. The returned
// Signer is what the enclave's agent signs documents with.
func (a *Authority) IssueLeaf(moduleID string) (*Signer, error) {
	if moduleID == "" {
		return nil, errors.New("attest: a leaf needs a module id")
	}
	key, err := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("attest: %w", err)
	}
	now := a.now()
	tmpl := &x509.Certificate{
		SerialNumber:          randomSerial(),
		Subject:               pkix.Name{CommonName: moduleID, Organization: []string{"Conduit"}},
		NotBefore:             now.Add(-backdate),
		NotAfter:              now.Add(LeafLifetime),
		KeyUsage:              x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  false,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, a.root, &key.PublicKey, a.key)
	if err != nil {
		return nil, fmt.Errorf("attest: %w", err)
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("attest: %w", err)
	}
	return &Signer{moduleID: moduleID, key: key, leaf: leaf, bundle: [][]byte{a.root.Raw}, now: a.now}, nil
}

// Signer signs attestation documents with a leaf key, like the Nitro Security Module does for an
// enclave. It is safe for concurrent use.
type Signer struct {
	moduleID string
	key      *ecdsa.PrivateKey
	leaf     *x509.Certificate
	bundle   [][]byte // DER, root first
	now      func() time.Time
}

// WithClock returns a copy that stamps documents with now() (tests).
func (s *Signer) WithClock(now func() time.Time) *Signer {
	c := *s
	c.now = now
	return &c
}

// ModuleID is the module the leaf was issued for; every document the Signer signs carries it.
func (s *Signer) ModuleID() string { return s.moduleID }

// Certificate is the leaf certificate that goes into every document.
func (s *Signer) Certificate() *x509.Certificate { return s.leaf }

// Sign fills in the fields that belong to the signer — module_id, digest, timestamp, certificate,
// cabundle — encodes the document and signs it as an untagged COSE_Sign1 (ES384), the form the
// Nitro Security Module returns. The caller gives the PCRs and the optional fields. As with the
// Nitro Security Module, the time is the signer's: a document with a Timestamp, or with a ModuleID
// other than the leaf's, is refused.
func (s *Signer) Sign(d Document) ([]byte, error) {
	if d.ModuleID != "" && d.ModuleID != s.moduleID {
		return nil, fmt.Errorf("attest: document for module %q, but the leaf is for %q", d.ModuleID, s.moduleID)
	}
	if !d.Timestamp.IsZero() {
		return nil, errors.New("attest: the signer sets the timestamp; leave it zero")
	}
	d.ModuleID = s.moduleID
	d.Digest = DigestSHA384
	d.Timestamp = s.now()
	d.Certificate = s.leaf.Raw
	d.CABundle = s.bundle
	payload, err := encodePayload(d)
	if err != nil {
		return nil, err
	}
	return signPayload(s.key, payload)
}

// signPayload is Sign without the checks, so that tests can sign payloads Sign would refuse.
func signPayload(key crypto.Signer, payload []byte) ([]byte, error) {
	signer, err := cose.NewSigner(cose.AlgorithmES384, key)
	if err != nil {
		return nil, fmt.Errorf("attest: %w", err)
	}
	msg := cose.UntaggedSign1Message{
		Headers: cose.Headers{Protected: cose.ProtectedHeader{cose.HeaderLabelAlgorithm: cose.AlgorithmES384}},
		Payload: payload,
	}
	if err := msg.Sign(rand.Reader, nil, signer); err != nil {
		return nil, fmt.Errorf("attest: %w", err)
	}
	return msg.MarshalCBOR()
}

// MarshalPEM writes the leaf certificate, its private key and the CA bundle as PEM, for handing a
// Signer to an agent in another process. The output holds a private key: write it 0600.
func (s *Signer) MarshalPEM() ([]byte, error) {
	pkcs8, err := x509.MarshalPKCS8PrivateKey(s.key)
	if err != nil {
		return nil, fmt.Errorf("attest: %w", err)
	}
	out := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: s.leaf.Raw})
	out = append(out, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: pkcs8})...)
	for _, der := range s.bundle {
		out = append(out, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})...)
	}
	return out, nil
}

// ParseSigner reads what MarshalPEM wrote. The module id is the leaf's common name.
func ParseSigner(data []byte) (*Signer, error) {
	leaf, key, bundle, err := parsePEMBundle(data)
	if err != nil {
		return nil, fmt.Errorf("attest: signer: %w", err)
	}
	if leaf.IsCA || leaf.Subject.CommonName == "" || len(bundle) == 0 {
		return nil, errors.New("attest: signer: want a leaf certificate with a module id, its key and a CA bundle")
	}
	return &Signer{moduleID: leaf.Subject.CommonName, key: key, leaf: leaf, bundle: bundle, now: time.Now}, nil
}
