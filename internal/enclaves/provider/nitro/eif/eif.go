// Package eif writes and reads the AWS Nitro Enclave Image Format (EIF) and computes an image's
// PCRs the way nitro-cli does. The layout and the measurement rules follow AWS's own definition
// (the aws-nitro-enclaves-image-format crate, version 4 of the format):
//
//	header (548 bytes, big-endian):
//	  magic ".eif" | version u16 | flags u16 | default_mem u64 | default_cpus u64 |
//	  reserved u16 | num_sections u16 | section_offsets [32]u64 | section_sizes [32]u64 |
//	  unused u32 | crc32 u32
//	then each section: type u16 | flags u16 | size u64 | size bytes of data
//
// Sections are written kernel, cmdline, metadata, each ramdisk, signature (when signed); a
// section's offset points at its 12-byte section header, its size counts the data only. The CRC
// is CRC-32/IEEE over the header without its CRC field, then every section header and its data in
// file order.
//
// Measurements (SHA-384, 48 bytes; extend(x) = SHA384(48 zero bytes ‖ x)):
//
//	PCR0 = extend(SHA384(kernel ‖ cmdline ‖ ramdisk₁ ‖ … ‖ ramdiskₙ))   the whole image
//	PCR1 = extend(SHA384(kernel ‖ cmdline ‖ ramdisk₁))                 the bootstrap
//	PCR2 = extend(SHA384(ramdisk₂ ‖ … ‖ ramdiskₙ))                      the application
//	PCR8 = extend(SHA384(signing certificate, DER))                    signed images only
//
// The metadata and signature sections are not measured; the cmdline is measured without a
// trailing NUL.
package eif

import (
	"bytes"
	"crypto/sha512"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"hash/crc32"
	"io"
)

// Magic opens every EIF.
var Magic = [4]byte{'.', 'e', 'i', 'f'}

// Version is the format version written (4: with the metadata section).
const Version = 4

// MaxSections is the size of the header's section table.
const MaxSections = 32

// HeaderSize and SectionHeaderSize are the fixed sizes of the two headers.
const (
	HeaderSize        = 4 + 2 + 2 + 8 + 8 + 2 + 2 + 8*MaxSections + 8*MaxSections + 4 + 4 // 548
	SectionHeaderSize = 2 + 2 + 8                                                         // 12
)

// FlagARM64 in the header's flags marks an aarch64 image; clear means x86_64.
const FlagARM64 uint16 = 0x1

// SectionType is what a section holds.
type SectionType uint16

const (
	SectionInvalid SectionType = iota
	SectionKernel
	SectionCmdline
	SectionRamdisk
	SectionSignature
	SectionMetadata
)

func (t SectionType) String() string {
	switch t {
	case SectionKernel:
		return "kernel"
	case SectionCmdline:
		return "cmdline"
	case SectionRamdisk:
		return "ramdisk"
	case SectionSignature:
		return "signature"
	case SectionMetadata:
		return "metadata"
	}
	return fmt.Sprintf("invalid(%d)", uint16(t))
}

// Header is the file header.
type Header struct {
	Version        uint16
	Flags          uint16
	DefaultMem     uint64 // bytes
	DefaultCPUs    uint64
	NumSections    uint16
	SectionOffsets [MaxSections]uint64
	SectionSizes   [MaxSections]uint64
	CRC32          uint32
}

func (h *Header) marshal() []byte {
	b := make([]byte, HeaderSize)
	copy(b, Magic[:])
	be := binary.BigEndian
	be.PutUint16(b[4:], h.Version)
	be.PutUint16(b[6:], h.Flags)
	be.PutUint64(b[8:], h.DefaultMem)
	be.PutUint64(b[16:], h.DefaultCPUs)
	// b[24:26] reserved
	be.PutUint16(b[26:], h.NumSections)
	for i := 0; i < MaxSections; i++ {
		be.PutUint64(b[28+8*i:], h.SectionOffsets[i])
		be.PutUint64(b[28+8*MaxSections+8*i:], h.SectionSizes[i])
	}
	// b[540:544] unused
	be.PutUint32(b[544:], h.CRC32)
	return b
}

