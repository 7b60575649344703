package trace

import (
	"cmp"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"slices"

	"github.com/iket-trace/iket/internal/raw"
)

// Magic opens every capture file.
const Magic = "IKETCAP\x00"

// FileVersion is the capture file layout this iket writes: version 3 adds
// a CRC-32C checksum table and carries the records' format (section 4 of
// docs/FORMAT.md) in a field of its own. Versions 1 and 2, whose version is
// the records' format, are read too, as unchecked captures.
const FileVersion = 3

const fileHeaderSize = 24

// maxMetaSize bounds the JSON metadata a reader accepts.
const maxMetaSize = 16 << 20

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
	Meta        Meta
	r           io.ReaderAt
	size        int64
	path        string
	c           io.Closer
	fileVersion int
}

// Open opens and checks the capture at path, a regular file, verifying its
// checksums (see [Capture.Checked]). Close it when done.
func Open(path string) (*Capture, error) { return OpenContext(context.Background(), path) }

// OpenContext is [Open] with a context: once ctx is done, every read of
// the capture (by Open itself or later by a [Decoder]) fails with ctx's
// error, so a pass over a large capture stops at its next read.
func OpenContext(ctx context.Context, path string) (*Capture, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open capture: %w", err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("open capture: %w", err)
	}
	if !st.Mode().IsRegular() {
		f.Close()
		return nil, fmt.Errorf("%w: %w", &FormatError{Path: path, Offset: -1, Msg: fmt.Sprintf("not a regular file (%s)", st.Mode().Type())}, ErrNotCapture)
	}
	var r io.ReaderAt = f
	if ctx.Done() != nil {
		r = ctxReaderAt{ctx, f}
	}
	c, err := read(r, st.Size(), path)
	if err != nil {
		f.Close()
		return nil, err
	}
	c.c = f
	return c, nil
}

// ctxReaderAt fails its reads once its context is done.
type ctxReaderAt struct {
	ctx context.Context
	r   io.ReaderAt
}

func (c ctxReaderAt) ReadAt(p []byte, off int64) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.ReadAt(p, off)
}

