package attest

import (
	"crypto/sha256"
	"crypto/x509"
	_ "embed"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"sync"
)

// AWSNitroRootFingerprint is the SHA-256 fingerprint of the AWS Nitro Enclaves root certificate
// (CN=aws.nitro-enclaves, "Root-G1", valid 2019-10-28 to 2049-10-28) as AWS publishes it in
// "Verifying the root of trust" (docs.aws.amazon.com/enclaves/latest/user/verify-root.html).
//
// The embedded PEM is checked against it before first use. The fingerprint, not the PEM, is what
// we trust: copies of this certificate pasted around the web are not always intact.
const AWSNitroRootFingerprint = "641a0321a3e244efe456463195d606317ed7cdcc3c1756e09893f3c68f79bb5b"

//go:embed aws-nitro-root-g1.pem
var awsNitroRootPEM []byte

var awsNitroRoot = sync.OnceValues(func() (*x509.Certificate, error) {
	return parsePinnedRoot(awsNitroRootPEM, AWSNitroRootFingerprint)
})

// AWSNitroRoot is the AWS Nitro Enclaves root certificate, the trust anchor for documents from
// real Nitro enclaves. It panics if the embedded copy does not match AWSNitroRootFingerprint,
// which only an edit to this package can cause (and its tests catch).
func AWSNitroRoot() *x509.Certificate {
	root, err := awsNitroRoot()
	if err != nil {
		panic(err)
	}
	return root
}

func parsePinnedRoot(pemBytes []byte, fingerprint string) (*x509.Certificate, error) {
	block, _ := pem.Decode(pemBytes)
	if block == nil || block.Type != "CERTIFICATE" {
		return nil, fmt.Errorf("attest: the pinned root is not a PEM certificate")
	}
	if got := Fingerprint(block.Bytes); got != fingerprint {
		return nil, fmt.Errorf("attest: the pinned root's SHA-256 fingerprint is %s, want %s", got, fingerprint)
	}
	return x509.ParseCertificate(block.Bytes)
}

// Fingerprint is the SHA-256 of a DER certificate in lower-case hex, the form AWS publishes.
func Fingerprint(der []byte) string {
	sum := sha256.Sum256(der)
	return hex.EncodeToString(sum[:])
}