func parseHeader(b []byte) (Header, error) {
	var h Header
	if len(b) != HeaderSize {
		return h, fmt.Errorf("eif: header is %d bytes, want %d", len(b), HeaderSize)
	}
	if !bytes.Equal(b[:4], Magic[:]) {
		return h, fmt.Errorf("eif: bad magic %q", b[:4])
	}
	be := binary.BigEndian
	h.Version = be.Uint16(b[4:])
	h.Flags = be.Uint16(b[6:])
	h.DefaultMem = be.Uint64(b[8:])
	h.DefaultCPUs = be.Uint64(b[16:])
	h.NumSections = be.Uint16(b[26:])
	for i := 0; i < MaxSections; i++ {
		h.SectionOffsets[i] = be.Uint64(b[28+8*i:])
		h.SectionSizes[i] = be.Uint64(b[28+8*MaxSections+8*i:])
	}
	h.CRC32 = be.Uint32(b[544:])
	return h, nil
}

func sectionHeader(t SectionType, size uint64) []byte {
	b := make([]byte, SectionHeaderSize)
	binary.BigEndian.PutUint16(b, uint16(t))
	binary.BigEndian.PutUint64(b[4:], size)
	return b
}

// Metadata is the metadata section: JSON, as nitro-cli writes it (EifIdentityInfo).
type Metadata struct {
	ImageName      string          `json:"ImageName"`
	ImageVersion   string          `json:"ImageVersion"`
	BuildMetadata  BuildMetadata   `json:"BuildMetadata"`
	DockerInfo     json.RawMessage `json:"DockerInfo"`
	CustomMetadata json.RawMessage `json:"CustomMetadata"`
}

// BuildMetadata says what built the image.
type BuildMetadata struct {
	BuildTime        string `json:"BuildTime"`
	BuildTool        string `json:"BuildTool"`
	BuildToolVersion string `json:"BuildToolVersion"`
	OperatingSystem  string `json:"OperatingSystem"`
	KernelVersion    string `json:"KernelVersion"`
}

// Blob is a section's content: Size bytes read from R.
type Blob struct {
	R    io.ReaderAt
	Size int64
}

// BytesBlob wraps b.
func BytesBlob(b []byte) Blob { return Blob{R: bytes.NewReader(b), Size: int64(len(b))} }

func (b Blob) reader() io.Reader { return io.NewSectionReader(b.R, 0, b.Size) }

// Image is what Write puts into an EIF.
type Image struct {
	Flags       uint16
	DefaultMem  uint64 // bytes; 0 means 1 GiB, nitro-cli's default
	DefaultCPUs uint64 // 0 means 2, nitro-cli's default
	Kernel      Blob
	Cmdline     string
	// Ramdisks: the first is the bootstrap (init, NSM driver), the rest the application.
	Ramdisks []Blob
	Metadata Metadata
	// Signature is the CBOR signature section (optional); SigningCertDER the certificate it was
	// made with, measured into PCR8.
	Signature      []byte
	SigningCertDER []byte
}

// PCRs are an image's measurements, 48 bytes each, by PCR index (0, 1, 2 and 8 when signed).
type PCRs map[int][]byte

