package trace

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
)

// Magic opens every capture file.
const Magic = "IKETCAP\x00"

const fileHeaderSize = 24

// maxMetaSize bounds the JSON metadata a reader accepts.
const maxMetaSize = 64 << 20

// ErrNotCapture is returned (wrapped) for a file that is not an iket capture.
var ErrNotCapture = errors.New("not an iket capture")

// FormatError reports a malformed capture, naming where.
type FormatError struct {
	Path   string // file, when known
	Offset int64  // byte offset, -1 when not about one place
	Msg    string
}

func (e *FormatError) Error() string {
	p := e.Path
	if p == "" {
		p = "capture"
	}
	if e.Offset >= 0 {
		return fmt.Sprintf("%s: offset %d: %s", p, e.Offset, e.Msg)
	}
	return fmt.Sprintf("%s: %s", p, e.Msg)
}

// Capture is an opened capture file. Its methods read from the underlying
// reader on demand; a Capture is safe for concurrent use when that reader is
// (an *os.File is).
type Capture struct {
	Meta Meta
	r    io.ReaderAt
	size int64
	path string
	c    io.Closer
}

// Open opens and checks the capture at path. Close it when done.
func Open(path string) (*Capture, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open capture: %w", err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("open capture: %w", err)
	}
	c, err := read(f, st.Size(), path)
	if err != nil {
		f.Close()
		return nil, err
	}
	c.c = f
	return c, nil
}

// Read checks the capture held by r, size bytes long.
func Read(r io.ReaderAt, size int64) (*Capture, error) { return read(r, size, "") }

func read(r io.ReaderAt, size int64, path string) (*Capture, error) {
	bad := func(off int64, format string, a ...any) error {
		return &FormatError{Path: path, Offset: off, Msg: fmt.Sprintf(format, a...)}
	}
	var h [fileHeaderSize]byte
	if n, err := r.ReadAt(h[:], 0); n < len(h) {
		if err == nil || err == io.EOF {
			return nil, fmt.Errorf("%w: %w", bad(0, "file is %d bytes, shorter than the %d-byte header", size, fileHeaderSize), ErrNotCapture)
		}
		return nil, fmt.Errorf("read capture header: %w", err)
	}
	if string(h[:8]) != Magic {
		return nil, fmt.Errorf("%w: %w", bad(0, "magic %q, want %q", h[:8], Magic), ErrNotCapture)
	}
	le := binary.LittleEndian
	fileVersion := le.Uint32(h[8:])
	if fileVersion < MinFormatVersion || fileVersion > FormatVersion {
		return nil, bad(8, "format version %d, this iket reads versions %d to %d", fileVersion, MinFormatVersion, FormatVersion)
	}
	mlen := le.Uint64(h[16:])
	if mlen == 0 {
		return nil, bad(16, "metadata length 0")
	}
	if mlen > maxMetaSize || int64(mlen) > size-fileHeaderSize {
		return nil, bad(16, "metadata length %d exceeds the file (%d bytes) or the %d-byte limit", mlen, size, maxMetaSize)
	}
	mb := make([]byte, mlen)
	if err := readAt(r, mb, fileHeaderSize); err != nil {
		return nil, fmt.Errorf("read capture metadata: %w", err)
	}
	c := &Capture{r: r, size: size, path: path}
	dec := json.NewDecoder(bytes.NewReader(mb))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c.Meta); err != nil {
		return nil, bad(fileHeaderSize, "metadata: %v", err)
	}
	if c.Meta.Version != int(fileVersion) {
		return nil, bad(fileHeaderSize, "metadata version %d, but the file header says %d", c.Meta.Version, fileVersion)
	}
	if len(c.Meta.Launches) == 0 {
		return nil, bad(fileHeaderSize, "metadata lists no launch")
	}
	dataStart := align8(fileHeaderSize + int64(mlen))
	for i := range c.Meta.Launches {
		l := &c.Meta.Launches[i]
		if err := l.validate(i); err != nil {
			return nil, &FormatError{Path: path, Offset: -1, Msg: err.Error()}
		}
		if l.Offset < dataStart || l.Size() > size-l.Offset {
			return nil, bad(l.Offset, "launch %d (%s): %d warps of %d bytes at offset %d run past the end of the file (%d bytes)",
				i, l.Kernel, l.Warps, l.Stride(), l.Offset, size)
		}
	}
	return c, nil
}

// Path returns the file the capture was opened from, or "".
func (c *Capture) Path() string { return c.path }

// Close closes the file opened by [Open]; it is a no-op for [Read].
func (c *Capture) Close() error {
	if c.c == nil {
		return nil
	}
	return c.c.Close()
}

