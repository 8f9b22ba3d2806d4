package attest

import (
	"bytes"
	"testing"
)

func TestAWSNitroRootIsPinned(t *testing.T) {
	root := AWSNitroRoot()
	if Fingerprint(root.Raw) != AWSNitroRootFingerprint || root.Subject.CommonName != "aws.nitro-enclaves" {
		t.Fatalf("root %s, fingerprint %s", root.Subject, Fingerprint(root.Raw))
	}
	if root.NotAfter.Year() != 2049 || !root.IsCA {
		t.Errorf("root valid until %v, CA %v", root.NotAfter, root.IsCA)
	}
	// One changed character in the PEM is refused, however plausible the rest looks.
	corrupted := bytes.Replace(awsNitroRootPEM, []byte("X28TcPQX"), []byte("X28nQPJN"), 1)
	if bytes.Equal(corrupted, awsNitroRootPEM) {
		t.Fatal("the corruption did not apply")
	}
	if _, err := parsePinnedRoot(corrupted, AWSNitroRootFingerprint); err == nil {
		t.Error("a corrupted root was accepted")
	}
}
