package attest

import (
	"crypto/sha512"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
)

// The PCRs this package gives a meaning to, numbered as on Nitro. Nitro's PCR3 (parent IAM role)
// and PCR4 (parent instance) have no local counterpart and stay zero in local documents.
const (
	PCRImage              = 0 // the enclave image
	PCRRuntime            = 1 // what boots and isolates the image (Nitro: kernel and bootstrap)
	PCRApplication        = 2 // the application as configured and started
	PCRSigningCertificate = 8 // the certificate the image was signed with, when it was signed
)

// ExtendPCR returns SHA384(pcr || SHA384(data)), the Nitro extend operation. A measurement starts
// from 48 zero bytes and is extended once per measured item, in order, so the result commits to
// every item and to their order. Hashing each item first keeps items apart: ("ab", "c") and
// ("a", "bc") give different PCRs.
func ExtendPCR(pcr, data []byte) []byte {
	item := sha512.Sum384(data)
	h := sha512.New384()
	h.Write(pcr)
	h.Write(item[:])
	return h.Sum(nil)
}

// measure extends a zero PCR with each item, each item prefixed by its label and a NUL. The labels
// keep a PCR's kinds of items apart, e.g. a trailing argument from an environment variable; a label
// never contains a NUL, so the first NUL always ends it.
func measure(items ...[2]string) []byte {
	pcr := make([]byte, PCRSize)
	for _, it := range items {
		pcr = ExtendPCR(pcr, []byte(it[0]+"\x00"+it[1]))
	}
	return pcr
}

// ImagePCR is PCR0: the OCI image manifest's digest, then each layer's digest in manifest order,
// all as "algorithm:hex" ("sha256:9f86d0…"). The manifest digest alone already commits to the
// layers; measuring them too lets a verifier check PCR0 from a layer list without the manifest.
func ImagePCR(manifestDigest string, layerDigests []string) ([]byte, error) {
	if err := checkDigest(manifestDigest); err != nil {
		return nil, fmt.Errorf("attest: manifest digest: %w", err)
	}
	items := [][2]string{{"oci-manifest", manifestDigest}}
	for i, d := range layerDigests {
		if err := checkDigest(d); err != nil {
			return nil, fmt.Errorf("attest: layer %d digest: %w", i, err)
		}
		items = append(items, [2]string{"oci-layer", d})
	}
	return measure(items...), nil
}

// Runtime is what PCR1 measures: what boots and isolates the image, Nitro's "kernel and bootstrap".
type Runtime struct {
	// Sandbox names what isolates the enclave, with its version: "bubblewrap 0.11.0" for the local
	// provider. Required.
	Sandbox string
	// Kernel is the kernel release the enclave runs on (uname -r).
	Kernel string
	// Agent is the digest of the in-enclave agent's binary, "sha256:…", when there is one.
	Agent string
}

// RuntimePCR is PCR1, over the sandbox, the kernel and the agent, in that order. A kernel upgrade
// changes PCR1, as it does on Nitro.
func RuntimePCR(r Runtime) ([]byte, error) {
	if r.Sandbox == "" {
		return nil, errors.New("attest: runtime: the sandbox is required")
	}
	if r.Agent != "" {
		if err := checkDigest(r.Agent); err != nil {
			return nil, fmt.Errorf("attest: runtime agent: %w", err)
		}
	}
	return measure(
		[2]string{"sandbox", r.Sandbox},
		[2]string{"kernel", r.Kernel},
		[2]string{"agent", r.Agent},
	), nil
}

// Application is what PCR2 measures: the application as it is actually started, which may differ
// from the image's defaults when the platform overrides them.
type Application struct {
	// ConfigDigest is the OCI image config's digest, "sha256:…". Required.
	ConfigDigest string
	// Argv is the command line the process starts with (entrypoint then arguments). Required.
	Argv []string
	// Env is the environment, "KEY=value", in the order the process receives it.
	Env []string
	// WorkDir is the working directory.
	WorkDir string
}

// ApplicationPCR is PCR2: the config digest, then each argument, each environment entry and the
// working directory, in that order.
func ApplicationPCR(a Application) ([]byte, error) {
	if err := checkDigest(a.ConfigDigest); err != nil {
		return nil, fmt.Errorf("attest: config digest: %w", err)
	}
	if len(a.Argv) == 0 {
		return nil, errors.New("attest: application: argv is empty")
	}
	items := [][2]string{{"oci-config", a.ConfigDigest}}
	for _, arg := range a.Argv {
		items = append(items, [2]string{"argv", arg})
	}
	for _, kv := range a.Env {
		if !strings.Contains(kv, "=") {
			return nil, fmt.Errorf("attest: application: environment entry %q is not KEY=value", kv)
		}
		items = append(items, [2]string{"env", kv})
	}
	items = append(items, [2]string{"workdir", a.WorkDir})
	return measure(items...), nil
}

// SigningCertificatePCR is PCR8: the DER certificate the image was signed with. Leave PCR8 out
// (or zero, as Nitro does) for unsigned images.
func SigningCertificatePCR(certDER []byte) ([]byte, error) {
	if len(certDER) == 0 {
		return nil, errors.New("attest: signing certificate is empty")
	}
	return measure([2]string{"signing-certificate", string(certDER)}), nil
}

// checkDigest accepts the OCI digests we measure: sha256 or sha512 in lower-case hex.
func checkDigest(d string) error {
	alg, hexPart, ok := strings.Cut(d, ":")
	want := map[string]int{"sha256": 64, "sha512": 128}[alg]
	if !ok || want == 0 {
		return fmt.Errorf("%q is not sha256:… or sha512:…", d)
	}
	if len(hexPart) != want || strings.ToLower(hexPart) != hexPart {
		return fmt.Errorf("%q does not have %d lower-case hex digits", d, want)
	}
	if _, err := hex.DecodeString(hexPart); err != nil {
		return fmt.Errorf("%q is not hex", d)
	}
	return nil
}
