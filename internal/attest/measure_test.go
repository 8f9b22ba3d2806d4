package attest

import (
	"bytes"
	"crypto/sha512"
	"encoding/hex"
	"testing"
)

// measuredPCRs are what a local build of a small image would measure.
func measuredPCRs(t *testing.T) map[int][]byte {
	t.Helper()
	image, err := ImagePCR("sha256:"+hex64('a'), []string{"sha256:" + hex64('b'), "sha256:" + hex64('c')})
	if err != nil {
		t.Fatal(err)
	}
	runtime, err := RuntimePCR(Runtime{Sandbox: "bubblewrap 0.11.0", Kernel: "6.8.0-45-generic", Agent: "sha256:" + hex64('d')})
	if err != nil {
		t.Fatal(err)
	}
	app, err := ApplicationPCR(Application{ConfigDigest: "sha256:" + hex64('e'), Argv: []string{"/app/server", "-port", "8080"}, Env: []string{"PORT=8080"}, WorkDir: "/app"})
	if err != nil {
		t.Fatal(err)
	}
	return map[int][]byte{PCRImage: image, PCRRuntime: runtime, PCRApplication: app, 3: make([]byte, PCRSize), 4: make([]byte, PCRSize)}
}

func hex64(c byte) string { return string(bytes.Repeat([]byte{c}, 64)) }

func TestExtendPCRIsNitrosExtend(t *testing.T) {
	data := []byte("measured item")
	item := sha512.Sum384(data)
	want := sha512.Sum384(append(make([]byte, PCRSize), item[:]...))
	if got := ExtendPCR(make([]byte, PCRSize), data); !bytes.Equal(got, want[:]) {
		t.Errorf("extend = %x, want SHA384(zeros || SHA384(data)) = %x", got, want)
	}
}

// The measurements are pinned: changing how a PCR is computed changes every expected value that
// builds recorded, so it must be a deliberate, versioned change and not an accident.
func TestMeasurementsArePinned(t *testing.T) {
	pcrs := measuredPCRs(t)
	cert, err := SigningCertificatePCR([]byte("a DER certificate"))
	if err != nil {
		t.Fatal(err)
	}
	pinned := map[string][]byte{
		"image":       pcrs[PCRImage],
		"runtime":     pcrs[PCRRuntime],
		"application": pcrs[PCRApplication],
		"signing":     cert,
	}
	// Computed independently (Python hashlib) from the convention in docs/attestation.md.
	want := map[string]string{
		"image":       "e59718828160025da707dedc182c70edadcce7309e9433e0b4c55b92fb40bea6a10175d51249af576ea99bba86912414",
		"runtime":     "8fc59e39e278b40dc1ec3122a527267e306a6b126849f79b492de2fec92edee9ca0cf92d81713c98c641ba0e9563dfa9",
		"application": "b3223b669a8d20fd32c25bb3dafb3cd546682ca86c4505d2dc2f22cbea41e8c8b8fa06322a01ca1189b21499485604ed",
		"signing":     "6d0412393e072c61a635a6b200f8252905bf4a04b9eedeb514cf09ba176bfb00d0af0fb0f8542d5af0c87fa593eb389f",
	}
	for name, got := range pinned {
		if hex.EncodeToString(got) != want[name] {
			t.Errorf("%s PCR = %x, want %s", name, got, want[name])
		}
	}
}

func TestMeasurementsKeepItemsApart(t *testing.T) {
	d := func(c byte) string { return "sha256:" + hex64(c) }
	same := func(a, b []byte) bool { return bytes.Equal(a, b) }
	img := func(layers ...string) []byte {
		p, err := ImagePCR(d('a'), layers)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	app := func(a Application) []byte {
		a.ConfigDigest = d('e')
		p, err := ApplicationPCR(a)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	run := func(r Runtime) []byte {
		p, err := RuntimePCR(r)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	differ := map[string][2][]byte{
		"layer order":               {img(d('b'), d('c')), img(d('c'), d('b'))},
		"a layer more":              {img(d('b')), img(d('b'), d('b'))},
		"one argument or two":       {app(Application{Argv: []string{"run", "x"}}), app(Application{Argv: []string{"run x"}})},
		"argument or variable":      {app(Application{Argv: []string{"run", "A=1"}}), app(Application{Argv: []string{"run"}, Env: []string{"A=1"}})},
		"working directory":         {app(Application{Argv: []string{"run"}, WorkDir: "/"}), app(Application{Argv: []string{"run"}, WorkDir: "/app"})},
		"kernel or sandbox version": {run(Runtime{Sandbox: "bwrap", Kernel: "6.8"}), run(Runtime{Sandbox: "bwrap 6.8"})},
	}
	for name, pair := range differ {
		if same(pair[0], pair[1]) {
			t.Errorf("%s: both measure %x", name, pair[0])
		}
		for _, p := range pair {
			if len(p) != PCRSize || isZero(p) {
				t.Errorf("%s: measurement %x", name, p)
			}
		}
	}
}

func TestMeasurementInputsAreChecked(t *testing.T) {
	good := "sha256:" + hex64('a')
	bad := []string{"", "sha256:", "sha256:" + hex64('A'), "md5:" + hex64('a')[:32], hex64('a'), "sha256:" + hex64('g'), "sha512:" + hex64('a')}
	for _, d := range bad {
		if _, err := ImagePCR(d, nil); err == nil {
			t.Errorf("manifest digest %q accepted", d)
		}
		if _, err := ImagePCR(good, []string{good, d}); err == nil {
			t.Errorf("layer digest %q accepted", d)
		}
		if _, err := ApplicationPCR(Application{ConfigDigest: d, Argv: []string{"x"}}); err == nil {
			t.Errorf("config digest %q accepted", d)
		}
	}
	if _, err := ImagePCR("sha512:"+hex64('a')+hex64('b'), nil); err != nil {
		t.Errorf("a sha512 digest: %v", err)
	}
	errs := map[string]error{}
	_, errs["runtime without sandbox"] = RuntimePCR(Runtime{Kernel: "6.8"})
	_, errs["runtime agent not a digest"] = RuntimePCR(Runtime{Sandbox: "bwrap", Agent: "agent-v1"})
	_, errs["application without argv"] = ApplicationPCR(Application{ConfigDigest: good})
	_, errs["environment entry without ="] = ApplicationPCR(Application{ConfigDigest: good, Argv: []string{"x"}, Env: []string{"PATH"}})
	_, errs["empty signing certificate"] = SigningCertificatePCR(nil)
	for name, err := range errs {
		if err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}