// Read checks the capture held by r, size bytes long, verifying its
// checksums. It reads the whole capture once.
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
	if fileVersion < raw.MinFormatVersion || fileVersion > FileVersion {
		return nil, bad(8, "format version %d, this iket reads versions %d to %d", fileVersion, raw.MinFormatVersion, FileVersion)
	}
	records := fileVersion
	if fileVersion >= 3 {
		records = le.Uint32(h[12:])
		if records < raw.MinFormatVersion || records > raw.FormatVersion {
			return nil, bad(12, "record format %d, this iket reads formats %d to %d", records, raw.MinFormatVersion, raw.FormatVersion)
		}
	} else if v := le.Uint32(h[12:]); v != 0 {
		return nil, bad(12, "reserved field %#x, want 0", v)
	}
	mlen := le.Uint64(h[16:])
	if mlen == 0 {
		return nil, bad(16, "metadata length 0")
	}
	if mlen > maxMetaSize || int64(mlen) > size-fileHeaderSize {
		return nil, bad(16, "metadata length %d exceeds the file (%d bytes) or the %d-byte limit", mlen, size, maxMetaSize)
	}
	dataStart := align8(fileHeaderSize + int64(mlen))
	if dataStart > size {
		return nil, bad(16, "metadata length %d and its padding run past the end of the file (%d bytes)", mlen, size)
	}
	mb := make([]byte, dataStart-fileHeaderSize)
	if err := readAt(r, mb, fileHeaderSize); err != nil {
		return nil, fmt.Errorf("read capture metadata: %w", err)
	}
	for i, b := range mb[mlen:] {
		if b != 0 {
			return nil, bad(fileHeaderSize+int64(mlen)+int64(i), "metadata padding byte %#x, want 0", b)
		}
	}
	c := &Capture{r: r, size: size, path: path, fileVersion: int(fileVersion)}
	if err := decodeMeta(mb[:mlen], &c.Meta); err != nil {
		return nil, bad(fileHeaderSize, "metadata: %v", err)
	}
	if c.Meta.Version != int(records) {
		if fileVersion >= 3 {
			return nil, bad(fileHeaderSize, "metadata version %d, but the file header says record format %d", c.Meta.Version, records)
		}
		return nil, bad(fileHeaderSize, "metadata version %d, but the file header says %d", c.Meta.Version, fileVersion)
	}
	if len(c.Meta.Launches) == 0 {
		return nil, bad(fileHeaderSize, "metadata lists no launch")
	}
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
	if err := checkLayout(c.Meta.Launches, dataStart, fileVersion >= 3); err != nil {
		return nil, &FormatError{Path: path, Offset: err.off, Msg: err.msg}
	}
	if fileVersion >= 3 {
		if err := verifyChecksums(r, size, path, h[:], mb, c.Meta.Launches); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// layoutError is a bad launch layout, at an offset.
type layoutError struct {
	off int64
	msg string
}

// checkLayout rejects launches whose buffers overlap (two launches would
// read the same bytes as different warps). Version 3 lays the launches out
// in order, back to back from the end of the metadata, and nothing else.
func checkLayout(ls []LaunchMeta, dataStart int64, contiguous bool) *layoutError {
	if contiguous {
		off := dataStart
		for i := range ls {
			if ls[i].Offset != off {
				return &layoutError{ls[i].Offset, fmt.Sprintf("launch %d (%s) at offset %d, want %d (a version 3 capture holds its launches' buffers in order, back to back)", i, ls[i].Kernel, ls[i].Offset, off)}
			}
			off += ls[i].Size()
		}
		return nil
	}
	idx := make([]int, len(ls))
	for i := range idx {
		idx[i] = i
	}
	slices.SortFunc(idx, func(a, b int) int { return cmp.Compare(ls[a].Offset, ls[b].Offset) })
	for k := 1; k < len(idx); k++ {
		a, b := &ls[idx[k-1]], &ls[idx[k]]
		if b.Offset < a.Offset+a.Size() && b.Size() > 0 && a.Size() > 0 {
			return &layoutError{b.Offset, fmt.Sprintf("launch %d (%s) at offset %d overlaps launch %d (%s), which runs to offset %d",
				idx[k], b.Kernel, b.Offset, idx[k-1], a.Kernel, a.Offset+a.Size())}
		}
	}
	return nil
}

// FileVersion returns the capture's file layout version (1 to [FileVersion]).
func (c *Capture) FileVersion() int { return c.fileVersion }

// Checked reports whether the capture carries checksums, all of which
// matched when it was opened (file version 3 on). Older captures are
// unchecked: corruption of their buffers shows only as malformed records.
func (c *Capture) Checked() bool { return c.fileVersion >= 3 }

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

// WriteCapture writes a capture of file version [FileVersion]: meta (whose
// launches' Offset fields it fills in) followed by each launch's buffers,
// read from bufs[i], which must hold exactly Size() bytes, and the checksum
// table. Meta.Version is the buffers' record format version; 0 means the
// format this iket's iket.cuh writes (docs/FORMAT.md section 4), and is set
// so. It is the only writer of captures.
func WriteCapture(w io.Writer, meta *Meta, bufs []io.Reader) error {
	if len(bufs) != len(meta.Launches) {
		return fmt.Errorf("write capture: %d buffers for %d launches", len(bufs), len(meta.Launches))
	}
	if meta.Version == 0 {
		meta.Version = raw.FormatVersion
	}
	if meta.Version < raw.MinFormatVersion || meta.Version > raw.FormatVersion {
		return fmt.Errorf("write capture: format version %d, this iket writes versions %d to %d", meta.Version, raw.MinFormatVersion, raw.FormatVersion)
	}
	for i := range meta.Launches {
		l := meta.Launches[i]
		l.Offset = 0 // set below
		if err := l.validate(i); err != nil {
			return fmt.Errorf("write capture: %w", err)
		}
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
	if len(mb) > maxMetaSize {
		return fmt.Errorf("write capture: metadata of %d bytes exceeds the %d-byte limit", len(mb), maxMetaSize)
	}
	var warps uint64
	for i := range meta.Launches {
		warps += meta.Launches[i].Warps
	}
	sums := make([]uint32, 0, 2+warps)
	var h [fileHeaderSize]byte
	copy(h[:], Magic)
	binary.LittleEndian.PutUint32(h[8:], FileVersion)
	binary.LittleEndian.PutUint32(h[12:], uint32(meta.Version))
	binary.LittleEndian.PutUint64(h[16:], uint64(len(mb)))
	sums = append(sums, crc32.Checksum(h[:], castagnoli))
	if _, err := w.Write(h[:]); err != nil {
		return fmt.Errorf("write capture: %w", err)
	}
	mb = append(mb, make([]byte, align8(int64(len(mb)))-int64(len(mb)))...)
	sums = append(sums, crc32.Checksum(mb, castagnoli))
	if _, err := w.Write(mb); err != nil {
		return fmt.Errorf("write capture: %w", err)
	}
	buf := make([]byte, 1<<20)
	for i, b := range bufs {
		l := &meta.Launches[i]
		var err error
		if sums, err = copyWarps(w, b, l.Warps, l.Stride(), buf, sums); err != nil {
			return fmt.Errorf("write capture: launch %d buffers: %w", i, err)
		}
		var one [1]byte
		if n, _ := b.Read(one[:]); n > 0 {
			return fmt.Errorf("write capture: launch %d buffers: more than the %d bytes of %d warps", i, l.Size(), l.Warps)
		}
	}
	if _, err := w.Write(encodeTable(sums)); err != nil {
		return fmt.Errorf("write capture: %w", err)
	}
	return nil
}
