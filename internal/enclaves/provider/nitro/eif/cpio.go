package eif

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"
)

// File types in a cpio mode (the high bits of st_mode).
const (
	ModeDir     = 0o040000
	ModeRegular = 0o100000
	ModeSymlink = 0o120000
	modeType    = 0o170000
)

// CPIOEntry is one entry of a cpio "newc" archive, the format Linux unpacks an initramfs from.
type CPIOEntry struct {
	Name  string // without a leading slash: "rootfs/bin/app"
	Mode  uint32 // type bits and permissions: ModeRegular|0o755
	UID   uint32
	GID   uint32
	MTime uint32
	// Data is a regular file's content or a symbolic link's target.
	Data []byte
}

// CPIOWriter writes a newc archive (magic 070701, no checksums). Inode numbers are assigned in
// order and mtimes are what the entries say, so the same entries give the same bytes.
type CPIOWriter struct {
	w      io.Writer
	n      int64
	ino    uint32
	closed bool
}

// NewCPIOWriter writes to w.
func NewCPIOWriter(w io.Writer) *CPIOWriter { return &CPIOWriter{w: w} }

// WriteHeader writes an entry's header and name; the caller then writes size bytes of data with
// WriteData (regular files) — or use Write for entries whose data is in memory.
func (c *CPIOWriter) writeHeader(e CPIOEntry, size int64) error {
	if c.closed {
		return errors.New("cpio: archive closed")
	}
	if e.Name == "" || e.Name[0] == '/' {
		return fmt.Errorf("cpio: name %q must be relative and non-empty", e.Name)
	}
	if size > 0xFFFFFFFF {
		return fmt.Errorf("cpio: %s is %d bytes; newc holds at most 4 GiB per file", e.Name, size)
	}
	c.ino++
	nlink := uint32(1)
	if e.Mode&modeType == ModeDir {
		nlink = 2
	}
	return c.header(c.ino, e.Mode, e.UID, e.GID, nlink, e.MTime, uint32(size), e.Name)
}

func (c *CPIOWriter) header(ino, mode, uid, gid, nlink, mtime, size uint32, name string) error {
	var b bytes.Buffer
	b.WriteString("070701")
	for _, v := range []uint32{ino, mode, uid, gid, nlink, mtime, size, 0, 0, 0, 0, uint32(len(name) + 1), 0} {
		fmt.Fprintf(&b, "%08X", v)
	}
	b.WriteString(name)
	b.WriteByte(0)
	if err := c.write(b.Bytes()); err != nil {
		return err
	}
	return c.pad()
}

func (c *CPIOWriter) write(p []byte) error {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return err
}

func (c *CPIOWriter) pad() error {
	if r := c.n % 4; r != 0 {
		return c.write(make([]byte, 4-r))
	}
	return nil
}

// Write adds an entry whose data is in memory.
func (c *CPIOWriter) Write(e CPIOEntry) error {
	if err := c.writeHeader(e, int64(len(e.Data))); err != nil {
		return err
	}
	if err := c.write(e.Data); err != nil {
		return err
	}
	return c.pad()
}

// WriteFrom adds a regular file of size bytes read from r.
func (c *CPIOWriter) WriteFrom(e CPIOEntry, size int64, r io.Reader) error {
	if err := c.writeHeader(e, size); err != nil {
		return err
	}
	n, err := io.Copy(writerFunc(c.write), io.LimitReader(r, size))
	if err != nil {
		return err
	}
	if n != size {
		return fmt.Errorf("cpio: %s: read %d bytes, want %d", e.Name, n, size)
	}
	return c.pad()
}

type writerFunc func([]byte) error

func (f writerFunc) Write(p []byte) (int, error) {
	if err := f(p); err != nil {
		return 0, err
	}
	return len(p), nil
}

// Close writes the trailer.
func (c *CPIOWriter) Close() error {
	if c.closed {
		return nil
	}
	if err := c.header(0, 0, 0, 0, 1, 0, 0, "TRAILER!!!"); err != nil {
		return err
	}
	c.closed = true
	return nil
}

// ReadCPIO reads a newc archive whole (for tests and inspection; archives are small there).
func ReadCPIO(r io.Reader) ([]CPIOEntry, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, err
	}
	var out []CPIOEntry
	pos := 0
	align := func(p int) int { return (p + 3) &^ 3 }
	for {
		if pos+110 > len(data) {
			return nil, errors.New("cpio: truncated header")
		}
		h := data[pos : pos+110]
		if string(h[:6]) != "070701" {
			return nil, fmt.Errorf("cpio: bad magic %q at %d", h[:6], pos)
		}
		field := func(i int) (uint32, error) {
			v, err := strconv.ParseUint(string(h[6+8*i:14+8*i]), 16, 32)
			return uint32(v), err
		}
		var f [13]uint32
		for i := range f {
			v, err := field(i)
			if err != nil {
				return nil, fmt.Errorf("cpio: field %d at %d: %w", i, pos, err)
			}
			f[i] = v
		}
		nameSize, size := int(f[11]), int(f[6])
		if nameSize < 1 || pos+110+nameSize > len(data) {
			return nil, errors.New("cpio: truncated name")
		}
		name := string(data[pos+110 : pos+110+nameSize-1])
		pos = align(pos + 110 + nameSize)
		if pos+size > len(data) {
			return nil, fmt.Errorf("cpio: %s: truncated data", name)
		}
		if name == "TRAILER!!!" {
			return out, nil
		}
		out = append(out, CPIOEntry{Name: name, Mode: f[1], UID: f[2], GID: f[3], MTime: f[5], Data: append([]byte(nil), data[pos:pos+size]...)})
		pos = align(pos + size)
	}
}
