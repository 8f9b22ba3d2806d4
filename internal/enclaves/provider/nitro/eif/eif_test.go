package eif

import (
	"bytes"
	"crypto/sha512"
	"encoding/binary"
	"encoding/hex"
	"hash/crc32"
	"os"
	"path/filepath"
	"testing"
)

func ramdisk(t *testing.T, entries ...CPIOEntry) []byte {
	t.Helper()
	var b bytes.Buffer
	w := NewCPIOWriter(&b)
	for _, e := range entries {
		if err := w.Write(e); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func sample(t *testing.T) Image {
	boot := ramdisk(t, CPIOEntry{Name: "dev", Mode: ModeDir | 0o755}, CPIOEntry{Name: "init", Mode: ModeRegular | 0o755, Data: []byte("stand-in init")})
	app := ramdisk(t, CPIOEntry{Name: "rootfs", Mode: ModeDir | 0o755}, CPIOEntry{Name: "rootfs/app", Mode: ModeRegular | 0o755, Data: []byte("#!/bin/sh\necho hi\n")},
		CPIOEntry{Name: "cmd", Mode: ModeRegular | 0o644, Data: []byte("/app\n")}, CPIOEntry{Name: "env", Mode: ModeRegular | 0o644, Data: []byte("A=1\n")})
	return Image{
		Kernel:   BytesBlob([]byte("stand-in kernel bzImage")),
		Cmdline:  "reboot=k panic=30 pci=off nomodules console=ttyS0",
		Ramdisks: []Blob{BytesBlob(boot), BytesBlob(app)},
		Metadata: Metadata{ImageName: "registry.example/app", ImageVersion: "sha256:00", DockerInfo: []byte(`{}`), CustomMetadata: []byte(`null`)},
	}
}

func write(t *testing.T, img Image) (string, PCRs) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "app.eif")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	pcrs, err := Write(f, img)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return path, pcrs
}