// Write writes img to w and returns its PCRs. w is written at offset 0 onwards; the header is
// written last (its CRC covers everything), so w must be seekable.
func Write(w io.WriteSeeker, img Image) (PCRs, error) {
	if img.Kernel.R == nil {
		return nil, errors.New("eif: no kernel")
	}
	if len(img.Ramdisks) == 0 {
		return nil, errors.New("eif: at least one ramdisk (the bootstrap) is required")
	}
	if bytes.IndexByte([]byte(img.Cmdline), 0) >= 0 {
		return nil, errors.New("eif: the cmdline contains a NUL byte")
	}
	meta, err := json.Marshal(img.Metadata)
	if err != nil {
		return nil, err
	}
	type section struct {
		t    SectionType
		blob Blob
	}
	sections := []section{{SectionKernel, img.Kernel}, {SectionCmdline, BytesBlob([]byte(img.Cmdline))}, {SectionMetadata, BytesBlob(meta)}}
	for _, r := range img.Ramdisks {
		sections = append(sections, section{SectionRamdisk, r})
	}
	if len(img.Signature) > 0 {
		sections = append(sections, section{SectionSignature, BytesBlob(img.Signature)})
	}
	if len(sections) > MaxSections {
		return nil, fmt.Errorf("eif: %d sections, at most %d", len(sections), MaxSections)
	}
	h := Header{Version: Version, Flags: img.Flags, DefaultMem: img.DefaultMem, DefaultCPUs: img.DefaultCPUs, NumSections: uint16(len(sections))}
	if h.DefaultMem == 0 {
		h.DefaultMem = 1 << 30
	}
	if h.DefaultCPUs == 0 {
		h.DefaultCPUs = 2
	}
	off := uint64(HeaderSize)
	for i, s := range sections {
		h.SectionOffsets[i] = off
		h.SectionSizes[i] = uint64(s.blob.Size)
		off += SectionHeaderSize + uint64(s.blob.Size)
	}
	crc := crc32.NewIEEE()
	hb := h.marshal()
	crc.Write(hb[:HeaderSize-4])
	if _, err := w.Seek(HeaderSize, io.SeekStart); err != nil {
		return nil, err
	}
	m := newMeasurer()
	for _, s := range sections {
		sh := sectionHeader(s.t, uint64(s.blob.Size))
		crc.Write(sh)
		if _, err := w.Write(sh); err != nil {
			return nil, err
		}
		dst := io.MultiWriter(w, crc, m.section(s.t))
		n, err := io.Copy(dst, s.blob.reader())
		if err != nil {
			return nil, err
		}
		if n != s.blob.Size {
			return nil, fmt.Errorf("eif: %s section: read %d bytes, want %d", s.t, n, s.blob.Size)
		}
	}
	h.CRC32 = crc.Sum32()
	if _, err := w.Seek(0, io.SeekStart); err != nil {
		return nil, err
	}
	if _, err := w.Write(h.marshal()); err != nil {
		return nil, err
	}
	return m.pcrs(img.SigningCertDER), nil
}

// measurer feeds section data to the PCR hashes by nitro-cli's rules.
type measurer struct {
	image, bootstrap, app hash.Hash
	ramdisks              int
}

func newMeasurer() *measurer {
	return &measurer{image: sha512.New384(), bootstrap: sha512.New384(), app: sha512.New384()}
}

// section returns where a section's data goes.
func (m *measurer) section(t SectionType) io.Writer {
	switch t {
	case SectionKernel, SectionCmdline:
		return io.MultiWriter(m.image, m.bootstrap)
	case SectionRamdisk:
		m.ramdisks++
		if m.ramdisks == 1 {
			return io.MultiWriter(m.image, m.bootstrap)
		}
		return io.MultiWriter(m.image, m.app)
	}
	return io.Discard
}

func (m *measurer) pcrs(cert []byte) PCRs {
	out := PCRs{0: Extend(m.image.Sum(nil)), 1: Extend(m.bootstrap.Sum(nil)), 2: Extend(m.app.Sum(nil))}
	if len(cert) > 0 {
		d := sha512.Sum384(cert)
		out[8] = Extend(d[:])
	}
	return out
}

// Extend is a TPM-style extend of a fresh (all-zero) SHA-384 register with digest:
// SHA384(48 zero bytes ‖ digest).
func Extend(digest []byte) []byte {
	h := sha512.New384()
	h.Write(make([]byte, sha512.Size384))
	h.Write(digest)
	return h.Sum(nil)
}

// Section is one section of a read EIF.
type Section struct {
	Type   SectionType
	Flags  uint16
	Offset int64 // of the data (after the section header)
	Size   int64
}

// File is a parsed EIF.
type File struct {
	Header   Header
	Sections []Section
	r        io.ReaderAt
}