// Launch returns launch i. It panics if i is out of range, like a slice.
func (c *Capture) Launch(i int) *Launch {
	return &Launch{Meta: &c.Meta.Launches[i], Index: i, c: c}
}

// NumLaunches returns the number of launches in the capture.
func (c *Capture) NumLaunches() int { return len(c.Meta.Launches) }

// Launch gives raw access to one launch's warp buffers.
type Launch struct {
	Meta  *LaunchMeta
	Index int
	c     *Capture
}

// Capture returns the capture the launch belongs to.
func (l *Launch) Capture() *Capture { return l.c }

// ReadWarp reads warp slot i's raw bytes (header and records) into buf,
// growing it when short, and returns the slice. The caller owns buf.
func (l *Launch) ReadWarp(i uint64, buf []byte) ([]byte, error) {
	if i >= l.Meta.Warps {
		return buf, fmt.Errorf("read warp %d: launch %d has %d warps", i, l.Index, l.Meta.Warps)
	}
	st := l.Meta.Stride()
	if int64(cap(buf)) < st {
		buf = make([]byte, st)
	}
	buf = buf[:st]
	off := l.Meta.Offset + int64(i)*st
	if err := readAt(l.c.r, buf, off); err != nil {
		return buf, fmt.Errorf("read warp %d of launch %d at offset %d: %w", i, l.Index, off, err)
	}
	return buf, nil
}

// SectionReader returns a reader over the launch's warp buffers.
func (l *Launch) SectionReader() *io.SectionReader {
	return io.NewSectionReader(l.c.r, l.Meta.Offset, l.Meta.Size())
}

func align8(n int64) int64 { return (n + 7) &^ 7 }

// readAt fills b from r at off. A full read that also reports io.EOF (which
// the io.ReaderAt contract allows at the end of the input) is a success; a
// short read without an error is io.ErrUnexpectedEOF.
func readAt(r io.ReaderAt, b []byte, off int64) error {
	n, err := r.ReadAt(b, off)
	if n == len(b) {
		return nil
	}
	if err == nil || err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}

// WriteCapture writes a capture: meta (whose launches' Offset fields it
// fills in) followed by each launch's buffers, read from bufs[i], which must
// hold exactly Size() bytes. Meta.Version is the buffers' record format
// version; 0 means [FormatVersion], and is set so.
func WriteCapture(w io.Writer, meta *Meta, bufs []io.Reader) error {
	if len(bufs) != len(meta.Launches) {
		return fmt.Errorf("write capture: %d buffers for %d launches", len(bufs), len(meta.Launches))
	}
	if meta.Version == 0 {
		meta.Version = FormatVersion
	}
	if meta.Version < MinFormatVersion || meta.Version > FormatVersion {
		return fmt.Errorf("write capture: format version %d, this iket writes versions %d to %d", meta.Version, MinFormatVersion, FormatVersion)
	}
	// Offsets depend on the metadata length, which depends on the offsets'
	// digits: iterate until stable (twice at most in practice).
	var mb []byte
	for iter := 0; ; iter++ {
		b, err := json.Marshal(meta)
		if err != nil {
			return fmt.Errorf("write capture: encode metadata: %w", err)
		}
		off := align8(fileHeaderSize + int64(len(b)))
		changed := false
		for i := range meta.Launches {
			if meta.Launches[i].Offset != off {
				meta.Launches[i].Offset = off
				changed = true
			}
			off += meta.Launches[i].Size()
		}
		if !changed {
			mb = b
			break
		}
		if iter > 8 {
			return errors.New("write capture: metadata offsets did not settle")
		}
	}
	var h [fileHeaderSize]byte
	copy(h[:], Magic)
	binary.LittleEndian.PutUint32(h[8:], uint32(meta.Version))
	binary.LittleEndian.PutUint64(h[16:], uint64(len(mb)))
	if _, err := w.Write(h[:]); err != nil {
		return fmt.Errorf("write capture: %w", err)
	}
	if _, err := w.Write(mb); err != nil {
		return fmt.Errorf("write capture: %w", err)
	}
	if pad := align8(int64(len(mb))) - int64(len(mb)); pad > 0 {
		if _, err := w.Write(make([]byte, pad)); err != nil {
			return fmt.Errorf("write capture: %w", err)
		}
	}
	for i, b := range bufs {
		want := meta.Launches[i].Size()
		n, err := io.Copy(w, io.LimitReader(b, want))
		if err != nil {
			return fmt.Errorf("write capture: launch %d buffers: %w", i, err)
		}
		if n != want {
			return fmt.Errorf("write capture: launch %d buffers: got %d bytes, want %d", i, n, want)
		}
	}
	return nil
}