func open(t *testing.T, path string) *File {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	f, err := Read(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func sha384(parts ...[]byte) []byte {
	h := sha512.New384()
	for _, p := range parts {
		h.Write(p)
	}
	return h.Sum(nil)
}

func blob(t *testing.T, b Blob) []byte {
	out := make([]byte, b.Size)
	if _, err := b.R.ReadAt(out, 0); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestEIFRoundTrip writes an EIF, reads it back, checks the layout byte by byte against the
// format's definition and the PCRs against values computed here from the parts, independently
// of the measurer.
func TestEIFRoundTrip(t *testing.T) {
	img := sample(t)
	path, pcrs := write(t, img)
	raw, _ := os.ReadFile(path)
	f := open(t, path)

	if string(raw[:4]) != ".eif" || binary.BigEndian.Uint16(raw[4:]) != 4 {
		t.Fatalf("magic/version: % x", raw[:6])
	}
	if f.Header.DefaultMem != 1<<30 || f.Header.DefaultCPUs != 2 || f.Header.NumSections != 5 {
		t.Errorf("header: %+v", f.Header)
	}
	wantTypes := []SectionType{SectionKernel, SectionCmdline, SectionMetadata, SectionRamdisk, SectionRamdisk}
	for i, s := range f.Sections {
		if s.Type != wantTypes[i] {
			t.Errorf("section %d is %s, want %s", i, s.Type, wantTypes[i])
		}
		// The header's offset points at the section header; its size counts the data.
		if int64(f.Header.SectionOffsets[i])+SectionHeaderSize != s.Offset || int64(f.Header.SectionSizes[i]) != s.Size {
			t.Errorf("section %d table entry %d/%d, section at %d size %d", i, f.Header.SectionOffsets[i], f.Header.SectionSizes[i], s.Offset, s.Size)
		}
	}
	if HeaderSize != 548 || SectionHeaderSize != 12 {
		t.Fatalf("sizes %d %d", HeaderSize, SectionHeaderSize)
	}
	// CRC: everything but the CRC field itself.
	crc := crc32.ChecksumIEEE(append(append([]byte(nil), raw[:544]...), raw[548:]...))
	if crc != binary.BigEndian.Uint32(raw[544:]) {
		t.Errorf("crc %08x, header %08x", crc, binary.BigEndian.Uint32(raw[544:]))
	}
	k, _ := f.First(SectionKernel)
	if b, _ := f.Bytes(k); string(b) != "stand-in kernel bzImage" {
		t.Errorf("kernel %q", b)
	}
	c, _ := f.First(SectionCmdline)
	if b, _ := f.Bytes(c); string(b) != img.Cmdline {
		t.Errorf("cmdline %q (no trailing NUL)", b)
	}
	meta, err := f.Metadata()
	if err != nil || meta.ImageName != "registry.example/app" {
		t.Errorf("metadata %+v %v", meta, err)
	}
	app, _ := f.Bytes(f.Sections[4])
	entries, err := ReadCPIO(bytes.NewReader(app))
	if err != nil || len(entries) != 4 || entries[1].Name != "rootfs/app" || string(entries[1].Data) != "#!/bin/sh\necho hi\n" || entries[1].Mode != ModeRegular|0o755 {
		t.Fatalf("app ramdisk: %+v %v", entries, err)
	}

	kernel, cmdline, boot, appRD := blob(t, img.Kernel), []byte(img.Cmdline), blob(t, img.Ramdisks[0]), blob(t, img.Ramdisks[1])
	zero := make([]byte, 48)
	want := map[int][]byte{
		0: sha384(zero, sha384(kernel, cmdline, boot, appRD)),
		1: sha384(zero, sha384(kernel, cmdline, boot)),
		2: sha384(zero, sha384(appRD)),
	}
	again, err := f.PCRs(nil)
	if err != nil {
		t.Fatal(err)
	}
	for i, w := range want {
		if !bytes.Equal(pcrs[i], w) || !bytes.Equal(again[i], w) {
			t.Errorf("PCR%d written %x, read %x, want %x", i, pcrs[i], again[i], w)
		}
	}
	if _, ok := pcrs[8]; ok {
		t.Error("an unsigned image has no PCR8")
	}
	// Deterministic: the same parts give the same bytes.
	path2, _ := write(t, sample(t))
	raw2, _ := os.ReadFile(path2)
	if !bytes.Equal(raw, raw2) {
		t.Error("two writes of the same image differ")
	}
}

// TestEIFPCRsKnownValues pins the measurement of fixed inputs — kernel "K", cmdline "C",
// ramdisks "R1" and "R2" — to values computed outside Go with coreutils:
// (head -c 48 /dev/zero; printf %s KCR1R2 | sha384sum | cut -d' ' -f1 | xxd -r -p) | sha384sum
func TestEIFPCRsKnownValues(t *testing.T) {
	img := Image{Kernel: BytesBlob([]byte("K")), Cmdline: "C", Ramdisks: []Blob{BytesBlob([]byte("R1")), BytesBlob([]byte("R2"))}}
	_, pcrs := write(t, img)
	zero := make([]byte, 48)
	for i, want := range map[int]string{
		0: "89427b25b8c6dc97577cb4257cb4bfab42a869f0f9ba8fe683690f616715797ead72673c1918835d1615216fb5c8769e", // KCR1R2
		1: "5cfb73228c84599832f72e7c7df5191467530cec6c016cea4c9cd0b20141b4b47a476341036a7373ea241aa9d4156a41", // KCR1
		2: "e52b3d6d3661ed6edeafaa4d330cfb9fb9f237304191a23edca8a97fb126043594cb522cb845379441668c8cc1c8adc5", // R2
	} {
		if got := hex.EncodeToString(pcrs[i]); got != want {
			t.Errorf("PCR%d %s want %s", i, got, want)
		}
	}
	// A signed image measures its certificate into PCR8.
	img.Signature, img.SigningCertDER = []byte{0x80}, []byte("certificate DER")
	path, pcrs := write(t, img)
	if want := sha384(zero, sha384([]byte("certificate DER"))); !bytes.Equal(pcrs[8], want) {
		t.Errorf("PCR8 %x want %x", pcrs[8], want)
	}
	f := open(t, path)
	if s, ok := f.First(SectionSignature); !ok || s.Size != 1 {
		t.Errorf("signature section %+v %v", s, ok)
	}
	if again, _ := f.PCRs([]byte("certificate DER")); !bytes.Equal(again[8], pcrs[8]) || !bytes.Equal(again[0], pcrs[0]) {
		t.Error("PCRs recomputed from the signed file differ (the signature section is not measured)")
	}
}

// TestEIFReadRefusesDamage: a flipped byte anywhere fails the CRC; bad magic, a truncated file,
// a section table that disagrees with the section headers are refused.
func TestEIFReadRefusesDamage(t *testing.T) {
	path, _ := write(t, sample(t))
	raw, _ := os.ReadFile(path)
	try := func(name string, b []byte) {
		t.Helper()
		if _, err := Read(bytes.NewReader(b), int64(len(b))); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	for _, off := range []int{10, 600, len(raw) - 1} {
		b := append([]byte(nil), raw...)
		b[off] ^= 1
		try("flipped byte", b)
	}
	b := append([]byte(nil), raw...)
	b[0] = 'x'
	try("magic", b)
	try("truncated", raw[:len(raw)-5])
	try("trailing bytes", append(append([]byte(nil), raw...), 0))
	b = append([]byte(nil), raw...)
	binary.BigEndian.PutUint64(b[28+8*32:], 3) // kernel size in the table
	try("table disagrees", b)
}