// Read parses an EIF of size bytes: the header, every section header (which must agree with the
// header's table), and the CRC. It does not load the sections.
func Read(r io.ReaderAt, size int64) (*File, error) {
	if size < HeaderSize {
		return nil, fmt.Errorf("eif: %d bytes is shorter than a header", size)
	}
	hb := make([]byte, HeaderSize)
	if _, err := r.ReadAt(hb, 0); err != nil {
		return nil, fmt.Errorf("eif: reading the header: %w", err)
	}
	h, err := parseHeader(hb)
	if err != nil {
		return nil, err
	}
	if h.Version < 1 || h.Version > Version {
		return nil, fmt.Errorf("eif: version %d is not supported (1–%d)", h.Version, Version)
	}
	if h.NumSections == 0 || h.NumSections > MaxSections {
		return nil, fmt.Errorf("eif: %d sections", h.NumSections)
	}
	f := &File{Header: h, r: r}
	crc := crc32.NewIEEE()
	crc.Write(hb[:HeaderSize-4])
	next := int64(HeaderSize)
	for i := 0; i < int(h.NumSections); i++ {
		off, sz := int64(h.SectionOffsets[i]), int64(h.SectionSizes[i])
		if off != next {
			return nil, fmt.Errorf("eif: section %d at offset %d, want %d (sections are contiguous)", i, off, next)
		}
		if sz < 0 || off+SectionHeaderSize+sz > size || off+SectionHeaderSize+sz < off {
			return nil, fmt.Errorf("eif: section %d (%d bytes at %d) runs past the end of the file (%d bytes)", i, sz, off, size)
		}
		sh := make([]byte, SectionHeaderSize)
		if _, err := r.ReadAt(sh, off); err != nil {
			return nil, fmt.Errorf("eif: section %d header: %w", i, err)
		}
		t := SectionType(binary.BigEndian.Uint16(sh))
		if t == SectionInvalid || t > SectionMetadata {
			return nil, fmt.Errorf("eif: section %d has type %d", i, uint16(t))
		}
		if got := int64(binary.BigEndian.Uint64(sh[4:])); got != sz {
			return nil, fmt.Errorf("eif: section %d (%s) says %d bytes, the header table %d", i, t, got, sz)
		}
		crc.Write(sh)
		if _, err := io.Copy(crc, io.NewSectionReader(r, off+SectionHeaderSize, sz)); err != nil {
			return nil, fmt.Errorf("eif: section %d: %w", i, err)
		}
		f.Sections = append(f.Sections, Section{Type: t, Flags: binary.BigEndian.Uint16(sh[2:]), Offset: off + SectionHeaderSize, Size: sz})
		next = off + SectionHeaderSize + sz
	}
	if next != size {
		return nil, fmt.Errorf("eif: %d bytes after the last section", size-next)
	}
	// Version 1 files carry no CRC.
	if h.Version >= 2 && crc.Sum32() != h.CRC32 {
		return nil, fmt.Errorf("eif: CRC32 %08x, the header says %08x: the file is damaged", crc.Sum32(), h.CRC32)
	}
	var kernels, cmdlines, ramdisks int
	for _, s := range f.Sections {
		switch s.Type {
		case SectionKernel:
			kernels++
		case SectionCmdline:
			cmdlines++
		case SectionRamdisk:
			ramdisks++
		}
	}
	if kernels != 1 || cmdlines != 1 || ramdisks == 0 {
		return nil, fmt.Errorf("eif: %d kernel, %d cmdline and %d ramdisk sections; want 1, 1 and at least 1", kernels, cmdlines, ramdisks)
	}
	return f, nil
}

// Open returns a reader of section s's data.
func (f *File) Open(s Section) *io.SectionReader { return io.NewSectionReader(f.r, s.Offset, s.Size) }

// First returns the first section of type t.
func (f *File) First(t SectionType) (Section, bool) {
	for _, s := range f.Sections {
		if s.Type == t {
			return s, true
		}
	}
	return Section{}, false
}

// Bytes reads section s whole.
func (f *File) Bytes(s Section) ([]byte, error) { return io.ReadAll(f.Open(s)) }

// Metadata decodes the metadata section.
func (f *File) Metadata() (Metadata, error) {
	var m Metadata
	s, ok := f.First(SectionMetadata)
	if !ok {
		return m, errors.New("eif: no metadata section")
	}
	b, err := f.Bytes(s)
	if err != nil {
		return m, err
	}
	return m, json.Unmarshal(b, &m)
}

// PCRs recomputes the image's measurements from its sections (kernel, cmdline, ramdisks in
// file order). PCR8 is included when signingCertDER is given: the certificate is in the
// signature section, which this package keeps opaque.
func (f *File) PCRs(signingCertDER []byte) (PCRs, error) {
	m := newMeasurer()
	for _, s := range f.Sections {
		if _, err := io.Copy(m.section(s.Type), f.Open(s)); err != nil {
			return nil, err
		}
	}
	return m.pcrs(signingCertDER), nil
}
